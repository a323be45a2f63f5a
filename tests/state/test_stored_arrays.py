"""stored_arrays: a column of stored state forms back to its Arrow array, against the encoder it inverts
(hypothesis over every storable type, nested, with nulls, NaN, infinities and -0.0)."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from fw_magics.values.codecs import encoder
from fw_magics.values.stored_arrays import storable, stored_array

UTC = dt.timezone.utc
_ATOMS = [
    (pa.bool_(), st.booleans()),
    (pa.int8(), st.integers(-2**7, 2**7 - 1)),
    (pa.int32(), st.integers(-2**31, 2**31 - 1)),
    (pa.int64(), st.integers(-2**63, 2**63 - 1)),
    (pa.string(), st.text(max_size=8)),
    (pa.float32(), st.floats(width=32)),
    (pa.float64(), st.floats()),
    (pa.date32(), st.dates()),
    (pa.timestamp("us", tz="UTC"), st.datetimes(timezones=st.just(UTC))),
    (pa.timestamp("us"), st.datetimes()),
    (pa.decimal128(12, 3), st.decimals(min_value=decimal.Decimal("-999999999.999"),
                                       max_value=decimal.Decimal("999999999.999"), places=3)),
]


def _typed(depth: int = 0):
    atoms = st.sampled_from(_ATOMS)
    if depth >= 2:
        return atoms

    def struct(parts):
        fields = [pa.field(f"f{i}", t) for i, (t, _) in enumerate(parts)]
        values = st.fixed_dictionaries({f"f{i}": st.none() | v for i, (_, v) in enumerate(parts)})
        return pa.struct(fields), values

    def listed(part):
        t, v = part
        return pa.list_(t), st.lists(st.none() | v, max_size=3)

    inner = _typed(depth + 1)
    return atoms | st.lists(inner, min_size=1, max_size=3).map(struct) | inner.map(listed)


@st.composite
def columns(draw):
    arrow_type, values = draw(_typed())
    return arrow_type, draw(st.lists(st.none() | values, max_size=12))


@settings(max_examples=300, deadline=None)
@given(columns())
def test_stored_forms_come_back_as_the_array_they_were_stored_from(column):
    arrow_type, values = column
    expected = pa.array(values, arrow_type)
    encode = encoder(arrow_type)
    forms = [encode(v) for v in expected.to_pylist()]
    assert storable(arrow_type)
    got = stored_array(forms, arrow_type)
    assert got.type == arrow_type
    assert repr(got.to_pylist()) == repr(expected.to_pylist())  # NaN as NaN, -0.0 as -0.0


def test_special_floats_and_negative_zero_by_hand():
    got = stored_array([1.5, "NaN", None, "Infinity", "-Infinity", -0.0, 3], pa.float64())
    assert repr(got.to_pylist()) == "[1.5, nan, None, inf, -inf, -0.0, 3.0]"


def test_types_not_stored_typed():
    for arrow_type in (pa.binary(), pa.map_(pa.string(), pa.int64()), pa.time64("us"), pa.duration("us"),
                       pa.struct([pa.field("b", pa.binary())]), pa.list_(pa.large_binary())):
        assert not storable(arrow_type)
