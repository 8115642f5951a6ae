"""LanceCommitter: Lance's side of the core's commit loop (see ``lakecore.format.committer``).

prepare = the transaction file (``_transactions/{read_version}-{uuid}.txn``) and the next
manifest; commit = write the transaction file (once), then ``put_if_absent`` of the next
manifest under the dataset's naming (V2 for datasets lakecore creates): ``Conflict(winner)``
when another writer took the version; rebase = read the winner's transaction and re-apply
this one on the winner's manifest when compatible (Lance's conflict resolver, narrowed to
what lakecore writes), else ``CommitConflictError`` naming the winner; abort = delete the
data files, deletion files and transaction file this transaction wrote.

Compatibility with a winner (anything else conflicts):

- append: after an append, delete or update (fragments are only added);
- delete / update / replace_files (fragments ``T`` changed or removed): after an append, or
  a delete, update or compaction (``rewrite``) touching none of ``T``;
- whole-table overwrite, restore: never (they replace every row the winner changed);
- schema change (added, dropped, renamed columns): never;
- merge / upsert: as a delete/update, and never after a commit that added rows (their keys
  could match this merge's inserts: both would land, duplicating the key);
- any commit whose ``CommitInfo.read_whole_table`` is set (an exclusive
  ``Transaction.replace_files``): never;
- any: the winner changed the schema, changed the dataset's indices (created, dropped,
  optimized or remapped one: its index section differs) or used a writer feature lakecore
  does not keep valid -> conflict.

Commit metadata: ``CommitInfo.app_metadata`` becomes the transaction's
``transaction_properties`` (keys starting ``__lance_`` are Lance's: ``InvalidArgumentError``),
and ``CommitInfo.timestamp_ms`` the manifest's ``timestamp``, which must be later than the
version it follows (``CommitError``; after a rebase, ``CommitConflictError`` naming the
winner).

Indices: the next manifest carries the current one's index section unchanged (a restore: the
restored version's); operations that would need an index rebuilt or remapped are refused
(``lakecore_lance.write.indices``).
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from lakecore.errors import (
    CommitConflictError,
    CommitError,
    CommitStateUnknownError,
    CommitStorageError,
    InvalidArgumentError,
)
from lakecore.format.committer import Prepared
from lakecore.model.actions import Action, CommitInfo, CommitOutcome, Committed, Conflict
from lakecore.snapshot import Snapshot
from lakecore.storage import Storage
from lakecore_lance.history import RESERVED_PROPERTY_PREFIX, TRANSACTIONS_DIR, read_transaction
from lakecore_lance.manifest import MAGIC, find_manifest, manifest_path, read_manifest
from lakecore_lance.proto import table_pb2, transaction_pb2
from lakecore_lance.state import ensure_unique_fragment_ids
from lakecore_lance.write.changes import (
    WRITABLE_WRITER_FLAGS,
    Combined,
    apply,
    changes_of,
    combine,
    transaction,
    txn_uuid,
)
from lakecore_lance.write.indices import ensure_index_safe, index_section
from lakecore_lance.write.writable import ensure_numbered, state_of

FOOTER_VERSION = (0, 2)
"""The (major, minor) pylance 14 writes in a manifest's footer."""
HINT = "_versions/latest_version_hint.json"


@dataclass(frozen=True, slots=True)
class LancePlan:
    """The payload of a Lance ``Prepared``: what ``commit`` writes."""

    combined: Combined
    transaction_path: str
    transaction: bytes
    manifest: bytes
    """The encoded next manifest, framed."""
    current: table_pb2.Manifest
    """The manifest it follows (the base's, or the last winner's)."""
    indices: bytes = b""
    """``current``'s encoded index section (empty: none)."""


