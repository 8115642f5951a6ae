"""Zero-copy migration: a target that publishes the source's own data files as they are.

A migration *in place* (``target_uri == source_uri``) writes the target format's metadata
beside the source's, over the same data files, as Apache XTable does. A target format that
declares ``adopt_files`` lists a source unit's file in its own metadata without writing data
(``Transaction.adopt_files``) when the unit can be read as that file alone:

- it is one Parquet file (``data_files`` is the file alone: no Hudi log files, no Lance
  column files) under the table root;
- it has no row-level deletes (a deletion vector or deletion file would be lost);
- the file stores every target column it holds with the target's type, under its name (a
  column-mapped Delta file names its columns by physical names), and a partition column it
  holds with the unit's partition value (readers of the target take one or the other);
- the target format accepts its place (``adoption_refusal``: a Hudi table takes partition
  values from the directory, so the file must lie in the directory of its values).

A target format may describe the table it adopts files into: ``adoption_properties`` (its
creation properties, e.g. Hudi's metadata table without meta fields), ``adoption_rewrites``
(False: such a table takes no rewritten files, so ``mode="auto"`` refuses what it cannot
adopt, like ``"metadata"``, before anything is written), ``adoption_refusal(path,
partition, partition_by, schema)`` (why it cannot adopt one file).

Columns the source format fills itself (Hudi's ``_hoodie_*``) stay in the file; the target's
schema does not have them, so its readers skip them. ``mode="metadata"`` refuses a unit that
cannot be adopted (``MigrationError`` naming its file) before the target is created or
changed; ``mode="auto"`` rewrites it as the target's own files. Only format-neutral facts of
the file index and the Parquet footer are used here (``lakecore.migrate.footer_check`` reads
what the footer says). Footers are read through the source snapshot's ``Footers`` memo when
it keeps one (``snapshot_footers``): a file index that took its statistics from the footers
has read them already, and each is read once per run either way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import AmbiguousFormatError, MigrationError
from lakecore.format import Capability, TableFormat
from lakecore.migrate import state as st
from lakecore.migrate.footer_check import footer_refusal
from lakecore.migrate.units import UnitDiff
from lakecore.model import files as fi
from lakecore.model.footers import Footers
from lakecore.snapshot import Snapshot
from lakecore.storage import Storage
from lakecore.table import Table

ADD_COLUMNS = fi.FILE_COLUMNS
"""The file-index columns an adopted file is published with (the write layout)."""
MAX_NAMED = 3
"""Files a refusal names (the count of the others follows)."""


def open_source(
    uri: str, to: str, source_format: str | None, storage_options: Mapping[str, Any] | None
) -> Table:
    """Open the migration source; at a root that holds the source and an earlier in-place
    target of format ``to`` (``AmbiguousFormatError``), the source is the other format.

    Raises ``MigrationError`` when that leaves more than one candidate (pass
    ``source_format``).
    """
    import lakecore

    try:
        return lakecore.open(uri, format=source_format, storage_options=storage_options)
    except AmbiguousFormatError as exc:
        others = [c for c in exc.candidates if c != to]
        if len(others) != 1:
            raise MigrationError(
                f"{uri} holds tables of {', '.join(exc.candidates)}: pass source_format"
            ) from exc
        return lakecore.open(uri, format=others[0], storage_options=storage_options)


def snapshot_footers(snapshot: Snapshot) -> Footers | None:
    """The memo of Parquet footers ``snapshot``'s source has read, when it keeps one (its
    ``footers`` attribute, e.g. a Hudi snapshot whose file index read its base files')."""
    memo = getattr(snapshot.source, "footers", None)
    return memo if isinstance(memo, Footers) else None


def plan(mode: str, source: Table, target: TableFormat, in_place: bool) -> Adoption | None:
    """How a run treats source units: ``None`` rewrites every unit (another location,
    ``mode`` "auto" or "rewrite"); an ``Adoption`` adopts what it can.

    Raises ``MigrationError``, before anything is read or written, for ``mode="metadata"``
    to another location (zero-copy keeps the files where they are), ``mode="rewrite"`` in
    place (it would copy every row into the source's own root), a target of the source's own
    format, and a target format without ``adopt_files`` (with the format's reason, when it
    gives one in ``capability_notes``).
    """
    if not in_place:
        if mode == "metadata":
            raise MigrationError(
                "mode='metadata' adopts the source's data files where they are: migrate in "
                "place (target_uri == source_uri), or use mode='rewrite'/'auto' to write the "
                "target's own files at another location"
            )
        return None
    if mode == "rewrite":
        raise MigrationError(
            "a migration in place writes only the target's metadata beside the source's; "
            "mode='rewrite' would copy every row into the source's own location: use "
            "mode='metadata' or 'auto', or migrate to another location"
        )
    if target.name == source.format:
        raise MigrationError(f"{source.uri} already is a {target.name} table")
    if Capability.ADOPT_FILES not in target.capabilities:
        notes: Mapping[Capability, str] = getattr(target, "capability_notes", {})
        reason = notes.get(Capability.ADOPT_FILES)
        raise MigrationError(
            f"{target.name} tables cannot adopt another format's data files (capability "
            f"'adopt_files' is not declared by the {target.name} format"
            + (f": {reason}" if reason else "")
            + "), so a migration in place into one is not possible: migrate to another "
            "location (mode='rewrite')"
        )
    refusal: Refusal | None = getattr(target, "adoption_refusal", None)
    held: HeldRefusal | None = getattr(target, "held_refusal", None)
    table: TableRefusal | None = getattr(target, "adoption_table_refusal", None)
    return Adoption(
        mode,
        source.storage,
        target.name,
        bool(getattr(target, "adoption_rewrites", True)),
        dict(getattr(target, "adoption_properties", {})),
        refusal,
        held,
        table,
    )


