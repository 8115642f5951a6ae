"""Turning what users pass to writes into one Arrow table (shared by every format's writer)."""

from __future__ import annotations

from typing import Any, TypeAlias

import pyarrow as pa

from lakecore.errors import SchemaError


def to_arrow_table(data: Any) -> pa.Table:
    """Accept a pyarrow Table/RecordBatch/RecordBatchReader, a pandas DataFrame, anything with
    ``__arrow_c_stream__``, or a dict of columns; raises ``SchemaError`` for anything else."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    if type(data).__module__.startswith("pandas"):
        return pa.Table.from_pandas(data, preserve_index=False)
    if hasattr(data, "__arrow_c_stream__") or isinstance(data, dict):
        return pa.table(data)
    raise SchemaError(f"cannot write {type(data).__name__}: pass Arrow data or a DataFrame")


def is_lossless_cast(source: pa.DataType, target: pa.DataType) -> bool:
    """Whether written values of type ``source`` may go into a column of type ``target``.

    This is the type half of the rule every format's writer applies: a conversion is allowed
    only when it never changes a value it accepts. Integers go into any integer, into
    float32/float64 and into decimals (each value is then checked by a safe cast: overflow and
    precision loss are refused, never wrapped or rounded); floats only widen; decimals change
    scale and precision only where each value fits; timestamp, time and duration units change
    where no digit is lost (a timestamp without zone is read as UTC; one with a zone never
    goes into a column without zone); string, binary and list
    encodings (large, view) interchange; null goes anywhere; structs, lists and maps follow
    their children (a struct field the target lacks is refused, not dropped). Text never
    becomes a number or a date, booleans never become numbers, numbers never become text.
    """
    if source == target or pa.types.is_null(source):
        return True
    if pa.types.is_dictionary(source):
        return is_lossless_cast(source.value_type, target)
    if pa.types.is_timestamp(source) and pa.types.is_timestamp(target):
        # An instant with a zone has no single wall-clock time: it never goes into a column
        # without zone (TIMESTAMP_NTZ). A time without zone goes into UTC.
        return source.tz is None or target.tz is not None
    for family in _FAMILIES:
        if family(source) and family(target):
            return True
    if pa.types.is_integer(source):
        # float16 is not value-checked by pyarrow's safe cast (2049 becomes 2048).
        wide_float = pa.types.is_floating(target) and target.bit_width >= 32
        return bool(wide_float or pa.types.is_integer(target) or pa.types.is_decimal(target))
    if pa.types.is_floating(source):
        return bool(pa.types.is_floating(target) and target.bit_width >= source.bit_width)
    if pa.types.is_date(source):
        return bool(pa.types.is_date(target))
    if _is_list(source):
        return _is_list(target) and is_lossless_cast(source.value_type, target.value_type)
    if pa.types.is_map(source):
        return pa.types.is_map(target) and all(
            is_lossless_cast(s, t)
            for s, t in ((source.key_type, target.key_type), (source.item_type, target.item_type))
        )
    if pa.types.is_struct(source):
        return pa.types.is_struct(target) and _struct_fits(source, target)
    return False


def _is_text(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or _is_view(t, "string"))


def _is_bytes(t: pa.DataType) -> bool:
    return bool(
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
        or _is_view(t, "binary")
    )


def _is_view(t: pa.DataType, kind: str) -> bool:
    test = getattr(pa.types, f"is_{kind}_view", None)  # pyarrow >= 16
    return bool(test is not None and test(t))


def _is_list(t: pa.DataType) -> bool:
    return bool(
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_fixed_size_list(t)
        or _is_view(t, "list")
        or _is_view(t, "large_list")
    )


# Same-kind types whose conversions pyarrow's safe cast checks value by value.
_FAMILIES = (
    _is_text,
    _is_bytes,
    pa.types.is_decimal,
    pa.types.is_timestamp,
    pa.types.is_time,
    pa.types.is_duration,
)


def _struct_fits(source: pa.StructType, target: pa.StructType) -> bool:
    wanted = {target.field(i).name: target.field(i).type for i in range(target.num_fields)}
    for i in range(source.num_fields):
        f = source.field(i)
        if f.name not in wanted or not is_lossless_cast(f.type, wanted[f.name]):
            return False
    return True


Values: TypeAlias = pa.Array | pa.ChunkedArray


def cast_lossless(values: Values, target: pa.DataType, column: str) -> Values:
    """``values`` as ``target`` by the rule of ``is_lossless_cast``, each value checked.

    Raises ``SchemaError`` naming ``column`` when the types do not convert losslessly or a
    value does not fit (an integer overflow, digits a decimal or unit would drop).
    """
    if values.type == target:
        return values
    if not is_lossless_cast(values.type, target):
        raise SchemaError(
            f"column {column!r}: {values.type} values are not written into {target} "
            "(the conversion could change them); convert the data first"
        )
    return _safe_cast(values, target, column)


def cast_assigned(values: Values, target: pa.DataType, column: str, sql: str) -> Values:
    """The result of SQL ``sql`` as ``target``, for ``SET column = sql`` (UPDATE, MERGE).

    SQL store assignment (as Spark's ANSI policy): besides lossless casts, any number goes
    into any numeric column and anything scalar into a text column; each value is checked
    (overflow and truncation raise, never wrap). Raises ``SchemaError`` otherwise.
    """
    if values.type == target:
        return values
    numeric = all(_is_number(t) for t in (values.type, target))
    to_text = _is_text(target) and not pa.types.is_nested(values.type)
    if not (numeric or to_text or is_lossless_cast(values.type, target)):
        raise SchemaError(f"SET {column} = {sql}: a {values.type} value does not go into {target}")
    return _safe_cast(values, target, column)


def _is_number(t: pa.DataType) -> bool:
    return bool(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t))


def _safe_cast(values: Values, target: pa.DataType, column: str) -> Values:
    try:
        if pa.types.is_integer(values.type) and pa.types.is_decimal(target):
            # pyarrow refuses int64 -> decimal(10, 2) by type alone; through a decimal wide
            # enough for any integer, the narrowing cast checks each value instead.
            wide = (
                pa.decimal128(38, target.scale)
                if target.scale <= 18
                else pa.decimal256(76, target.scale)
            )
            values = values.cast(wide, safe=True)
        return values.cast(target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise SchemaError(f"column {column!r}: a value does not fit {target}: {exc}") from None
