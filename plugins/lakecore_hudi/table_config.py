"""The Hudi table config: ``.hoodie/hoodie.properties`` read into typed accessors.

``hoodie.properties`` is a Java properties file (ISO-8859-1, parsed by
``lakecore_hudi.java_properties``). Hudi guards it with ``hoodie.table.checksum`` (CRC32 of
``"<database>.<table name>"``) and, while rewriting it, keeps a copy in
``hoodie.properties.backup``; a reader falls back to the backup when the main file is missing or
fails its checksum. ``TableConfig`` validates the required keys and the table version when it is
built; its accessors apply Hudi's defaults and alternative keys. Writing the file (a new table's
properties, rendering with the checksum) is ``lakecore_hudi.table_config_out``'s.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from lakecore.errors import CorruptTableError, TableNotFoundError, UnsupportedFeatureError
from lakecore.storage import Storage
from lakecore.storage.paths import contained_path
from lakecore_hudi.java_properties import parse_properties

META_DIR = ".hoodie"
PROPERTIES_PATH = f"{META_DIR}/hoodie.properties"
BACKUP_PROPERTIES_PATH = f"{META_DIR}/hoodie.properties.backup"

#: Table versions lakecore reads: 5 (Hudi 0.11-0.12), 6 (0.13-0.15), 8 (1.0), 9 (1.1).
#: 7 was only written by 1.0 betas, which Hudi itself requires to be upgraded.
SUPPORTED_TABLE_VERSIONS = frozenset({5, 6, 8, 9})

TableType = Literal["COPY_ON_WRITE", "MERGE_ON_READ"]
TABLE_TYPES: frozenset[str] = frozenset({"COPY_ON_WRITE", "MERGE_ON_READ"})

DEFAULT_PAYLOAD = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
OVERWRITE_PAYLOAD = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"

# Key generator class (simple name, "Avro" variants folded) -> hoodie.table.keygenerator.type.
_KEYGEN_TYPES = {
    "SimpleKeyGenerator": "SIMPLE",
    "ComplexKeyGenerator": "COMPLEX",
    "NonpartitionedKeyGenerator": "NON_PARTITION",
    "TimestampBasedKeyGenerator": "TIMESTAMP",
    "CustomKeyGenerator": "CUSTOM",
    "GlobalDeleteKeyGenerator": "GLOBAL_DELETE",
}


def _split_fields(value: str | None) -> tuple[str, ...]:
    if not value:
        return ()
    return tuple(part.strip() for part in value.split(",") if part.strip())


def _bool(value: str | None, default: bool) -> bool:
    if value is None or value.strip() == "":
        return default
    return value.strip().lower() == "true"


_DIR_NAME = re.compile(r"[A-Za-z0-9._\-]{1,255}(/[A-Za-z0-9._\-]{1,255})*")


@dataclass(frozen=True, slots=True)
class TableConfig:
    """The parsed ``hoodie.properties`` of one table.

    ``raw`` holds every property as read; the accessors apply Hudi's defaults and alternative
    keys. Construct it with ``read_table_config`` or ``TableConfig.from_properties`` (which
    validates the required keys).
    """

    raw: Mapping[str, str] = field(repr=False)
    table_name: str
    table_type: TableType
    table_version: int
    source_file: str = PROPERTIES_PATH

    @classmethod
    def from_properties(
        cls, props: Mapping[str, str], source: str = PROPERTIES_PATH
    ) -> TableConfig:
        """Validate ``props`` and build the config.

        Raises:
            CorruptTableError: a required key (``hoodie.table.name``, ``hoodie.table.type``) is
                missing, or the table type / version is malformed; the message names ``source``.
            UnsupportedFeatureError: the table version is one lakecore cannot read.
        """
        name = props.get("hoodie.table.name", "").strip()
        if not name:
            raise CorruptTableError(f"{source}: required property hoodie.table.name is missing")
        table_type = props.get("hoodie.table.type", "").strip().upper()
        if not table_type:
            raise CorruptTableError(f"{source}: required property hoodie.table.type is missing")
        if table_type not in TABLE_TYPES:
            raise CorruptTableError(
                f"{source}: hoodie.table.type={table_type!r} is neither COPY_ON_WRITE nor "
                "MERGE_ON_READ"
            )
        version = _parse_version(props, source)
        ensure_supported_version(version)
        return cls(dict(props), name, table_type, version, source)  # type: ignore[arg-type]

    def get(self, key: str, default: str | None = None) -> str | None:
        """Return property ``key`` as written, or ``default``."""
        return self.raw.get(key, default)

    @property
    def database_name(self) -> str | None:
        """``hoodie.database.name`` (part of the checksum), if set."""
        return self.raw.get("hoodie.database.name") or None

    @property
    def record_key_fields(self) -> tuple[str, ...]:
        """Record key columns; empty for key-less (append-only) tables."""
        return _split_fields(self.raw.get("hoodie.table.recordkey.fields"))

    @property
    def ordering_fields(self) -> tuple[str, ...]:
        """Ordering (precombine) columns: ``hoodie.table.ordering.fields`` (v9) or the
        ``hoodie.table.precombine.field`` of older versions."""
        return _split_fields(
            self.raw.get("hoodie.table.ordering.fields")
            or self.raw.get("hoodie.table.precombine.field")
        )

    @property
    def precombine_field(self) -> str | None:
        """The first ordering column, or None when records are merged by commit time."""
        fields = self.ordering_fields
        return fields[0] if fields else None

    @property
    def partition_fields_with_types(self) -> tuple[str, ...]:
        """``hoodie.table.partition.fields`` as written (v8+ custom keygen: ``field:TYPE``)."""
        return _split_fields(self.raw.get("hoodie.table.partition.fields"))

    @property
    def partition_fields(self) -> tuple[str, ...]:
        """Partition columns, with the custom key generator's ``:TYPE`` suffix removed."""
        return tuple(f.split(":", 1)[0] for f in self.partition_fields_with_types)

    @property
    def keygen_class(self) -> str | None:
        """``hoodie.table.keygenerator.class`` (table version 6 and below), if set."""
        return self.raw.get("hoodie.table.keygenerator.class") or None

    @property
    def keygen_type(self) -> str | None:
        """Key generator type (``SIMPLE``, ``COMPLEX``, ``NON_PARTITION``, ``TIMESTAMP``, ...).

        Taken from ``hoodie.table.keygenerator.type`` (v8+), else derived from the class name;
        None when neither is set or the class is a user class.
        """
        explicit = self.raw.get("hoodie.table.keygenerator.type")
        if explicit:
            return explicit.strip().upper()
        cls = self.keygen_class
        if cls is None:
            return None
        simple = cls.rsplit(".", 1)[-1].replace("AvroKeyGenerator", "KeyGenerator")
        return _KEYGEN_TYPES.get(simple)

    @property
    def hive_style_partitioning(self) -> bool:
        """Whether partition directories are ``col=value``."""
        return _bool(self.raw.get("hoodie.datasource.write.hive_style_partitioning"), False)

    @property
    def url_encode_partitions(self) -> bool:
        """Whether partition path values are URL-encoded."""
        return _bool(self.raw.get("hoodie.datasource.write.partitionpath.urlencode"), False)

    @property
    def populate_meta_fields(self) -> bool:
        """Whether rows carry the ``_hoodie_*`` meta columns (default true)."""
        return _bool(self.raw.get("hoodie.populate.meta.fields"), True)

    @property
    def drop_partition_columns(self) -> bool:
        """Whether partition columns are left out of the data files."""
        return _bool(self.raw.get("hoodie.datasource.write.drop.partition.columns"), False)

    @property
    def base_file_format(self) -> str:
        """``PARQUET`` (default), ``ORC``, ``HFILE`` or ``LANCE``."""
        value = self.raw.get("hoodie.table.base.file.format") or self.raw.get(
            "hoodie.table.ro.file.format"
        )
        return (value or "PARQUET").strip().upper()

    @property
    def log_file_format(self) -> str:
        """Log file format (``HOODIE_LOG`` by default)."""
        value = self.raw.get("hoodie.table.log.file.format") or self.raw.get(
            "hoodie.table.rt.file.format"
        )
        return (value or "HOODIE_LOG").strip().upper()

    @property
    def timeline_layout_version(self) -> int:
        """``hoodie.timeline.layout.version``; defaults to 2 for table version 8+, else 1."""
        value = self.raw.get("hoodie.timeline.layout.version")
        if value is None or not value.strip():
            return 2 if self.table_version >= 8 else 1
        try:
            return int(value.strip())
        except ValueError:
            raise CorruptTableError(
                f"{self.source_file}: hoodie.timeline.layout.version={value!r} is not an integer"
            ) from None

    @property
    def timeline_dir(self) -> str:
        """Directory of the active timeline: ``.hoodie/timeline`` for v8+, else ``.hoodie``.

        Raises:
            CorruptTableError: ``hoodie.timeline.path`` leads out of ``.hoodie``.
        """
        if self.table_version >= 8:
            return self._meta_dir(META_DIR, "hoodie.timeline.path", "timeline")
        return META_DIR

    @property
    def archive_dir(self) -> str:
        """Directory of archived instants: the LSM ``history`` dir for v8+, else ``archived``.

        Raises:
            CorruptTableError: the configured directory leads out of ``.hoodie``.
        """
        if self.table_version >= 8:
            return self._meta_dir(self.timeline_dir, "hoodie.timeline.history.path", "history")
        return self._meta_dir(META_DIR, "hoodie.archivelog.folder", "archived")

    def _meta_dir(self, parent: str, key: str, default: str) -> str:
        """``parent``/(the value of ``key``), which must stay inside ``.hoodie``: timelines
        are read (and archived ones rewritten) there, never outside the table."""
        value = self.raw.get(key) or default
        if not _DIR_NAME.fullmatch(value):
            # Hudi's own values are plain names ("timeline", "history", "archived"); anything
            # else (a schema swapped in, a very long name) is damage, not a place to list.
            raise CorruptTableError(f"{self.source_file}: {key}={value[:200]!r} is not a directory")
        try:
            path = contained_path(f"{parent}/{value}", "(the table root)", source=key)
        except CorruptTableError:
            path = ""
        if path != META_DIR and not path.startswith(f"{META_DIR}/"):
            raise CorruptTableError(f"{self.source_file}: {key}={value!r} leads out of {META_DIR}")
        return path

    @property
    def create_schema(self) -> str | None:
        """The Avro schema JSON the table was created with, if recorded."""
        return self.raw.get("hoodie.table.create.schema") or None

    @property
    def record_merge_mode(self) -> str | None:
        """``hoodie.record.merge.mode`` (v8+), else inferred as Hudi does from ordering fields.

        Tables of version 6 and below record only a payload class; their mode is inferred:
        EVENT_TIME_ORDERING when there is an ordering field and the payload is not
        OverwriteWithLatestAvroPayload, else COMMIT_TIME_ORDERING.
        """
        explicit = self.raw.get("hoodie.record.merge.mode")
        if explicit:
            return explicit.strip().upper()
        if self.payload_class and self.payload_class not in (DEFAULT_PAYLOAD, OVERWRITE_PAYLOAD):
            return "CUSTOM"
        if self.precombine_field and self.payload_class != OVERWRITE_PAYLOAD:
            return "EVENT_TIME_ORDERING"
        return "COMMIT_TIME_ORDERING"

    @property
    def record_merge_strategy_id(self) -> str | None:
        """``hoodie.record.merge.strategy.id`` (or its 0.x name), if set."""
        return self.raw.get("hoodie.record.merge.strategy.id") or self.raw.get(
            "hoodie.compaction.record.merger.strategy"
        )

    @property
    def payload_class(self) -> str | None:
        """The payload class (``hoodie.compaction.payload.class``, or v9's legacy key)."""
        return (
            self.raw.get("hoodie.compaction.payload.class")
            or self.raw.get("hoodie.table.legacy.payload.class")
            or None
        )

    @property
    def metadata_partitions(self) -> tuple[str, ...]:
        """Completed metadata-table partitions (``files``, ``column_stats``, ...)."""
        return _split_fields(self.raw.get("hoodie.table.metadata.partitions"))

    @property
    def metadata_partitions_inflight(self) -> tuple[str, ...]:
        """Metadata-table partitions still being built (must not be read)."""
        return _split_fields(self.raw.get("hoodie.table.metadata.partitions.inflight"))

    @property
    def timeline_timezone(self) -> str:
        """``LOCAL`` (Hudi's default) or ``UTC``: the zone instant times are written in."""
        return (self.raw.get("hoodie.table.timeline.timezone") or "LOCAL").strip().upper()

    @property
    def is_partitioned(self) -> bool:
        """Whether the table has partition columns."""
        return bool(self.partition_fields)


