"""The one expression layer: one tree, one Spark SQL front end, one compilation to Arrow.

``tree``: the frozen expression tree (predicates and scalar nodes); ``sql``: Spark SQL text ->
tree (the only SQL front end: scans, DML, MERGE, CHECK constraints, generated columns and
conflict checks all parse here); ``binding``: where-input -> tree bound to a schema
(``coerce``: exact literal coercion); ``arrow_input``: pyarrow expressions -> tree;
``arrow_filter``: bound tree -> pyarrow expression (the scan's row filter); ``evaluate``: that
expression run eagerly over an Arrow table (Acero); ``assign``: ``SET`` values (SQL text,
trees or exactly coerced Python literals). Pruning over the same tree lives in
``lakecore.planning.pruning``.
"""
