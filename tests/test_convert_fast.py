"""The writer's fast path against its plain path (issue 52), pure Arrow, no Spark.

Rows of tuples (or lists) of the schema's width are transposed by one ``zip`` and each column
whose values all have the usual Python type goes to pyarrow in one call; the plain path
normalizes each row and the checks look at each value. Both must store exactly the same and
refuse exactly the same, with the same one-line message: mixed Python and numpy scalars, bools
among numbers (pyarrow's inference reads ``np.True_`` among ints as 1 and ``True`` after a float as
1.0, which is why columns are not checked by inference), NaN, -0.0, None in nullable and not-null
columns, big ints, rows of other widths and shapes.
"""

from __future__ import annotations

import decimal
import enum

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import types as T

from fw_magics.errors import FullWindowError
from fw_magics.values.convert import RowWriter
from fw_magics.values.schema import arrow_schema
from tests.examples import examples


class Size(enum.IntEnum):
    SMALL = 1


TYPES = [T.ByteType(), T.IntegerType(), T.LongType(), T.DoubleType(), T.StringType(), T.BooleanType()]
ATOMS = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**64), 2**64), st.integers(-300, 300), st.floats(),
    st.sampled_from([float("nan"), -0.0, 0.0, 2.0, Size.SMALL, decimal.Decimal(3), "", b"x", np.str_("s"),
                     np.int64(7), np.int8(-3), np.uint64(2**63), np.float64(2.0), np.bool_(True), np.float32(1.5)]),
    st.text(max_size=2),
)


def exact(value):
    """Comparable to the bit that matters: a float by its repr (NaN equals NaN, -0.0 is not 0.0)."""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, dict):
        return {k: exact(v) for k, v in value.items()}
    return value


def outcome(writer: RowWriter, rows: list):
    """What the writer stores, exactly, or the one line it refuses with."""
    try:
        return [exact(row) for row in writer.batch(rows).to_pylist()]
    except FullWindowError as error:
        return str(error)


def plain(writer: RowWriter) -> RowWriter:
    """The same writer with the fast path off: each row normalized, each column's checks look at each value."""
    for check in writer.checks:
        check.fast = frozenset()
    writer._columns = lambda rows: [list(c) for c in zip(*map(writer.normalize, rows))]
    return writer


def writers(fields: list[T.StructField]):
    schema = T.StructType(fields)
    make = lambda: RowWriter(arrow_schema(schema), [f.dataType for f in fields], "f")  # noqa: E731
    return make(), plain(make())


@settings(max_examples=examples(300), deadline=None)
@given(data=st.data())
def test_the_fast_paths_store_and_refuse_what_the_plain_path_does(data):
    fields = [T.StructField(f"c{i}", data.draw(st.sampled_from(TYPES)), data.draw(st.booleans()))
              for i in range(data.draw(st.integers(1, 3)))]
    rows = data.draw(st.lists(st.tuples(*[ATOMS] * len(fields)), min_size=1, max_size=6))
    fast, slow = writers(fields)
    assert outcome(fast, rows) == outcome(slow, rows)


@pytest.mark.parametrize("dtype, column", [
    (T.LongType(), [1, np.int64(2), Size.SMALL, None]),
    (T.IntegerType(), [1, np.int8(-3), -(2**31)]),
    (T.LongType(), [1, True]), (T.ByteType(), [0, np.True_]), (T.LongType(), [1, 2.5]), (T.LongType(), [2.0, 1]), (T.IntegerType(), [2**31]),
    (T.LongType(), [1, float("nan")]), (T.LongType(), [2**63]), (T.LongType(), [np.uint64(2**63)]),
    (T.StringType(), ["a", np.str_("b"), None]), (T.StringType(), ["a", b"b"]), (T.StringType(), [b"b", "a"]),
    (T.BooleanType(), [True, np.bool_(False)]), (T.BooleanType(), [True, 1]), (T.BooleanType(), [0, False]),
    (T.DoubleType(), [1.5, True]), (T.DoubleType(), [-0.0, float("nan"), 2**53, None]),
])
@pytest.mark.parametrize("nullable", [True, False])
def test_hand_picked_columns_agree(dtype, column, nullable):
    fast, slow = writers([T.StructField("a", dtype, nullable)])
    rows = [(v,) for v in column]
    assert outcome(fast, rows) == outcome(slow, rows)


def test_rows_of_other_shapes_take_the_plain_path():
    fields = [T.StructField("a", T.LongType()), T.StructField("b", T.StringType())]
    for rows in ([(1, "x"), (2, "y", 3)], [(1, "x"), [2, "y"]], [{"a": 1, "b": "x"}], [(1, "x"), {"b": "y", "a": 2}],
                 [(1, "x", 0), (2, "y", 0)], [(1,), (2,)], [[1, "x"], [2, "y"]]):
        fast, slow = writers(fields)
        assert outcome(fast, rows) == outcome(slow, rows)
