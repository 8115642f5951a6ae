"""``lakecore_lance.columns``: early 2.0 files whose fields do not start at consecutive columns."""

from __future__ import annotations

import pytest
from lakecore_lance.columns import FOOTER, in_order, shift_columns

from lakecore.errors import CorruptTableError

from ..corpus import CORPUS

TABLE = CORPUS / "lance" / "hist__0.13.0_string_encoding"


def test_in_order() -> None:
    assert in_order([]) and in_order([0, 1, 2])
    assert not in_order([0, 1, 3, 5])


def test_shift_lists_the_field_s_columns_first() -> None:
    if not TABLE.is_dir():
        pytest.skip(f"no corpus at {CORPUS}")
    (path,) = (TABLE / "data").iterdir()
    data = path.read_bytes()
    shifted = shift_columns(data, 2, 3, path.name)
    assert shifted[: len(data) - FOOTER.size] == data[: -FOOTER.size]  # pages untouched
    *_, columns, _, _, magic = FOOTER.unpack(shifted[-FOOTER.size :])
    assert (columns, magic) == (6 - 1, b"LANC")  # columns 0, 1 then 3, 4, 5
    with pytest.raises(CorruptTableError, match="column 9"):
        shift_columns(data, 2, 9, path.name)
    with pytest.raises(CorruptTableError, match="no Lance footer"):
        shift_columns(data[:-4] + b"XXXX", 2, 3, path.name)
    with pytest.raises(CorruptTableError, match="too short"):
        shift_columns(b"LANC", 0, 0, path.name)
