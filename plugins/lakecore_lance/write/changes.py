"""What a Lance write stages, how a transaction's changes become one Lance ``Transaction``,
and how a transaction is applied to a manifest (the base's, or a concurrent winner's).

A ``LanceChange`` is the payload of the ``FormatPayload`` actions the Lance writer returns:
new fragments (ids unassigned), fragments with a new deletion file, fragments removed, and
the files the change wrote. The changes of one lakecore transaction combine into one Lance
operation: only new fragments -> ``Append``; no new fragments -> ``Delete``; both ->
``Update``; a whole-table overwrite -> ``Overwrite``. A ``replace`` (``replace_files``:
fragments removed whole, new ones added) is always an ``Update`` with
``removed_fragment_ids`` + ``new_fragments``, as pylance commits one: Lance's conflict
resolver rebases it past appends and refuses it after a delete, update or compaction of a
removed fragment (a ``Rewrite`` would promise the same rows, which a replace does not).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lakecore import __version__
from lakecore.errors import CommitConflictError, UnsupportedFeatureError
from lakecore.model.actions import Action, FormatPayload
from lakecore_lance import features
from lakecore_lance.proto import file_pb2, table_pb2, transaction_pb2

FORMAT = "lance"
ALONE = ("restore", "rewrite", "add_columns", "project")
"""Operations that must be the only change of their commit."""
WRITABLE_WRITER_FLAGS = features.DELETION_FILES | features.TABLE_CONFIG
"""Writer feature flags a lakecore commit keeps valid: deletion files (it writes them as
Lance does) and the table config (copied unchanged)."""


@dataclass(frozen=True, slots=True)
class LanceChange:
    """One staged Lance write (see the module docstring); serialized protos keep it frozen."""

    operation: str
    """``append``, ``delete``, ``update``, ``replace`` (``replace_files``), ``overwrite``
    (the whole table), ``restore``, ``rewrite``, ``add_columns`` or ``project``."""
    new_fragments: tuple[bytes, ...] = ()
    updated_fragments: tuple[bytes, ...] = ()
    removed_fragment_ids: tuple[int, ...] = ()
    written: tuple[str, ...] = ()
    """Files this change wrote (data and deletion files, relative to the root)."""
    predicate: str | None = None
    restored: bytes = b""
    """``restore``: the serialized manifest of the version restored."""
    schema: bytes = b""
    """``add_columns`` / ``project``: the new field list (a serialized ``file.Schema``)."""
    keyed: bool = False
    """A merge or upsert: its inserts depend on which keys exist, so rows added concurrently
    conflict with it."""
    groups: tuple[tuple[tuple[int, ...], int], ...] = ()
    """``rewrite`` (compaction): per group, the old fragment ids and how many of
    ``new_fragments`` (in order) replace them."""


@dataclass(frozen=True, slots=True)
class Combined:
    """The changes of one transaction as one Lance operation."""

    operation: str
    new: tuple[table_pb2.DataFragment, ...]
    updated: dict[int, table_pb2.DataFragment]
    removed: frozenset[int]
    predicate: str | None
    restored: table_pb2.Manifest | None = None
    groups: tuple[tuple[tuple[int, ...], int], ...] = ()
    fields: tuple[file_pb2.Field, ...] | None = None
    """``add_columns`` / ``project``: the new field list."""
    keyed: bool = False
    """Some change is a merge (see ``LanceChange.keyed``)."""

    @property
    def touched(self) -> frozenset[int]:
        """Fragments of the base this transaction changes or removes."""
        return self.removed | frozenset(self.updated)


def changes_of(actions: Sequence[Action]) -> list[LanceChange]:
    """The ``LanceChange`` payloads of ``actions``; ``UnsupportedFeatureError`` for any other
    action (Lance commits only what its writer staged)."""
    out = []
    for a in actions:
        if isinstance(a, FormatPayload) and isinstance(a.payload, LanceChange):
            out.append(a.payload)
        else:
            name = type(a).__name__
            raise UnsupportedFeatureError(
                f"lance-action-{name}", f"lakecore cannot commit {name} to a Lance dataset"
            )
    return out


def _fragment(raw: bytes) -> table_pb2.DataFragment:
    f = table_pb2.DataFragment()
    f.ParseFromString(raw)
    return f


def combine(changes: Sequence[LanceChange]) -> Combined:
    """One operation for ``changes`` (in staging order).

    Raises ``UnsupportedFeatureError`` when two changes of the transaction change the same
    fragment (each was planned against the base, so the second would undo the first), or a
    whole-table overwrite is staged after another change or with deletes.
    """
    if not changes:
        raise ValueError("nothing to commit")
    alone = [c.operation for c in changes if c.operation in ALONE]
    if alone and len(changes) > 1:
        raise UnsupportedFeatureError(
            "lance:transaction-shape", f"a Lance {alone[0]} must be the only change of its commit"
        )
    if alone and alone[0] in ("add_columns", "project"):
        schema = file_pb2.Schema()
        schema.ParseFromString(changes[0].schema)
        fields = tuple(schema.fields)
        widened = {int(f.id): f for f in map(_fragment, changes[0].updated_fragments)}
        return Combined(alone[0], (), widened, frozenset(), None, fields=fields)
    if alone == ["rewrite"]:
        c = changes[0]
        rewritten = tuple(_fragment(raw) for raw in c.new_fragments)
        old = frozenset(c.removed_fragment_ids)
        return Combined("rewrite", rewritten, {}, old, None, None, c.groups)
    if alone == ["restore"]:
        target = table_pb2.Manifest()
        target.ParseFromString(changes[0].restored)
        return Combined("restore", (), {}, frozenset(), None, target)
    overwrite = any(c.operation == "overwrite" for c in changes)
    if overwrite and (
        changes[0].operation != "overwrite"
        or any(c.operation not in ("overwrite", "append") for c in changes)
        or sum(c.operation == "overwrite" for c in changes) > 1
    ):
        raise UnsupportedFeatureError(
            "lance:transaction-shape",
            "a Lance transaction with a whole-table overwrite may only append after it",
        )
    new: list[table_pb2.DataFragment] = []
    updated: dict[int, table_pb2.DataFragment] = {}
    removed: set[int] = set()
    predicates = []
    for c in changes:
        new.extend(_fragment(raw) for raw in c.new_fragments)
        for raw in c.updated_fragments:
            f = _fragment(raw)
            if f.id in updated or f.id in removed:
                raise _twice(f.id)
            updated[int(f.id)] = f
        for fid in c.removed_fragment_ids:
            if fid in updated or fid in removed:
                raise _twice(fid)
            removed.add(fid)
        if c.predicate:
            predicates.append(c.predicate)
    kinds = {c.operation for c in changes}
    if overwrite:
        operation = "overwrite"
    elif kinds == {"append"}:
        operation = "append"
    elif not new and kinds <= {"append", "delete"}:
        operation = "delete"
    else:
        operation = "update"
    predicate = " OR ".join(f"({p})" for p in predicates) if len(predicates) > 1 else None
    if len(predicates) == 1:
        predicate = predicates[0]
    keyed = any(c.keyed for c in changes)
    return Combined(operation, tuple(new), updated, frozenset(removed), predicate, keyed=keyed)


def _twice(fid: int) -> UnsupportedFeatureError:
    return UnsupportedFeatureError(
        "lance:transaction-shape",
        f"two operations of one transaction change fragment {fid}; commit them separately",
    )


def transaction(
    combined: Combined,
    read_version: int,
    base: table_pb2.Manifest,
    properties: Mapping[str, str] | None = None,
) -> bytes:
    """The ``_transactions/`` file of ``combined`` read at ``read_version`` (a new uuid).

    ``properties`` become the transaction's ``transaction_properties`` (field 4), where
    pylance's ``commit(..., transaction_properties=)`` and ``write_dataset(...,
    transaction_properties=)`` keep theirs."""
    txn = transaction_pb2.Transaction(read_version=read_version, uuid=str(uuid.uuid4()))
    for key, value in (properties or {}).items():
        txn.transaction_properties[key] = value
    op = combined.operation
    if op == "add_columns":
        assert combined.fields is not None
        txn.merge.fragments.extend(combined.updated.get(int(f.id), f) for f in base.fragments)
        txn.merge.schema.extend(combined.fields)
        for k, v in base.schema_metadata.items():
            txn.merge.schema_metadata[k] = v
    elif op == "project":
        assert combined.fields is not None
        txn.project.schema.extend(combined.fields)
    elif op == "rewrite":
        by_id = {int(f.id): f for f in base.fragments}
        start = 0
        for old_ids, count in combined.groups:
            group = txn.rewrite.groups.add()
            group.old_fragments.extend(by_id[i] for i in old_ids)
            group.new_fragments.extend(combined.new[start : start + count])
            start += count
    elif op == "restore":
        assert combined.restored is not None
        txn.restore.version = int(combined.restored.version)
    elif op == "append":
        txn.append.fragments.extend(combined.new)
    elif op == "delete":
        txn.delete.updated_fragments.extend(combined.updated.values())
        txn.delete.deleted_fragment_ids.extend(sorted(combined.removed))
        txn.delete.predicate = combined.predicate or ""
    elif op == "update":
        txn.update.removed_fragment_ids.extend(sorted(combined.removed))
        txn.update.updated_fragments.extend(combined.updated.values())
        txn.update.new_fragments.extend(combined.new)
    else:
        txn.overwrite.fragments.extend(combined.new)
        txn.overwrite.schema.extend(base.fields)
        for k, v in base.schema_metadata.items():
            txn.overwrite.schema_metadata[k] = v
    raw: bytes = txn.SerializeToString(deterministic=True)
    return raw


def txn_uuid(raw: bytes) -> str:
    txn = transaction_pb2.Transaction()
    txn.ParseFromString(raw)
    return txn.uuid


def apply(
    combined: Combined,
    current: table_pb2.Manifest,
    transaction_file: str,
    timestamp_ns: int | None = None,
) -> table_pb2.Manifest:
    """The manifest of the version after ``current`` with ``combined`` applied.

    New fragments take ids after ``current.max_fragment_id``; updated fragments replace
    theirs, removed ones are dropped. The manifest's ``timestamp`` is ``timestamp_ns`` (epoch
    nanoseconds; None: now). Raises ``CommitConflictError`` when a fragment this transaction
    changes is no longer in ``current``.
    """
    out = table_pb2.Manifest()
    out.CopyFrom(current if combined.restored is None else combined.restored)
    del out.fragments[:]
    if combined.restored is not None:
        kept = list(combined.restored.fragments)  # the restored version's content, as is
    elif combined.operation == "overwrite":
        kept = []
    else:
        kept = list(current.fragments)
    present = {int(f.id) for f in kept}
    missing = combined.touched - present
    if missing and combined.operation not in ("overwrite", "restore"):
        raise CommitConflictError(
            f"fragments {sorted(missing)} changed by this transaction are gone in version "
            f"{current.version}",
            winning_version=int(current.version),
        )
    # Manifests written before max_fragment_id existed (Lance < 0.20, e.g. the corpus'
    # index_no_details) lack it: the largest id in use then, as Lance computes it.
    largest = max(
        [int(f.id) for f in (*current.fragments, *kept)]
        + ([int(current.max_fragment_id)] if current.HasField("max_fragment_id") else []),
        default=-1,
    )
    next_id = largest + 1
    # Fragment ids are never reused, also past a restore of an older version.
    for f in kept:
        fid = int(f.id)
        if fid in combined.removed:
            continue
        out.fragments.append(combined.updated.get(fid, f))
    for f in combined.new:
        placed = out.fragments.add()
        placed.CopyFrom(f)
        placed.id = next_id
        next_id += 1
    if out.fragments or current.HasField("max_fragment_id"):
        top = max([int(f.id) for f in out.fragments], default=0)
        out.max_fragment_id = max(top, int(current.max_fragment_id), int(out.max_fragment_id))
    if combined.fields is not None:
        del out.fields[:]
        out.fields.extend(combined.fields)
    out.version = int(current.version) + 1
    now = time.time_ns() if timestamp_ns is None else int(timestamp_ns)
    out.timestamp.seconds, out.timestamp.nanos = divmod(now, 1_000_000_000)
    out.transaction_file = transaction_file
    out.tag = ""
    out.writer_version.Clear()
    out.writer_version.library = "lakecore"
    out.writer_version.version = __version__
    if any(f.HasField("deletion_file") for f in out.fragments):
        out.reader_feature_flags |= features.DELETION_FILES
        out.writer_feature_flags |= features.DELETION_FILES
    return out
