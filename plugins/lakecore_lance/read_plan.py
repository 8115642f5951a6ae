"""Which columns of which data file a Lance fragment's requested fields come from.

A plan depends only on the manifest's entries for the fragment's data files (field ids,
column indices, file versions), so fragments whose entries list the same fields share one
(``plan_for``): 1,000 fragments appended alike are planned once, not 1,000 times. Fragments
that need their files' own schemas (legacy files, shifted columns, dropped or tombstoned ids)
get no plan and are read by ``lakecore_lance.scan._read_fragment``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from lakecore_lance.columns import in_order
from lakecore_lance.schema import FieldNode
from lakecore_lance.state import DataFileInfo


@dataclass(frozen=True, slots=True)
class Output:
    """The requested columns: names, fields and field ids in order, and their schema."""

    wanted: list[tuple[str, pa.Field]]
    ids: list[int]
    schema: pa.Schema = dataclasses.field(init=False)
    types: list[pa.DataType] = dataclasses.field(init=False)
    targets: dict[int, pa.Field] = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "schema", pa.schema([f for _, f in self.wanted]))
        object.__setattr__(self, "types", [f.type for _, f in self.wanted])
        object.__setattr__(
            self, "targets", {fid: f for (_, f), fid in zip(self.wanted, self.ids, strict=True)}
        )


@dataclass(frozen=True, slots=True)
class FileStep:
    """One data file of a planned fragment: what to read from it."""

    index: int
    """The file's position among the fragment's data files."""
    positions: list[int]
    """Top-level columns of the file to read (one per field id of ``fids``)."""
    width: int
    """Top-level columns the file has."""
    fids: list[int]


@dataclass(frozen=True, slots=True)
class Plan:
    """Which columns of which data file a fragment's requested fields come from."""

    steps: list[FileStep]
    whole: bool
    """One data file read whole, its columns in the requested order (``scan._read_planned``)."""


def plan_for(
    plans: dict[tuple[tuple[Any, ...], ...], Plan | None],
    infos: tuple[DataFileInfo, ...],
    ancestor: dict[int, int],
    ids: list[int],
) -> Plan | None:
    """``_plan`` of ``infos``, shared by the fragments whose data files list the same fields.

    The plan depends on the manifest's entries only (field ids, column indices, file
    version), not on the files, so 1,000 fragments appended alike are planned once.
    """
    key = tuple((i.fields, i.column_indices, i.major, i.minor) for i in infos)
    if key not in plans:
        plans[key] = plan(infos, ancestor, ids)
    return plans[key]


def plan(infos: tuple[DataFileInfo, ...], ancestor: dict[int, int], ids: list[int]) -> Plan | None:
    """The plan of a fragment whose files are all 2.x files with in-order columns and whose
    layout the manifest alone gives (``layout_from_ids``); None otherwise (legacy files,
    shifted columns, dropped or tombstoned ids: ``_read_fragment`` reads those).

    As ``_read_fragment``: each field comes from the last file that holds it.
    """
    holder: dict[int, tuple[int, int]] = {}
    widths: list[int] = []
    for k, info in enumerate(infos):
        if info.legacy or not in_order(info.column_indices):
            return None
        layout = layout_from_ids(info, ancestor)
        if layout is None:
            return None
        widths.append(len(layout))
        for position, owner in enumerate(layout):
            if owner is not None:
                holder[owner] = (k, position)
    by_file: dict[int, list[int]] = {}
    for fid in ids:
        if fid in holder:
            by_file.setdefault(holder[fid][0], []).append(fid)
    steps = [
        FileStep(k, [holder[fid][1] for fid in by_file[k]], widths[k], by_file[k])
        for k in range(len(infos))
        if k in by_file
    ]
    whole = (
        len(steps) == 1
        and steps[0].positions == list(range(steps[0].width))
        and steps[0].fids == ids
    )
    return Plan(steps, whole)


def ancestors(tops: dict[int, FieldNode]) -> dict[int, int]:
    return {fid: top for top, node in tops.items() for fid in node.ids()}


def layout_from_ids(info: DataFileInfo, ancestor: dict[int, int]) -> list[int | None] | None:
    """The top-level field id of each of the file's top-level columns, from the manifest alone.

    Works when every id the file lists is a field of the current schema: consecutive ids of one
    top-level field form one column (whether the writer listed every node or only leaves).
    None when the file lists ids the schema no longer has (dropped or tombstoned fields).
    ``ancestor`` maps every field id of the schema to its top-level field (``ancestors``).
    """
    layout: list[int | None] = []
    for fid in info.fields:
        top = ancestor.get(fid)
        if top is None:
            return None
        if not layout or layout[-1] != top:
            layout.append(top)
    return layout if len(set(layout)) == len(layout) else None
