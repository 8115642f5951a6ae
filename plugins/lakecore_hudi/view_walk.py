"""The file-system view of one listing at many instants (a change feed's walk).

``latest_slices`` looks at every listed file; a change feed needs the view at each instant of
its range, which made its work O(files x instants). A group's latest slice depends only on its
own files, on whether each file's instant is visible (and, table version 8+, its completion
time) and on whether the group is replaced. So between two states only the groups holding a
file named by an instant whose visibility or completion differs, and the groups whose
replacement differs, can change slice: ``SliceWalker`` groups the listing once and re-slices
just those, giving the same slices, in the same order, as ``latest_slices``.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from lakecore_hudi.view import FileSlice, SliceFile, Visible, group_slice

Group = tuple[str, str]


@dataclass(frozen=True, slots=True)
class ViewAt:
    """The view at one ``visible`` state: ``slices`` sorted by path (as ``latest_slices``
    returns them) and the same slices by file group."""

    visible: Visible
    slices: tuple[FileSlice, ...]
    groups: Mapping[Group, FileSlice]
    paths: tuple[str, ...]


class SliceWalker:
    """Latest file slices of the listing ``files`` at successive visible states.

    Each ``view`` starts from the last one built (the first from scratch) and re-slices only
    the groups ``changed`` names; ``examined`` counts the files re-sliced (tests bound it).
    """

    def __init__(self, files: Iterable[SliceFile], completion_slicing: bool) -> None:
        self._completion = completion_slicing
        self._files: dict[Group, list[SliceFile]] = defaultdict(list)
        self._named: dict[str, set[Group]] = defaultdict(set)
        self._by_file_id: dict[str, set[Group]] = defaultdict(set)
        for f in files:
            group = (f.partition_path, f.name.file_id)
            self._files[group].append(f)
            self._named[f.name.instant].add(group)
            self._by_file_id[f.name.file_id].add(group)
        self._views: list[ViewAt] = []
        self._written: dict[str, set[Group]] = {}
        self._written_for: Mapping[str, str] | None = None
        self.examined = 0

    def _groups_written(self, visible: Visible) -> dict[str, set[Group]]:
        """Table version 6: writer instant -> groups holding a log file it first wrote (a
        log's name does not carry its writer; every state of a walk shares one mapping)."""
        if self._written_for is not visible.log_writers:
            self._written = defaultdict(set)
            self._written_for = visible.log_writers
            for group, files in self._files.items():
                for f in files:
                    writer = visible.log_writers.get(f.info.path)
                    if writer is not None:
                        self._written[writer].add(group)
        return self._written

    def groups_of(self, file_ids: Iterable[str]) -> set[Group]:
        """The listed file groups with one of ``file_ids`` (in any partition)."""
        out: set[Group] = set()
        for file_id in file_ids:
            out |= self._by_file_id.get(file_id, set())
        return out

    def changed(self, a: Visible, b: Visible) -> set[Group] | None:
        """The groups whose slice may differ between states ``a`` and ``b`` (None: any)."""
        if a.archived_before != b.archived_before or a.log_writers is not b.log_writers:
            return None
        instants = set(a.instants ^ b.instants)
        instants.update(k for k, _ in a.completion.items() ^ b.completion.items())
        out = set(a.replaced ^ b.replaced)
        written = self._groups_written(b)
        for instant in instants:
            out |= self._named.get(instant, set())
            out |= written.get(instant, set())
        return out

    def view(self, visible: Visible) -> ViewAt:
        """The view at ``visible`` (the same object asked for again: the same view)."""
        for known in self._views:
            if known.visible is visible:
                return known
        last = self._views[-1] if self._views else None
        redo = self.changed(last.visible, visible) if last is not None else None
        if last is None or redo is None:
            built = self._full(visible)
        else:
            built = self._step(last, visible, redo)
        self._views = [*self._views[-1:], built]
        return built

    def _full(self, visible: Visible) -> ViewAt:
        groups: dict[Group, FileSlice] = {}
        for group, files in self._files.items():
            self.examined += len(files)
            found = group_slice(group, files, visible, self._completion)
            if found is not None:
                groups[group] = found
        slices = sorted(groups.values(), key=lambda s: s.path)
        return ViewAt(visible, tuple(slices), groups, tuple(s.path for s in slices))

    def _step(self, last: ViewAt, visible: Visible, redo: set[Group]) -> ViewAt:
        groups = dict(last.groups)
        slices, paths = list(last.slices), list(last.paths)
        for group in redo:
            files = self._files.get(group, [])
            self.examined += len(files)
            found = group_slice(group, files, visible, self._completion) if files else None
            was = groups.pop(group, None)
            if was is not None:
                at = bisect_left(paths, was.path)
                del paths[at], slices[at]
            if found is not None:
                groups[group] = found
                at = bisect_left(paths, found.path)
                paths.insert(at, found.path)
                slices.insert(at, found)
        return ViewAt(visible, tuple(slices), groups, tuple(paths))