Refusal = Callable[[str, Mapping[str, Any], Sequence[str], pa.Schema], "str | None"]
"""A target format's ``adoption_refusal(path, partition values, partition_by, schema)``."""
TableRefusal = Callable[[Mapping[str, str], pa.Schema, Sequence[str]], "str | None"]
"""A target format's ``adoption_table_refusal(properties, schema, partition_by)``: why a
target created so cannot adopt the source's files (checked before it is created)."""
HeldRefusal = Callable[[str, Snapshot], "str | None"]
"""A target format's ``held_refusal(path, target snapshot)``: why a target table as it is
now cannot adopt the file at ``path`` (e.g. Hudi: the file was adopted before and removed,
and its file group stays replaced)."""


@dataclass(frozen=True, slots=True)
class Adoption:
    """Which source units a run in place adopts, and the refusals of ``mode="metadata"``
    (and of ``mode="auto"`` into a target that takes no rewritten files)."""

    mode: str
    storage: Storage
    """The source's storage (the target's root too)."""
    target: str = ""
    """The target format's name (for messages)."""
    rewrites: bool = True
    """Whether the target table also takes rewritten units (``adoption_rewrites``)."""
    properties: Mapping[str, str] = field(default_factory=dict)
    """The target format's ``adoption_properties``: creation properties of the target."""
    target_refusal: Refusal | None = None
    """The target format's ``adoption_refusal``, if it has one."""
    held_refusal: HeldRefusal | None = None
    """The target format's ``held_refusal``, if it has one (not cached: the table moves)."""
    table_refusal: TableRefusal | None = None
    """The target format's ``adoption_table_refusal``, if it has one."""
    _footers: dict[tuple[str, str, int], str | None] = field(default_factory=dict)
    """What the footer of each (path, partition values, schema hash) examined says against
    adopting it (None: nothing); footers are read once per run. Only the footer is cached:
    a later version may give the same path deletes (a deletion vector) or other files."""
    _own_footers: list[Footers] = field(default_factory=list)
    """The footers this run read itself (a source snapshot that keeps none): one ``Footers``."""

    def check(
        self,
        units: pa.Table,
        schema: pa.Schema,
        partitions: Sequence[str],
        target: Snapshot | None = None,
        footers: Footers | None = None,
    ) -> None:
        """In ``mode="metadata"`` (or ``"auto"`` into a target that takes no rewritten
        files), raise ``MigrationError`` naming the files of ``units`` (file-index rows)
        that cannot be adopted under the target ``schema`` (into the ``target`` table as it
        is, when it exists). Footers are read through ``footers`` (the source snapshot's,
        ``snapshot_footers``) when given."""
        if self.mode != "metadata" and self.rewrites:
            return
        refused = [
            (path, reason)
            for path, reason in zip(
                units.column(fi.PATH).to_pylist(),
                self._examine(units, schema, partitions, target, footers),
                strict=True,
            )
            if reason is not None
        ]
        if refused:
            named = "; ".join(f"{path}: {reason}" for path, reason in refused[:MAX_NAMED])
            more = f" (and {len(refused) - MAX_NAMED} more)" if len(refused) > MAX_NAMED else ""
            if self.rewrites:
                advice = "Use mode='auto' to rewrite them as the target's own files"
            else:
                advice = (
                    f"A {self.target} table that adopts another format's files takes no "
                    "rewritten ones, so mode='auto' cannot rewrite them either: migrate to "
                    "another location (mode='rewrite'), or first rewrite those files in the "
                    "source (Table.optimize() rewrites the files that have row-level deletes)"
                )
            raise MigrationError(
                f"{len(refused)} source file(s) cannot be adopted as they are: {named}{more}. "
                f"{advice}. Nothing was written"
            )

    def check_table(
        self, properties: Mapping[str, str], schema: pa.Schema, partitions: Sequence[str]
    ) -> None:
        """Raise ``MigrationError`` when a target created with ``properties`` (the adoption
        properties under ``target_properties``), ``schema`` and ``partitions`` could not
        adopt the source's files; called before the target is created."""
        if self.table_refusal is None:
            return
        reason = self.table_refusal(properties, schema, partitions)
        if reason is not None:
            raise MigrationError(
                f"a {self.target} table cannot adopt the source's files in place: {reason}. "
                "Nothing was written"
            )

    def split(
        self,
        units: UnitDiff,
        schema: pa.Schema,
        partitions: Sequence[str],
        target: Snapshot | None = None,
        footers: Footers | None = None,
    ) -> tuple[UnitDiff, pa.Table, pa.Array]:
        """``units`` as (the units to rewrite, the index rows to adopt, their fingerprints);
        ``MigrationError`` in ``mode="metadata"`` when some unit cannot be adopted."""
        self.check(units.added, schema, partitions, target, footers)
        reasons = self._examine(units.added, schema, partitions, target, footers)
        take = pa.array([r is None for r in reasons], pa.bool_())
        keep = pc.invert(take)
        rest = UnitDiff(units.added.filter(keep), units.added_keys.filter(keep), units.gone)
        return rest, units.added.filter(take), units.added_keys.filter(take)

    def _examine(
        self,
        units: pa.Table,
        schema: pa.Schema,
        partitions: Sequence[str],
        target: Snapshot | None = None,
        footers: Footers | None = None,
    ) -> list[str | None]:
        if footers is None:
            if not self._own_footers:
                self._own_footers.append(Footers(self.storage))
            footers = self._own_footers[0]
        columns = units.column_names
        paths = units.column(fi.PATH).to_pylist()
        lists = units.column(fi.DATA_FILES).to_pylist() if fi.DATA_FILES in columns else None
        deletes = units.column(fi.DELETION).to_pylist() if fi.DELETION in columns else None
        values = units.column(fi.PARTITION).to_pylist() if fi.PARTITION in columns else None
        # The footers the checks below will read, read a few at once first (an object store
        # answers each read after a round trip); the same cheap tests as ``_reason``'s.
        footers.prefetch(
            p
            for i, p in enumerate(paths)
            if p.lower().endswith(".parquet")
            and (lists is None or not lists[i] or list(lists[i]) == [p])
            and (deletes is None or deletes[i] is None)
        )
        out: list[str | None] = []
        for i, path in enumerate(paths):
            reason = self._reason(
                path,
                lists[i] if lists is not None else None,
                deletes[i] if deletes is not None else None,
                (values[i] or {}) if values is not None else {},
                schema,
                partitions,
                footers,
            )
            if reason is None and target is not None and self.held_refusal is not None:
                reason = self.held_refusal(path, target)
            out.append(reason)
        return out

    def _reason(
        self,
        path: str,
        data_files: list[str] | None,
        deletion: Mapping[str, Any] | None,
        partition: Mapping[str, Any],
        schema: pa.Schema,
        partitions: Sequence[str],
        footers: Footers,
    ) -> str | None:
        parts = path.split("/")
        if "://" in path or path.startswith("/") or ".." in parts:
            return "it lies outside the table root"
        if data_files and list(data_files) != [path]:
            return (
                f"its rows are read from {len(data_files)} files ({', '.join(data_files[1:3])}"
                f"{'...' if len(data_files) > 3 else ''} besides it: log or column files)"
            )
        if deletion is not None:
            return (
                f"it has row-level deletes ({deletion.get(fi.CARDINALITY)} rows) that the "
                "target would not see"
            )
        if not path.lower().endswith(".parquet"):
            return "it is not a Parquet file"
        if self.target_refusal is not None:
            reason = self.target_refusal(path, partition, partitions, schema)
            if reason is not None:
                return reason
        key = (path, repr(sorted(partition.items())), hash(schema))
        if key not in self._footers:
            self._footers[key] = footer_refusal(
                self.storage, footers, path, partition, schema, partitions
            )
        return self._footers[key]


def add_rows(units: pa.Table) -> pa.Table:
    """The adopted units as the rows ``Transaction.adopt_files`` publishes."""
    return units.select([c for c in ADD_COLUMNS if c in units.column_names])


def unit_rows(keys: pa.Array, units: pa.Table) -> pa.Table:
    """Unit-map rows of adopted units: the target file of each is the source's own."""
    return pa.table(
        {
            "fingerprint": keys.cast(pa.binary()),
            "target_path": units.column(fi.PATH).cast(pa.string()),
        },
        schema=st.UNIT_MAP_SCHEMA,
    )