def _parse_version(props: Mapping[str, str], source: str) -> int:
    raw = props.get("hoodie.table.version")
    if raw is None or not raw.strip():
        # Hudi 0.x before table versions were recorded wrote none; those are version 0-1
        # tables that lakecore does not read either way.
        raise UnsupportedFeatureError(
            "hudi-table-version-unknown",
            f"{source} has no hoodie.table.version; tables written before Hudi 0.11 "
            "(version < 5) are not supported; upgrade the table with Hudi first",
        )
    try:
        return int(raw.strip())
    except ValueError:
        raise CorruptTableError(
            f"{source}: hoodie.table.version={raw!r} is not an integer"
        ) from None


def ensure_supported_version(version: int) -> None:
    """Raise UnsupportedFeatureError unless lakecore can read Hudi table version ``version``."""
    if version in SUPPORTED_TABLE_VERSIONS:
        return
    if version > max(SUPPORTED_TABLE_VERSIONS):
        hint = "it was written by a newer Hudi than lakecore supports (up to version 9, Hudi 1.1)"
    elif version == 7:
        hint = "version 7 was only written by Hudi 1.0 betas; upgrade it to 8 with Hudi 1.0"
    else:
        hint = "upgrade it with Hudi 0.14+ (table version 6) first"
    raise UnsupportedFeatureError(
        f"hudi-table-version-{version}", f"Hudi table version {version} is not supported: {hint}"
    )


