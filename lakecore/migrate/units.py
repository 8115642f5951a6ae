"""Units of migration: the rows of a source file index, each identified by what it reads.

A unit is one row of the source's file index (a Delta file, a Hudi file slice, a Lance
fragment). Its fingerprint changes whenever the rows it yields may change: another path, other
data files (a Hudi log file, a Lance column file added), other row-level deletes (a new
deletion vector or deletion file), another row count. A migration rewrites a unit whose
fingerprint it does not hold yet and drops the target files of fingerprints the source no longer
has, so a delete can never be lost: a unit whose deletes changed is a new fingerprint.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.model import files as fi

FINGERPRINT = "fingerprint"
_SEP = "\x1f"  # unit separator: cannot occur in paths, keeps fields apart in one key


def fingerprints(files: pa.Table) -> pa.Array:
    """One binary key per row of a file index (Arrow compute over the whole index)."""
    n = files.num_rows
    parts: list[pa.Array | pa.ChunkedArray] = [files.column(fi.PATH).cast(pa.binary())]
    if fi.DATA_FILES in files.column_names:
        joined = pc.binary_join(files.column(fi.DATA_FILES), _SEP)
        parts.append(pc.fill_null(joined, "").cast(pa.binary()))
    if fi.DELETION in files.column_names:
        descriptor = pc.struct_field(files.column(fi.DELETION), fi.DESCRIPTOR)
        parts.append(pc.fill_null(descriptor, b""))
    if fi.RECORD_COUNT in files.column_names:
        counts = pc.fill_null(files.column(fi.RECORD_COUNT).cast(pa.string()), "")
        parts.append(counts.cast(pa.binary()))
    key = pc.binary_join_element_wise(*parts, _SEP.encode())
    combined = key.combine_chunks() if isinstance(key, pa.ChunkedArray) else key
    assert len(combined) == n
    return combined


@dataclass(frozen=True, slots=True)
class UnitDiff:
    """How a source file index differs from the units a target holds."""

    added: pa.Table
    """Rows of the source index whose fingerprint the target does not hold (to write)."""
    added_keys: pa.Array
    """Their fingerprints, in the same order."""
    gone: pa.Array
    """Fingerprints the target holds that the source no longer has (to remove)."""

    @property
    def empty(self) -> bool:
        """True when the target already holds exactly the source's units."""
        return self.added.num_rows == 0 and len(self.gone) == 0


def diff(files: pa.Table, held: pa.Array) -> UnitDiff:
    """Compare a source file index with the fingerprints ``held`` by the target."""
    keys = fingerprints(files)
    new = pc.invert(pc.is_in(keys, value_set=held)) if len(held) else None
    if new is None:
        added, added_keys = files, keys
    else:
        added, added_keys = files.filter(new), keys.filter(new)
    unique_held = pc.unique(held) if len(held) else held
    gone = (
        unique_held.filter(pc.invert(pc.is_in(unique_held, value_set=keys)))
        if len(unique_held)
        else unique_held
    )
    return UnitDiff(added, added_keys, gone)


def deletes_of(files: pa.Table) -> int:
    """Rows the ``deletion`` column says are deleted (deletion vectors, deletion files)."""
    if fi.DELETION not in files.column_names or files.num_rows == 0:
        return 0
    cardinality = pc.struct_field(files.column(fi.DELETION), fi.CARDINALITY)
    return int(pc.sum(cardinality).as_py() or 0)
