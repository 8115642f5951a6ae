"""Expressions: the predicate tree, the SQL front end, binding to a schema, Arrow evaluation.

``tree``: the frozen expression tree; ``sql``: SQL text -> tree; ``binding``: where-input ->
tree bound to a schema (``coerce``: exact literal coercion); ``arrow_input``: pyarrow
expressions -> tree; ``arrow_filter``: tree -> pyarrow filter; ``evaluate``: eager evaluation
of SQL scalar expressions over Arrow tables.
"""