def encode_manifest(
    manifest: table_pb2.Manifest, transaction: bytes, indices: bytes = b""
) -> bytes:
    """A manifest file as pylance 14 lays it out: the u32-length-prefixed ``transaction`` at
    position 0, the u32-length-prefixed manifest, then the 16-byte footer pointing at it.

    The manifest's ``transaction_section`` (field 23) is set to the transaction's position, as
    pylance 14 writes it: pylance decodes the transaction there when it resolves conflicts,
    so every manifest lakecore writes carries its transaction. ``transaction_section_deprecated``
    (field 21, which pylance reads only when 23 is absent) is cleared so no stale position
    from ``manifest`` survives.

    With ``indices`` (an encoded ``IndexSection``), the section comes first at position 0
    (``index_section = 0``) and the transaction after it, as pylance writes an indexed
    dataset's manifest; ``manifest``'s own ``index_section`` is replaced (cleared without)."""
    out = table_pb2.Manifest()
    out.CopyFrom(manifest)
    head = b""
    if indices:
        out.index_section = 0
        head = struct.pack("<I", len(indices)) + indices
    else:
        out.ClearField("index_section")
    out.ClearField("transaction_section_deprecated")
    out.transaction_section = len(head)
    body: bytes = out.SerializeToString(deterministic=True)
    head += struct.pack("<I", len(transaction)) + transaction
    major, minor = FOOTER_VERSION
    footer = struct.pack("<qHH", len(head), major, minor) + MAGIC
    return head + struct.pack("<I", len(body)) + body + footer


PUT_ATTEMPTS = 3


def put_manifest(storage: Storage, path: str, payload: bytes) -> CommitOutcome:
    """Put the manifest ``payload`` at ``path`` unless it exists; a failed put is read back.

    A put can fail after its request landed (a timeout once it was sent): the manifest is
    then read back and compared with ``payload``, which is unique (it holds the transaction's
    uuid): ours -> ``Committed``; another writer's -> ``Conflict``; absent -> the put is tried
    again (should the failed request land later, the retry's put-if-absent fails and the
    read-back finds our bytes, so the version never lands twice). The returned outcome's
    version is 0; the caller knows it.

    Raises ``CommitStateUnknownError`` when the read-back fails too, or the manifest stayed
    absent through ``PUT_ATTEMPTS`` failed puts (a request still in flight could yet land).
    """
    failure: OSError | None = None
    for _ in range(PUT_ATTEMPTS):
        try:
            storage.put_if_absent(path, payload)
        except FileExistsError:
            pass
        except OSError as exc:
            failure = exc
        else:
            return Committed(0)
        try:
            landed: bytes | None = storage.read(path)
        except FileNotFoundError:
            landed = None
        except OSError as exc:
            raise CommitStateUnknownError(
                f"{path} may or may not have landed: its put failed ({failure}) and reading it "
                f"back failed ({exc}); read the dataset's versions before retrying"
            ) from exc
        if landed == payload:
            return Committed(0)
        if landed is not None:
            return Conflict(0)
    raise CommitStateUnknownError(
        f"{path} may or may not have landed: {PUT_ATTEMPTS} puts failed (last: {failure}) and "
        "it is not there yet; read the dataset's versions before retrying"
    ) from failure


