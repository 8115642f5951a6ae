"""SQL scalar expressions evaluated with Arrow compute (UPDATE SET values, CHECK constraints,
DML row predicates)."""

from lakecore.sql.evaluate import evaluate, evaluate_predicate

__all__ = ["evaluate", "evaluate_predicate"]
