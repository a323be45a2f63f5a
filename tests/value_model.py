"""A pure-Python reference model: does a Spark column accept a Python value, and what is stored?

Written independently of fw_magics.values.convert (numpy for float rounding, Decimal.quantize for
decimals, plain bounds for integers), from the rules documented there. ``stored(value,
dtype, nullable)`` returns the value Arrow should hold (as ``to_pylist`` gives it back) or
raises ``Refused``. Plus hypothesis strategies of Spark types and of values near them.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import warnings
from decimal import Decimal

import numpy as np
from hypothesis import strategies as st
from pyspark.sql import types as T

UTC = dt.timezone.utc
BITS = {T.ByteType: 8, T.ShortType: 16, T.IntegerType: 32, T.LongType: 64}


class Refused(Exception):
    pass


def stored(value, dtype: T.DataType, nullable: bool = True):
    if value is None:
        if not nullable:
            raise Refused("null")
        return None
    kind = type(dtype)
    if kind in BITS:
        bits = BITS[kind]
        if type(value) is int:
            number = value
        elif type(value) is float:
            if math.isnan(value) or math.isinf(value) or math.floor(value) != value:
                raise Refused("not whole")
            number = int(value)
        elif type(value) is Decimal:
            if not value.is_finite() or value.as_integer_ratio()[1] != 1:
                raise Refused("not whole")
            number = int(value)
        else:
            raise Refused("type")
        if not -(2 ** (bits - 1)) <= number < 2 ** (bits - 1):
            raise Refused("range")
        return number
    if kind in (T.FloatType, T.DoubleType):
        single = kind is T.FloatType
        if type(value) is int:
            if abs(value) > (2**24 if single else 2**53):
                raise Refused("inexact")
            return float(np.float32(value)) if single else float(value)
        if type(value) is float:
            if not single:
                return value
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rounded = float(np.float32(value))
            if math.isinf(rounded) and not math.isinf(value):
                raise Refused("overflow")
            return rounded
        raise Refused("type")
    if kind is T.DecimalType:
        if type(value) is int:
            value = Decimal(value)
        elif type(value) is not Decimal or not value.is_finite():
            raise Refused("type")
        context = decimal.Context(prec=200)
        exact = value.quantize(Decimal(1).scaleb(-dtype.scale), context=context)
        if exact != value or exact.copy_abs() >= Decimal(10) ** (dtype.precision - dtype.scale):
            raise Refused("digits")
        return exact
    if kind is T.StringType:
        if type(value) is not str:
            raise Refused("type")
        return value
    if kind is T.BinaryType:
        if type(value) not in (bytes, bytearray):
            raise Refused("type")
        return bytes(value)
    if kind is T.BooleanType:
        if type(value) is not bool:
            raise Refused("type")
        return value
    if kind is T.DateType:
        if type(value) is dt.datetime:
            if value.time() != dt.time(0):
                raise Refused("time of day")
            return value.date()
        if type(value) is not dt.date:
            raise Refused("type")
        return value
    if kind is T.TimestampType:
        if type(value) is not dt.datetime:
            raise Refused("type")
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    if kind is T.TimestampNTZType:
        if type(value) is not dt.datetime:
            raise Refused("type")
        return value if value.tzinfo is None else value.astimezone(UTC).replace(tzinfo=None)
    if kind is T.ArrayType:
        if type(value) not in (list, tuple):
            raise Refused("type")
        return [stored(v, dtype.elementType, dtype.containsNull) for v in value]
    if kind is T.MapType:
        if type(value) is dict:
            pairs = list(value.items())
        elif type(value) is list and all(type(p) is tuple and len(p) == 2 for p in value):
            pairs = value
        else:
            raise Refused("type")
        return [(stored(k, dtype.keyType, False), stored(v, dtype.valueType, dtype.valueContainsNull)) for k, v in pairs]
    if kind is T.StructType:
        names = dtype.names
        if type(value) is tuple:
            if len(value) != len(names):
                raise Refused("width")
            values = list(value)
        elif type(value) is dict:
            if set(value) != set(names):
                raise Refused("keys")
            values = [value[n] for n in names]
        else:
            raise Refused("type")
        return {f.name: stored(v, f.dataType, f.nullable) for f, v in zip(dtype.fields, values)}
    raise AssertionError(f"no model for {dtype}")


def canonical(value):
    """Comparable form: NaN equals NaN, nested containers compared as lists."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, dict):
        return {k: canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    return value


# -- strategies ------------------------------------------------------------------------------

LEAVES = [T.ByteType(), T.ShortType(), T.IntegerType(), T.LongType(), T.FloatType(), T.DoubleType(),
          T.DecimalType(10, 2), T.DecimalType(38, 0), T.DecimalType(5, 5), T.StringType(), T.BinaryType(),
          T.BooleanType(), T.DateType(), T.TimestampType(), T.TimestampNTZType()]


@st.composite
def structs(draw, children):
    types = draw(st.lists(children, min_size=1, max_size=3))
    return T.StructType([T.StructField(f"f{i}", t, draw(st.booleans())) for i, t in enumerate(types)])


spark_types = st.recursive(
    st.sampled_from(LEAVES),
    lambda children: st.one_of(
        st.builds(T.ArrayType, children, st.booleans()),
        st.builds(T.MapType, st.sampled_from([T.StringType(), T.LongType()]), children, st.booleans()),
        structs(children),
    ),
    max_leaves=4,
)

timestamps = st.datetimes(min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2200, 1, 1))
decimals = st.one_of(
    st.integers(0, 6).flatmap(lambda places: st.decimals(min_value=-10**12, max_value=10**12, places=places)),
    st.sampled_from([Decimal("NaN"), Decimal("Infinity"), Decimal("1E+3"), Decimal("-0"), Decimal("1.50")]),
)
atoms = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), decimals, st.text(max_size=3), st.binary(max_size=3),
    st.dates(), timestamps, timestamps.map(lambda d: d.replace(tzinfo=UTC)),
    timestamps.map(lambda d: d.replace(tzinfo=dt.timezone(dt.timedelta(hours=-5)))),
)


