"""Floats in previews read as pandas shows them (issue 17, item 10): pandas itself is the reference."""

import math

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fw_magics.datastream.preview import _text
from fw_magics.values.text import float_text


def pandas_text(value: float) -> str:
    """How pandas shows ``value`` in a Series or DataFrame (its index beside it, as in a notebook)."""
    return pd.Series([value], dtype="float64").to_string().split(maxsplit=1)[1].strip()


@pytest.mark.parametrize("value, text", [
    (59.291999999999994, "59.292"), (42.093333333333334, "42.093333"), (11.5, "11.5"), (0.1 + 0.2, "0.3"),
    (1e-10, "1.000000e-10"), (1234567.0, "1234567.0"), (1e16, "1.000000e+16"), (-0.0, "-0.0"),
    (float("nan"), "NaN"), (float("-inf"), "-inf"), (1e-6, "0.000001"), (5e-7, "5.000000e-07"),
    (1000000.5625, "1.000001e+06"),
])
def test_hand_picked_floats_read_as_in_pandas(value, text):
    assert float_text(value) == text == pandas_text(value)


@settings(max_examples=400, deadline=None)
@given(st.floats(allow_nan=True, allow_infinity=True) | st.floats(-1e7, 1e7) | st.floats(-1e-5, 1e-5))
def test_any_float_reads_as_in_pandas(value):
    assert float_text(value) == pandas_text(value)


def test_pandas_precision_is_followed():
    with pd.option_context("display.precision", 2):
        assert float_text(59.291999999999994) == "59.29" == pandas_text(59.291999999999994)
    assert float_text(2 / 3) == "0.666667"


def test_the_preview_cells_use_it_also_inside_records_and_lists():
    assert _text(59.291999999999994) == "59.292"
    assert _text([0.1 + 0.2, None]) == "[0.3, null]"
    assert _text({"avg": 1 / 3}) == "{avg: 0.333333}"
    assert _text(True) == "True" and _text(7) == "7" and math.isclose(float(_text(2.5)), 2.5)
