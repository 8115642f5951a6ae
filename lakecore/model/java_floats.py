"""Floating-point values as Java prints them (``Double.toString``, ``Float.toString``).

The JVM writers name values by that text: Hudi's key generators turn a record key or
partition field into text with the value's ``toString()`` (a float key ``1`` is ``"1.0"``,
``1e-7`` is ``"1.0E-7"``), and Spark casts a float partition value to its partition directory
and Delta ``partitionValues`` text the same way (``NaN``, ``Infinity``); Arrow's cast prints
``"1"`` and ``"1e-07"``, Python ``nan`` and ``inf``. The digits are
the shortest that round-trip, as Java 19 and later print them (Python's ``repr`` digits; for
``float`` columns the shortest digits of the 32-bit value; where one digit is enough, the
closest decimal of one or two digits, as Java picks it); the layout is Java's: plain
notation with at least one fraction digit for magnitudes in [1e-3, 1e7), else
``<d>.<ddd>E<exponent>``; ``NaN``, ``Infinity``, ``-Infinity``, ``-0.0``.
"""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np
import pyarrow as pa

from lakecore.model.distinct_values import map_distinct


def java_float_texts(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """Each value of a floating-point ``column`` as Java's ``toString`` of it (null stays null).

    Each distinct bit pattern is rendered once in Python (a column has few distinct values
    where it names keys or partitions, and equal bit patterns print the same).
    """
    single = column.type == pa.float32() or column.type == pa.float16()
    wide = pa.float32() if single else pa.float64()
    bits_type = pa.int32() if single else pa.int64()
    values = column.cast(wide) if column.type != wide else column
    bits = pa.chunked_array([c.view(bits_type) for c in values.chunks], bits_type)

    def render(distinct: pa.Array) -> pa.Array:
        floats = distinct.view(wide).to_numpy(zero_copy_only=False)
        return pa.array([_java_text(float(v), single) for v in floats], pa.string())

    return map_distinct(bits, render)


def _java_text(value: float, single: bool) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    shortest = np.format_float_scientific(np.float32(value), unique=True) if single else repr(value)
    if len(Decimal(shortest).normalize().as_tuple().digits) == 1:
        # Java weighs decimals of one and two digits alike and prints the one closest to
        # the value (Double.MIN_VALUE is "4.9E-324", not "5.0E-324"); Python's "%.1e" is the
        # closest two-digit decimal, exactly rounded.
        closest = f"{value:.1e}"
        back = np.float32(closest) if single else float(closest)
        if back == (np.float32(value) if single else value):
            shortest = closest
    sign, digits, exponent = Decimal(shortest).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    power = len(text) - 1 + exponent  # value = d.ddd x 10^power
    if -3 <= power < 7:
        if power >= 0:
            whole, fraction = text[: power + 1].ljust(power + 1, "0"), text[power + 1 :]
        else:
            whole, fraction = "0", "0" * (-power - 1) + text
        body = f"{whole}.{fraction or '0'}"
    else:
        body = f"{text[0]}.{text[1:] or '0'}E{power}"
    return ("-" if sign else "") + body