class LanceCommitter:
    """Lands one transaction on a Lance dataset, on top of ``base`` (one per transaction)."""

    def __init__(self, storage: Storage, base: Snapshot) -> None:
        self._storage = storage
        self._state = state_of(base)
        self._naming = self._state.loaded.file.naming
        self._txn_written: str | None = None
        self._committed = False

    def prepare(self, actions: Sequence[Action], info: CommitInfo) -> Prepared:
        """The transaction file and the next manifest for ``actions`` (nothing written).

        Raises ``UnsupportedFeatureError`` for actions a Lance commit cannot hold (see
        ``combine``) and ``ValueError`` for none at all.
        """
        combined = combine(changes_of(actions))
        base = self._state.manifest
        reserved = sorted(k for k in info.app_metadata if k.startswith(RESERVED_PROPERTY_PREFIX))
        if reserved:
            raise InvalidArgumentError(
                f"app_metadata keys {reserved} start with {RESERVED_PROPERTY_PREFIX!r}, which "
                "Lance reserves for its own transaction properties (pylance's commit message)"
            )
        raw = transaction(combined, int(base.version), base, info.app_metadata)
        name = f"{int(base.version)}-{txn_uuid(raw)}.txn"
        indices = index_section(self._storage, self._state.loaded.file, base)
        return self._plan(actions, info, combined, f"{TRANSACTIONS_DIR}/{name}", raw, base, indices)

    def _plan(
        self,
        actions: Sequence[Action],
        info: CommitInfo,
        combined: Combined,
        txn_path: str,
        raw: bytes,
        current: table_pb2.Manifest,
        indices: bytes,
        rebased: bool = False,
    ) -> Prepared:
        ensure_index_safe(combined, indices)
        name = txn_path.rsplit("/", 1)[-1]
        timestamp_ns = _commit_timestamp(info, current, rebased)
        manifest = apply(combined, current, name, timestamp_ns)
        carried = indices
        if combined.restored is not None:
            # A restore brings back the restored version's indices, as Lance's does.
            restored = find_manifest(self._storage, int(combined.restored.version))
            carried = index_section(self._storage, restored, combined.restored)
        payload = encode_manifest(manifest, raw, carried)
        plan = LancePlan(combined, txn_path, raw, payload, current, indices)
        return Prepared(int(manifest.version), tuple(actions), info, plan)

    def commit(self, prepared: Prepared) -> CommitOutcome:
        """Write the transaction file (first attempt only), then put the next manifest unless
        the version exists: ``Committed`` or ``Conflict(version)``.

        Raises ``CommitStorageError`` when the transaction file cannot be written (nothing
        landed) and ``CommitStateUnknownError`` when the manifest's outcome cannot be told
        (``put_manifest``).
        """
        plan = prepared.payload
        if not isinstance(plan, LancePlan):
            raise TypeError("not a Lance prepared commit")
        if self._txn_written is None:
            # Recorded first: a put that fails half-way still leaves a file for abort to remove.
            self._txn_written = plan.transaction_path
            try:
                self._storage.put(plan.transaction_path, plan.transaction)
            except OSError as exc:
                raise CommitStorageError(
                    f"cannot write transaction file {plan.transaction_path}: {exc}"
                ) from exc
        version = int(prepared.version)
        outcome = put_manifest(self._storage, manifest_path(version, self._naming), plan.manifest)
        if isinstance(outcome, Conflict):
            return Conflict(version)
        self._committed = True
        self._write_hint(version)
        return Committed(version)

    def _write_hint(self, version: int) -> None:
        # pylance keeps a hint of the latest version; readers never trust it (a slower writer
        # may overwrite it with an older number), so a failure here is harmless.
        with contextlib.suppress(OSError):
            self._storage.put(HINT, f'{{"version":{version}}}'.encode())

    def rebase(self, prepared: Prepared, winner: int | str) -> Prepared:
        """Check version ``winner``'s transaction against this one; the same transaction on
        top of the winner's manifest when compatible (see the module docstring).

        Raises ``CommitConflictError`` naming ``winner`` otherwise, ``CorruptTableError`` when
        the winner's manifest says it is another version or lists a fragment id twice;
        ``OSError`` reading it.
        """
        plan = prepared.payload
        if not isinstance(plan, LancePlan):
            raise TypeError("not a Lance prepared commit")
        won = int(winner)
        loaded = read_manifest(self._storage, find_manifest(self._storage, won))
        ensure_numbered(loaded.manifest, won, loaded.file.path)
        ensure_unique_fragment_ids(loaded.manifest, loaded.file.path)
        txn = read_transaction(self._storage, loaded)
        won_indices = index_section(self._storage, loaded.file, loaded.manifest)
        check_compatible(
            plan.combined,
            plan.current,
            loaded.manifest,
            txn,
            won,
            plan.indices,
            won_indices,
            exclusive=prepared.info.read_whole_table,
        )
        return self._plan(
            prepared.actions,
            prepared.info,
            plan.combined,
            plan.transaction_path,
            plan.transaction,
            loaded.manifest,
            won_indices,
            rebased=True,
        )

    def abort(self, actions: Sequence[Action]) -> None:
        """Delete the data and deletion files the changes of ``actions`` wrote and this
        transaction's transaction file; idempotent. Never after the commit landed."""
        if self._committed:
            return
        for change in changes_of(actions):
            for path in change.written:
                if path.startswith(("data/", "_deletions/")):
                    self._storage.delete(path)
        if self._txn_written is not None:
            self._storage.delete(self._txn_written)


