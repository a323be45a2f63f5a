"""Key-selector keys are encoded so that byte order equals Python order."""

import datetime as dt
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fw_magics.errors import FullWindowError
from fw_magics.values.keycodec import encode_key

numbers = st.integers(min_value=-(2**200), max_value=2**200) | st.floats(allow_nan=False) | st.booleans()
atoms = numbers | st.text() | st.binary() | st.dates() | st.datetimes()


def cmp(a, b):
    return (a > b) - (a < b)


@given(numbers, numbers)
def test_numbers_mixed_int_float_bool(a, b):
    assert cmp(encode_key(a), encode_key(b)) == cmp(a, b)


@given(st.text(), st.text())
def test_strings_by_code_point(a, b):
    assert cmp(encode_key(a), encode_key(b)) == cmp(a, b)


@given(st.binary(), st.binary())
def test_bytes(a, b):
    assert cmp(encode_key(a), encode_key(b)) == cmp(a, b)


@given(st.datetimes(), st.datetimes())
def test_datetimes(a, b):
    assert cmp(encode_key(a), encode_key(b)) == cmp(a, b)


@given(st.dates(), st.dates())
def test_dates(a, b):
    assert cmp(encode_key(a), encode_key(b)) == cmp(a, b)


tuples_ = st.tuples(st.integers(-5, 5) | st.floats(-5, 5), st.text(max_size=3), st.binary(max_size=2))


@given(st.lists(tuples_, max_size=3), st.lists(tuples_, max_size=3))
def test_nested_tuples_and_prefixes(a, b):
    ta, tb = tuple(a), tuple(b)
    assert cmp(encode_key(ta), encode_key(tb)) == cmp(ta, tb)


def test_equal_keys_encode_equally():
    assert encode_key(1) == encode_key(1.0) == encode_key(True)
    assert encode_key(0.0) == encode_key(-0.0)
    assert encode_key((1, "a")) == encode_key([1, "a"])


def test_none_first_and_nan_last():
    assert encode_key(None) < encode_key(-math.inf) < encode_key(math.inf) < encode_key(math.nan)


def test_huge_ints_order_beyond_float_range():
    assert encode_key(-(10**400)) < encode_key(-(10**300)) < encode_key(10**300) < encode_key(10**400)


def test_unsupported_type_is_one_line():
    with pytest.raises(FullWindowError, match="key selector returned dict .*sortable keys are None, bool, int"):
        encode_key({"a": 1})


def test_aware_datetimes_compare_in_utc():
    plus2 = dt.timezone(dt.timedelta(hours=2))
    a = dt.datetime(2024, 1, 1, 12, tzinfo=plus2)  # 10:00 UTC
    b = dt.datetime(2024, 1, 1, 11, tzinfo=dt.timezone.utc)
    assert encode_key(a) < encode_key(b)


@given(st.integers(min_value=-(2**3000), max_value=2**3000), st.integers(min_value=-(2**3000), max_value=2**3000))
def test_integers_of_any_size(a, b):
    assert cmp(encode_key(a), encode_key(b)) == cmp(a, b)
