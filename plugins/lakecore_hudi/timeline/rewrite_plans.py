"""Plans of the table services that rewrite file slices: compaction and clustering.

``CompactionPlan`` (``HoodieCompactionPlan``, a requested compaction or log compaction) and
``ClusteringPlan`` (``HoodieRequestedReplaceMetadata``, a requested replacecommit or
clustering) name the file slices they rewrite as ``FileSliceRef``s, with paths as the plan
writes them. Both are Avro containers for every table version; empty content decodes to an
empty plan, malformed content raises ``CorruptTableError`` naming the file. lakecore writes
only the plan-less requested replacecommit of an insert overwrite.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from lakecore.errors import CorruptTableError
from lakecore_hudi.timeline import avro_schemas
from lakecore_hudi.timeline.payload import decode_payload, encode_avro, opt_str, str_map, str_tuple


@dataclass(frozen=True, slots=True)
class FileSliceRef:
    """A file slice named by a compaction or clustering plan (paths as the plan writes them)."""

    file_id: str
    partition_path: str
    base_file: str | None
    log_files: tuple[str, ...] = ()
    base_instant_time: str | None = None


@dataclass(frozen=True, slots=True)
class CompactionPlan:
    """``HoodieCompactionPlan``: the slices a (log) compaction merges, one per operation."""

    operations: tuple[FileSliceRef, ...] = ()
    extra_metadata: Mapping[str, str] = field(default_factory=dict)


def parse_compaction_plan(data: bytes, path: str) -> CompactionPlan:
    """Decode a requested compaction / logcompaction plan; empty gives an empty plan.

    Raises:
        CorruptTableError: undecodable or malformed content; names ``path``.
    """
    raw = decode_payload(data, path)
    if raw is None:
        return CompactionPlan()
    try:
        ops = tuple(
            FileSliceRef(
                file_id=str(op.get("fileId") or ""),
                partition_path=str(op.get("partitionPath") or ""),
                base_file=opt_str(op.get("dataFilePath")) or None,
                log_files=str_tuple(op.get("deltaFilePaths")),
                base_instant_time=opt_str(op.get("baseInstantTime")),
            )
            for op in raw.get("operations") or ()
        )
        return CompactionPlan(ops, str_map(raw.get("extraMetadata")))
    except (AttributeError, TypeError, ValueError) as exc:
        raise CorruptTableError(f"{path}: malformed compaction plan: {exc}") from None


@dataclass(frozen=True, slots=True)
class ClusteringPlan:
    """``HoodieRequestedReplaceMetadata``: a requested replacecommit / clustering.

    ``input_groups`` holds, per clustering group, the slices it rewrites (empty for a plain
    insert-overwrite request, whose plan is null).
    """

    operation_type: str | None = None
    input_groups: tuple[tuple[FileSliceRef, ...], ...] = ()
    extra_metadata: Mapping[str, str] = field(default_factory=dict)

    def file_groups(self) -> Iterator[tuple[str, str]]:
        """(partition path, file id) of every file group in the plan."""
        for group in self.input_groups:
            for ref in group:
                yield ref.partition_path, ref.file_id


def parse_clustering_plan(data: bytes, path: str) -> ClusteringPlan:
    """Decode a requested replacecommit / clustering; empty gives an empty plan.

    Raises:
        CorruptTableError: undecodable or malformed content; names ``path``.
    """
    raw = decode_payload(data, path)
    if raw is None:
        return ClusteringPlan()
    try:
        plan = raw.get("clusteringPlan") or {}
        groups = tuple(
            tuple(
                FileSliceRef(
                    file_id=str(s.get("fileId") or ""),
                    partition_path=str(s.get("partitionPath") or ""),
                    base_file=opt_str(s.get("dataFilePath")) or None,
                    log_files=str_tuple(s.get("deltaFilePaths")),
                )
                for s in group.get("slices") or ()
            )
            for group in plan.get("inputGroups") or ()
        )
        return ClusteringPlan(
            opt_str(raw.get("operationType")), groups, str_map(raw.get("extraMetadata"))
        )
    except (AttributeError, TypeError, ValueError) as exc:
        raise CorruptTableError(f"{path}: malformed clustering plan: {exc}") from None


def encode_requested_replace(operation_type: str | None) -> bytes:
    """A ``.replacecommit.requested`` without a clustering plan (insert overwrite), as Hudi
    writes it for every table version (Avro container)."""
    record = {
        "operationType": operation_type,
        "clusteringPlan": None,
        "extraMetadata": None,
        "version": 1,
    }
    return encode_avro(avro_schemas.REQUESTED_REPLACE_METADATA, record)
