"""Hypothesis strategies for Delta ``stats`` JSON text: what writers emit and what they get wrong.

Values follow the Spark layout (numRecords, minValues, maxValues, nullCount, optional
tightBounds) over ``FIELDS``' columns, with every irregularity a parser must survive: keys in
another order, missing and unknown columns, ``null`` values, escaped and non-ASCII strings,
timestamps with and without zones and with too many fraction digits, decimals with more
digits than their scale, NaN and Infinity, integers too big for their type, numbers of the
wrong JSON kind, whitespace and line breaks, truncated text, non-objects.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pyarrow as pa
from hypothesis import strategies as st
from lakecore_delta.schema import to_arrow_field

from .test_stats import FIELDS

ARROW_FIELDS: list[pa.Field] = [to_arrow_field(f) for f in FIELDS]

_INTS = st.one_of(
    st.integers(-(2**31), 2**31 - 1),
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-(10**30), 10**30),
    st.sampled_from([0, -1, 1, 2**31, -(2**31) - 1, 2**63, 10**18, -(10**18)]),
)
_FLOATS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.5, -0.0, 1e308, 5e-324, 1.7976931348623157e308, 3.4000000953674316]),
)
_TEXT = st.one_of(
    st.text(max_size=20),
    st.text(st.characters(codec="ascii"), max_size=12),
    st.sampled_from(['a"b', "back\\slash", "tab\there", "line\nbreak", "é", "😀", "", "{", ","]),
)
_DIGITS = st.text("0123456789", min_size=1, max_size=2)
_TIMESTAMPS = st.one_of(
    st.builds(
        "{}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}{}{}".format,
        st.integers(1, 9999).map(lambda y: f"{y:04d}"),
        st.integers(0, 13),
        st.integers(0, 32),
        st.integers(0, 24),
        st.integers(0, 60),
        st.integers(0, 60),
        st.sampled_from(["", ".1", ".123", ".123456", ".1234567", ".123456789"]),
        st.sampled_from(["", "Z", "+01:00", "-05:30", "+0100", "+01", "z", " UTC"]),
    ),
    st.sampled_from(
        [
            "2021-01-01",
            "2021-01-01 10:00:00",
            "2021-01-01T10:00Z",
            "yesterday",
            "2021-02-29T00:00:00Z",
        ]
    ),
)
_DATES = st.one_of(
    st.dates().map(str), st.sampled_from(["2021-02-30", "2021-1-1", "20210101", "2021-01-01T00:00"])
)
_DECIMALS = st.one_of(
    st.decimals(
        allow_nan=False, allow_infinity=False, places=2, min_value=-(10**8), max_value=10**8
    ),
    st.decimals(allow_nan=False, allow_infinity=False, max_value=10**40, min_value=-(10**40)),
).map(lambda d: _Raw(str(d)))


class _Raw(str):
    """Number text put into the JSON as it is (``1.25``, ``1E+3``), not quoted."""


_LEAF: dict[str, st.SearchStrategy[Any]] = {
    "id": _INTS,
    "i": _INTS,
    "name": _TEXT,
    "d": _DATES,
    "ts": _TIMESTAMPS,
    "ntz": _TIMESTAMPS,
    "dec": _DECIMALS,
    "big": _DECIMALS,
    "f": _FLOATS,
}
_ODD = st.one_of(
    st.none(), st.booleans(), _INTS, _FLOATS, _TEXT, st.lists(st.integers(), max_size=2)
)


def _value(name: str) -> st.SearchStrategy[Any]:
    """Mostly the column's own kind of value, sometimes anything."""
    if name == "s":
        return st.one_of(
            st.fixed_dictionaries(
                {}, optional={"a": _INTS, "b": st.fixed_dictionaries({}, optional={"c": _TEXT})}
            ),
            _ODD,
        )
    own = _LEAF.get(name, _ODD)
    return st.one_of(own, own, own, own, _ODD)


def _section(counts: bool) -> st.SearchStrategy[dict[str, Any]]:
    names = [f["name"] for f in FIELDS] + ["dropped"]
    if counts:
        leaf = st.one_of(_INTS, _INTS, _INTS, _ODD)
        values = {n: leaf for n in names if n != "s"}
        values["s"] = st.one_of(
            st.fixed_dictionaries(
                {}, optional={"a": leaf, "b": st.fixed_dictionaries({}, optional={"c": leaf})}
            ),
            _ODD,
        )
    else:
        values = {n: _value(n) for n in names if n not in ("flag", "bin")}
        values["bin"] = _TEXT
    return st.fixed_dictionaries({}, optional=values)


@st.composite
def stats_objects(draw: st.DrawFn) -> dict[str, Any]:
    """A stats object, keys in Spark's order or shuffled, some parts missing."""
    parts = {
        "numRecords": st.one_of(_INTS, _INTS, _INTS, _ODD),
        "minValues": _section(counts=False),
        "maxValues": _section(counts=False),
        "nullCount": _section(counts=True),
        "tightBounds": st.one_of(st.booleans(), _ODD),
    }
    keep = draw(st.lists(st.sampled_from(sorted(parts)), unique=True, max_size=len(parts)))
    if draw(st.booleans()):
        keep = [k for k in parts if k in keep]  # the writers' order
    return {k: draw(parts[k]) for k in keep}


def _dump(value: Any, ensure_ascii: bool, separators: tuple[str, str]) -> str:
    if isinstance(value, _Raw):
        return str(value)
    if isinstance(value, dict):
        inner = separators[0].join(
            json.dumps(k, ensure_ascii=ensure_ascii)
            + separators[1]
            + _dump(v, ensure_ascii, separators)
            for k, v in value.items()
        )
        return "{" + inner + "}"
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return json.dumps(value, ensure_ascii=ensure_ascii)


@st.composite
def stats_texts(draw: st.DrawFn) -> str | None:
    """One ``stats`` value as text: compact like Spark's, or irregular."""
    shape = draw(st.sampled_from(["compact"] * 6 + ["ascii", "spaced", "pretty", "cut", "odd"]))
    if shape == "odd":
        return draw(st.sampled_from([None, "", "null", " null", "[]", "42", "{}", '"x"', "{,}"]))
    obj = draw(stats_objects())
    if shape == "pretty":
        return json.dumps(obj, indent=2, default=str)
    separators = (", ", ": ") if shape == "spaced" else (",", ":")
    text = _dump(obj, ensure_ascii=shape == "ascii", separators=separators)
    if shape == "cut":
        return text[: draw(st.integers(0, max(0, len(text) - 1)))]
    return text


def spark_like(draw: st.DrawFn, rows: int) -> list[str | None]:
    """``rows`` values, most in one shared layout (as one writer emits them), some not."""
    template = draw(stats_objects())
    out: list[str | None] = []
    for _ in range(rows):
        if draw(st.integers(0, 9)) == 0:
            out.append(draw(stats_texts()))
        else:
            obj = {k: _refill(draw, k, v, k == "nullCount") for k, v in template.items()}
            out.append(_dump(obj, ensure_ascii=False, separators=(",", ":")))
    return out


_NESTED: dict[str, st.SearchStrategy[Any]] = {"a": _INTS, "c": _TEXT}


def _refill(draw: st.DrawFn, key: str, value: Any, counts: bool) -> Any:
    """``value`` with new leaf values of the same layout."""
    if isinstance(value, dict):
        return {k: _refill(draw, k, v, counts) for k, v in value.items()}
    if counts or key == "numRecords":
        return draw(_INTS)
    strategy = _LEAF.get(key, _NESTED.get(key, _ODD))
    return draw(strategy)
