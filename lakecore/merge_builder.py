"""MERGE as a builder of ordered clauses (``Table.merge``): collects them, then plans and
commits them as one version through the table's format writer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from lakecore.boundary import public_api
from lakecore.errors import InvalidArgumentError
from lakecore.model.merge import MergeClause, MergeClauses, check_clause_order

if TYPE_CHECKING:
    from lakecore.expr.assign import SetValue
    from lakecore.model.metrics import WriteResult
    from lakecore.planning.merge_eval import MergeOn
    from lakecore.table import Table


@public_api
class MergeBuilder:
    """Collects MERGE clauses; ``execute()`` plans and commits them as one version.

    Clauses of one kind run in the order added; a row takes the first whose condition is
    TRUE (``lakecore.planning.merge_eval``). Conditions and values are SQL over the aliased
    columns (``source.x``, ``target.x``; a bare name is the target's column).
    """

    def __init__(
        self, table: Table, source: Any, on: MergeOn, source_alias: str, target_alias: str
    ) -> None:
        self._table = table
        self._source = source
        self._on = on
        self._clauses: list[MergeClause] = []
        self._aliases = (source_alias, target_alias)

    def _add(
        self,
        kind: str,
        action: str,
        values: Any,
        condition: str | None,
        predicate: str | None = None,
        except_cols: Sequence[str] | None = None,
    ) -> MergeBuilder:
        # ``predicate`` and ``except_cols`` are deltalake's names (TableMerger).
        if condition is not None and predicate is not None:
            raise InvalidArgumentError("give condition= or predicate= (the same), not both")
        if values is not None:
            values = dict(values)
        excepted = tuple(except_cols or ())
        clause = MergeClause(kind, action, values, condition or predicate, excepted)
        self._clauses.append(clause)
        return self

    def when_matched_update_all(
        self,
        condition: str | None = None,
        *,
        predicate: str | None = None,
        except_cols: Sequence[str] | None = None,
    ) -> MergeBuilder:
        """Matched target rows take the source row's values (every column it has but
        ``except_cols``)."""
        return self._add("matched", "update", None, condition, predicate, except_cols)

    def when_matched_update(
        self,
        set: Mapping[str, SetValue] | None = None,
        condition: str | None = None,
        *,
        updates: Mapping[str, SetValue] | None = None,
        predicate: str | None = None,
    ) -> MergeBuilder:
        """Matched target rows get ``set`` (deltalake: ``updates``): column -> SQL over
        ``source.x``/``target.x``, a tree, or a Python literal (as ``Table.update``)."""
        return self._add("matched", "update", _one_of(set, updates), condition, predicate)

    def when_matched_delete(
        self, condition: str | None = None, *, predicate: str | None = None
    ) -> MergeBuilder:
        """Matched target rows are deleted."""
        return self._add("matched", "delete", None, condition, predicate)

    def when_not_matched_insert_all(
        self,
        condition: str | None = None,
        *,
        predicate: str | None = None,
        except_cols: Sequence[str] | None = None,
    ) -> MergeBuilder:
        """Source rows without a match are inserted (columns by name but ``except_cols``;
        the others as an append fills them)."""
        return self._add("not_matched", "insert", None, condition, predicate, except_cols)

    def when_not_matched_insert(
        self,
        values: Mapping[str, SetValue] | None = None,
        condition: str | None = None,
        *,
        updates: Mapping[str, SetValue] | None = None,
        predicate: str | None = None,
    ) -> MergeBuilder:
        """Source rows without a match insert a row of ``values`` (deltalake: ``updates``;
        column -> SQL over the source's columns, a tree or a literal; columns not given are
        filled as an append fills them)."""
        return self._add("not_matched", "insert", _one_of(values, updates), condition, predicate)

    def when_not_matched_by_source_update(
        self,
        set: Mapping[str, SetValue] | None = None,
        condition: str | None = None,
        *,
        updates: Mapping[str, SetValue] | None = None,
        predicate: str | None = None,
    ) -> MergeBuilder:
        """Target rows no source row matches get ``set`` (SQL over the target's columns).
        The merge then reads the whole table."""
        values = _one_of(set, updates)
        return self._add("not_matched_by_source", "update", values, condition, predicate)

    def when_not_matched_by_source_delete(
        self, condition: str | None = None, *, predicate: str | None = None
    ) -> MergeBuilder:
        """Target rows no source row matches are deleted. The merge then reads the whole
        table."""
        return self._add("not_matched_by_source", "delete", None, condition, predicate)

    def execute(self) -> WriteResult:
        """Run the merge and commit it; returns the ``WriteResult``: the new version and the
        rows inserted/updated/deleted/copied and files written.

        Raises ``InvalidArgumentError`` for a merge without clauses (as deltalake),
        ``MergeConflictError`` when a target row matches several source rows, and the
        format's ``UnsupportedFeatureError`` for what it cannot do; all before any commit.
        """
        from lakecore.planning.merge_eval import with_on

        if not self._clauses:
            raise InvalidArgumentError(
                "a merge needs at least one when_matched / when_not_matched clause"
            )
        check_clause_order(self._clauses)
        clauses = MergeClauses(
            clauses=tuple(self._clauses),
            source_alias=self._aliases[0],
            target_alias=self._aliases[1],
        )
        clauses = with_on(clauses, self._on)
        keys = list(self._on.target_keys)
        return self._table._run(
            lambda tx: tx.stage(
                *self._table._format_writer(tx.snapshot).merge(self._source, keys, clauses)
            )
        )


def _one_of(
    ours: Mapping[str, SetValue] | None, theirs: Mapping[str, SetValue] | None
) -> Mapping[str, SetValue]:
    """The column values given positionally or as deltalake's ``updates=`` (exactly one)."""
    if (ours is None) == (theirs is None):
        raise InvalidArgumentError("give the column values once (positionally or updates=)")
    return ours if ours is not None else cast("Mapping[str, SetValue]", theirs)
