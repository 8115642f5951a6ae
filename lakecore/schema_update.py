"""The schema evolution builder users get from ``Table.update_schema()``, at the API boundary.

A format's ``SchemaUpdate`` is plugin code that no public class guards: what it raises on an
argument it did not expect (a type given as the text ``"int"``) would reach users untyped.
``GuardedSchemaUpdate`` wraps it: arguments are checked here, the same for every format, and
anything else it raises is translated as ``lakecore.boundary`` translates.
"""

from __future__ import annotations

import pyarrow as pa

from lakecore.boundary import public_api
from lakecore.errors import ArgumentTypeError, SchemaError
from lakecore.format import SchemaUpdate
from lakecore.model.actions import Action


@public_api
class GuardedSchemaUpdate:
    """Stages schema changes through a format's builder; nothing is written until the
    ``with table.update_schema()`` block exits cleanly.

    Every method raises ``ArgumentTypeError`` for a name that is not text or a type that is
    not a ``pyarrow.DataType``, ``SchemaError`` for a blank column name, and what the format
    raises (``SchemaError``, ``UnsupportedFeatureError``) for changes it refuses.
    """

    def __init__(self, inner: SchemaUpdate) -> None:
        self._inner = inner

    def add_column(
        self, name: str, type: pa.DataType, nullable: bool = True
    ) -> GuardedSchemaUpdate:
        """Add a top-level column (nullable unless ``nullable=False``)."""
        self._inner.add_column(_name("name", name), _type(type), nullable)
        return self

    def rename_column(self, old: str, new: str) -> GuardedSchemaUpdate:
        """Rename column ``old`` to ``new``."""
        self._inner.rename_column(_name("old", old), _name("new", new))
        return self

    def drop_column(self, name: str) -> GuardedSchemaUpdate:
        """Drop column ``name``."""
        self._inner.drop_column(_name("name", name))
        return self

    def widen_type(self, name: str, new_type: pa.DataType) -> GuardedSchemaUpdate:
        """Widen column ``name`` to ``new_type``."""
        self._inner.widen_type(_name("name", name), _type(new_type))
        return self

    def actions(self) -> list[Action]:
        """The staged changes."""
        return self._inner.actions()


def _name(argument: str, value: object) -> str:
    if not isinstance(value, str):
        raise ArgumentTypeError(f"{argument} must be a column name (text), not {value!r}")
    if not value.strip():
        raise SchemaError(f"a column name must not be blank, not {value!r}")
    return value


def _type(value: object) -> pa.DataType:
    if not isinstance(value, pa.DataType):
        raise ArgumentTypeError(
            f"a column type must be a pyarrow.DataType (pa.int64(), pa.string(), ...), "
            f"not {value!r}"
        )
    return value
