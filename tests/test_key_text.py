"""A key typed in the state inspector, read by its key columns' Spark types (values/key_text.py). No Spark."""

from __future__ import annotations

import datetime as dt
import decimal
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fw_magics.errors import FullWindowError
from fw_magics.values.key_text import key_text, parse_key

#: Each typeable key column type and a strategy of its values (None: a null key value).
VALUES = {
    "tinyint": st.integers(-128, 127),
    "int": st.integers(-(2 ** 31), 2 ** 31 - 1),
    "bigint": st.integers(-(2 ** 63), 2 ** 63 - 1),
    "double": st.floats(allow_nan=True, allow_infinity=True),
    "float": st.floats(width=32, allow_nan=False),
    "boolean": st.booleans(),
    "decimal(6,2)": st.decimals(min_value=-9999, max_value=9999, places=2, allow_nan=False, allow_infinity=False),
    "date": st.dates(),
    "timestamp": st.datetimes(timezones=st.just(dt.timezone.utc)),
    "timestamp_ntz": st.datetimes(),
    "string": st.text(max_size=8),
}


def _same(a, b) -> bool:
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if isinstance(a, float):  # -0.0 is not 0.0 for a key
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return a == b and type(a) is type(b)


@st.composite
def keys(draw):
    types = draw(st.lists(st.sampled_from(sorted(VALUES)), min_size=1, max_size=3))
    nullable = len(types) > 1  # one column's null is not typed (a JSON list of several is)
    values = [draw(st.none() | VALUES[t]) if nullable else draw(VALUES[t]) for t in types]
    return types, values


@settings(max_examples=200, deadline=None)
@given(keys())
def test_a_keys_text_reads_back_as_the_key(found):
    """key_text (what the pick list offers) is read back by parse_key as the same values, for every type."""
    types, values = found
    names = [f"c{i}" for i in range(len(types))]
    back = parse_key(key_text(values), names, types)
    assert all(_same(a, b) for a, b in zip(values, back)), (key_text(values), values, back)


@pytest.mark.parametrize("text, types, expected", [
    ("7", ["bigint"], (7,)),
    (" alice ", ["string"], ("alice",)),
    ('" alice "', ["string"], (" alice ",)),
    ("7, alice", ["bigint", "string"], (7, "alice")),
    ('[7, "a, b"]', ["bigint", "string"], (7, "a, b")),
    ("[7, null]", ["bigint", "string"], (7, None)),
    ("NaN", ["double"], (math.nan,)),
    ("-0.0", ["double"], (-0.0,)),
    ("TRUE", ["boolean"], (True,)),
    ("12.50", ["decimal(6,2)"], (decimal.Decimal("12.50"),)),
    ("2024-02-29", ["date"], (dt.date(2024, 2, 29),)),
    ("2024-01-01T10:00:00+01:00", ["timestamp"], (dt.datetime(2024, 1, 1, 9, tzinfo=dt.timezone.utc),)),
])
def test_typed_keys(text, types, expected):
    found = parse_key(text, [f"c{i}" for i in range(len(types))], types)
    assert all(_same(a, b) or a == b for a, b in zip(found, expected)), found


@pytest.mark.parametrize("text, types, said", [
    ("x", ["bigint"], "'x' is not a bigint for key column 'c0'; accepted: a value of c0 (bigint)"),
    ("300", ["tinyint"], "'300' is not a tinyint"),
    ("1.234", ["decimal(6,2)"], "is not a decimal(6,2)"),
    ("yes", ["boolean"], "is not a boolean"),
    ("2024-13-01", ["date"], "is not a date"),
    ("7", ["bigint", "string"], "1 value for 2 key columns; accepted: the values of c0 (bigint), c1 (string), "
                                "in this order, separated by commas (or a JSON list)"),
    ("7, a, b", ["bigint", "string"], "3 values for 2 key columns"),
    ("[7, ", ["bigint", "string"], "not a JSON list of values"),
    ("00", ["binary"], "key column 'c0' is a binary, which a key cannot be typed as; accepted key column types:"),
])
def test_a_bad_key_is_one_line_naming_the_value_and_what_is_accepted(text, types, said):
    with pytest.raises(FullWindowError) as refused:
        parse_key(text, [f"c{i}" for i in range(len(types))], types)
    assert said in str(refused.value) and "\n" not in str(refused.value)