def good(dtype: T.DataType):
    """Values ``dtype`` should accept (mostly: a random float is rarely a whole number)."""
    kind = type(dtype)
    if kind in BITS:
        high = 2 ** (BITS[kind] - 1)
        whole = st.integers(-high, high - 1)
        return st.one_of(whole, st.sampled_from([-high, high - 1]), st.integers(-(2**20), 2**20).map(float),
                         st.integers(-99, 99).map(Decimal))
    if kind in (T.FloatType, T.DoubleType):
        return st.one_of(st.floats(width=32), st.floats(-1e30, 1e30), st.integers(-(2**24), 2**24),
                         st.sampled_from([float("nan"), float("inf"), 3.4028235e38, 1e-50]))
    if kind is T.DecimalType:
        digits = dtype.precision - dtype.scale
        return st.one_of(st.decimals(min_value=-(10**digits) + 1, max_value=10**digits - 1, places=dtype.scale),
                         st.integers(-(10**digits) + 1, 10**digits - 1), st.sampled_from([Decimal("-0"), Decimal("0E+3")]))
    if kind is T.StringType:
        return st.text(max_size=4)
    if kind is T.BinaryType:
        return st.one_of(st.binary(max_size=4), st.binary(max_size=2).map(bytearray))
    if kind is T.BooleanType:
        return st.booleans()
    if kind is T.DateType:
        return st.one_of(st.dates(), st.dates().map(lambda d: dt.datetime(d.year, d.month, d.day)))
    if kind in (T.TimestampType, T.TimestampNTZType):
        return st.one_of(timestamps, timestamps.map(lambda d: d.replace(tzinfo=UTC)))
    if kind is T.ArrayType:
        element = values(dtype.elementType, wrong=1)
        return st.one_of(st.lists(element, max_size=3), st.lists(element, max_size=2).map(tuple))
    if kind is T.MapType:
        keys, items = values(dtype.keyType, wrong=1), values(dtype.valueType, wrong=1)
        return st.one_of(st.dictionaries(keys, items, max_size=2), st.lists(st.tuples(keys, items), max_size=2))
    if kind is T.StructType:
        fields = [values(f.dataType, wrong=1) for f in dtype.fields]
        return st.one_of(st.tuples(*fields), st.fixed_dictionaries(dict(zip(dtype.names, fields))))
    raise AssertionError(dtype)


def edges(dtype: T.DataType):
    """Values just past what ``dtype`` accepts (and some it still does)."""
    kind = type(dtype)
    if kind in BITS:
        high = 2 ** (BITS[kind] - 1)
        return st.one_of(st.sampled_from([-high - 1, high, float(high), float(-high), 2**64]),
                         st.floats(-2.0 * high, 2.0 * high), st.sampled_from([0.5, -1.25, float("nan"), float("inf")]),
                         st.sampled_from([Decimal("2.5"), Decimal(high), Decimal("NaN"), True]))
    if kind in (T.FloatType, T.DoubleType):
        return st.one_of(st.floats(), st.sampled_from([3.5e38, -1e39, 1e40, 2**24 + 1, 2**53, -(2**53) - 1, False]),
                         st.integers(-(2**54), 2**54), st.decimals(allow_nan=False, places=2, max_value=10, min_value=-10))
    if kind is T.DecimalType:
        return st.one_of(decimals, st.integers(-(10**40), 10**40), st.floats(-100, 100),
                         st.sampled_from([Decimal("1.2300"), Decimal("0E+10"), Decimal("1." + "0" * 45)]))
    if kind is T.StringType:
        return st.one_of(st.binary(max_size=2), st.integers())
    if kind is T.BinaryType:
        return st.text(max_size=2)
    if kind is T.BooleanType:
        return st.integers(0, 1)
    if kind is T.DateType:
        return timestamps
    if kind in (T.TimestampType, T.TimestampNTZType):
        return st.one_of(st.dates(), st.integers(0, 10), st.floats(0, 10))
    if kind is T.ArrayType:
        return st.one_of(st.text(max_size=2), st.sets(st.integers(), max_size=2), values(dtype.elementType))
    if kind is T.MapType:
        return st.one_of(st.lists(values(dtype.keyType), min_size=1, max_size=2), st.integers(),
                         st.dictionaries(st.none(), values(dtype.valueType), min_size=1, max_size=1))
    if kind is T.StructType:
        fields = [values(f.dataType) for f in dtype.fields]
        names = dtype.names
        return st.one_of(
            st.tuples(*fields).map(list),  # a list: Arrow would read pairs
            st.tuples(*fields, atoms),  # one value too many
            st.fixed_dictionaries(dict(zip(names[1:], fields[1:]))),  # a field missing
            st.fixed_dictionaries({**dict(zip(names, fields)), "extra": atoms}),
        )
    raise AssertionError(dtype)


def values(dtype: T.DataType, wrong: int = 2):
    """Out of 20 values: one None, ``wrong`` at an edge or of any type, the rest good."""

    def pick(i: int):
        if i == 0:
            return st.none()
        if i <= wrong:
            return atoms if i == 1 else edges(dtype)
        return good(dtype)

    return st.integers(0, 19).flatmap(pick)