def table_checksum(props: Mapping[str, str]) -> int:
    """Hudi's ``hoodie.table.checksum``: CRC32 of ``"<database or ''>.<table name>"`` (UTF-8).

    Raises:
        KeyError: ``hoodie.table.name`` is missing.
    """
    name = props["hoodie.table.name"]
    database = props.get("hoodie.database.name", "")
    return zlib.crc32(f"{database}.{name}".encode())


def _checksum_ok(props: Mapping[str, str]) -> bool:
    written = props.get("hoodie.table.checksum")
    if written is None:
        return True  # tables from before checksums were introduced carry none
    if "hoodie.table.name" not in props:
        return False
    try:
        return int(written.strip()) == table_checksum(props)
    except ValueError:
        return False


def _load(storage: Storage, path: str) -> dict[str, str] | None:
    """Return the parsed properties at ``path``; None if absent; raises on undecodable text."""
    try:
        data = storage.read(path)
    except FileNotFoundError:
        return None
    try:
        return parse_properties(data.decode("latin-1"))
    except ValueError as exc:
        raise CorruptTableError(f"{path}: not a valid properties file: {exc}") from None


def read_table_config(storage: Storage) -> TableConfig:
    """Read ``.hoodie/hoodie.properties`` of the table at ``storage``'s root.

    Falls back to ``hoodie.properties.backup`` (as Hudi does while rewriting the config) when the
    main file is missing, unparseable or fails its checksum.

    Raises:
        TableNotFoundError: neither file exists.
        CorruptTableError: the file cannot be parsed, fails its checksum with no usable backup,
            lacks a required key or holds a malformed value; the message names the file.
        UnsupportedFeatureError: the table version is not readable by lakecore.
    """
    problem: CorruptTableError | None = None
    try:
        main = _load(storage, PROPERTIES_PATH)
    except CorruptTableError as exc:
        main, problem = None, exc
    if main is not None and _checksum_ok(main):
        return TableConfig.from_properties(main, PROPERTIES_PATH)
    if main is not None:
        problem = CorruptTableError(
            f"{PROPERTIES_PATH}: hoodie.table.checksum={main.get('hoodie.table.checksum')} does "
            "not match the table name; the file is damaged or was edited by hand"
        )
    backup = _load(storage, BACKUP_PROPERTIES_PATH)
    if backup is not None and _checksum_ok(backup):
        return TableConfig.from_properties(backup, BACKUP_PROPERTIES_PATH)
    if problem is not None:
        raise problem
    if backup is not None:
        raise CorruptTableError(
            f"{BACKUP_PROPERTIES_PATH}: checksum does not match and {PROPERTIES_PATH} is missing"
        )
    raise TableNotFoundError(f"no Hudi table at {storage.root}: {PROPERTIES_PATH} does not exist")