def _commit_timestamp(info: CommitInfo, current: table_pb2.Manifest, rebased: bool) -> int | None:
    """The next manifest's timestamp (epoch ns): ``info.timestamp_ms`` when set, else None
    (now). Lance finds versions by timestamp assuming they grow with the version, so a set
    timestamp must be later than ``current``'s: else ``CommitError``, or
    ``CommitConflictError`` naming ``current`` when it is a concurrent winner (``rebased``)."""
    if info.timestamp_ms is None:
        return None
    wanted = int(info.timestamp_ms) * 1_000_000
    if current.HasField("timestamp"):
        before = int(current.timestamp.seconds) * 1_000_000_000 + int(current.timestamp.nanos)
        if wanted <= before:
            why = (
                f"the commit timestamp {info.timestamp_ms} ms is not later than version "
                f"{int(current.version)}'s ({before // 1_000_000} ms)"
            )
            if rebased:
                raise CommitConflictError(
                    f"{why}, committed concurrently", winning_version=int(current.version)
                )
            raise CommitError(f"{why}; Lance versions must have growing timestamps")
    return wanted


_DATA_ONLY = frozenset({"append", "delete", "update", "rewrite"})


def _touched(txn: transaction_pb2.Transaction) -> frozenset[int] | None:
    """Fragments of its read version the winner changed or removed; None: unknown (all)."""
    op = txn.WhichOneof("operation")
    if op == "append":
        return frozenset()
    if op == "delete":
        ids = {int(f.id) for f in txn.delete.updated_fragments}
        return frozenset(ids | {int(i) for i in txn.delete.deleted_fragment_ids})
    if op == "update":
        ids = {int(f.id) for f in txn.update.updated_fragments}
        return frozenset(ids | {int(i) for i in txn.update.removed_fragment_ids})
    if op == "rewrite":
        old = [f for g in txn.rewrite.groups for f in g.old_fragments]
        old.extend(txn.rewrite.old_fragments)
        return frozenset(int(f.id) for f in old)
    return None


def _adds_rows(txn: transaction_pb2.Transaction) -> bool:
    op = txn.WhichOneof("operation")
    if op == "append":
        return len(txn.append.fragments) > 0
    if op == "update":
        return len(txn.update.new_fragments) > 0
    return False


def check_compatible(
    mine: Combined,
    current: table_pb2.Manifest,
    won: table_pb2.Manifest,
    txn: transaction_pb2.Transaction | None,
    winner: int,
    current_indices: bytes = b"",
    won_indices: bytes = b"",
    exclusive: bool = False,
) -> None:
    """Raise ``CommitConflictError`` naming ``winner`` unless this transaction may land after
    it (see the module docstring). ``current_indices`` / ``won_indices``: the encoded index
    sections of ``current`` and ``won`` (empty: none). ``exclusive``: the transaction's
    outcome depends on every row (``CommitInfo.read_whole_table``: an overwrite, an exclusive
    ``Transaction.replace_files``), so any winner conflicts."""
    op = None if txn is None else txn.WhichOneof("operation")

    def conflict(why: str) -> CommitConflictError:
        return CommitConflictError(
            f"version {winner} ({op or 'unknown operation'}) was committed concurrently and "
            f"conflicts with this {mine.operation}: {why}",
            winning_version=winner,
        )

    if exclusive:
        raise conflict("this commit depends on every row (read_whole_table)")
    if txn is None or op not in _DATA_ONLY:
        raise conflict("lakecore rebases only past appends, deletes, updates and compactions")
    if list(won.fields) != list(current.fields):
        raise conflict("it changed the schema")
    if _index_key(won_indices) != _index_key(current_indices):
        raise conflict("it changed the dataset's indices")
    if int(won.writer_feature_flags) & ~WRITABLE_WRITER_FLAGS:
        raise conflict("it uses writer features lakecore does not keep valid")
    if mine.operation in ("overwrite", "restore"):
        raise conflict(f"a {mine.operation} replaces every row the winner changed")
    if mine.operation in ("add_columns", "project"):
        raise conflict("a schema change rebases past no commit")
    if mine.keyed and _adds_rows(txn):
        raise conflict("it added rows, whose keys this merge did not see")
    if mine.operation == "append" and op != "rewrite":
        return
    touched = _touched(txn)
    if mine.operation == "append":
        return  # a compaction only replaces fragments; new ones are unaffected
    assert touched is not None
    both = touched & mine.touched
    if both:
        raise conflict(f"both changed fragments {sorted(both)}")


def _index_key(section: bytes) -> bytes:
    """An index section in a canonical encoding (equal sections compare equal)."""
    if not section:
        return b""
    parsed = table_pb2.IndexSection()
    parsed.ParseFromString(section)
    if not parsed.indices:
        return b""
    key: bytes = parsed.SerializeToString(deterministic=True)
    return key
