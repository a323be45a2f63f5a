"""Columns whose names PySpark's Arrow UDFs cannot take as they are ("a.b", back-ticks).

The oracle: every operation on such a stream gives what it gives on the same data under
plain names, and the output keeps the awkward names.
"""

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql import functions as F

import fw_magics as fw
from fw_magics.datastream.physical.arrow_calls import _renamed_reference
from fw_magics.values.schema import _quote

# PySpark's slip is in the classic DataFrame (its Arrow UDFs take the column "a.b" for a
# nested field); under Spark Connect a few cases check the stand-ins do no harm there.
CONNECT_TOO = {"keyed map_partition", "non-keyed reduce", "keyed aggregate(Spark columns)"}

AWKWARD = ["a.b", "p`q", "s", "n.x"]
PLAIN = ["a_b", "p_q", "s", "n_x"]
ROWS = [(1, 2.0, "x", (7,)), (2, 3.0, "y", None), (1, 5.0, "z", (9,)), (3, None, None, (1,)),
        (2, 4.0, "w", (2,))]


def schema(names):
    a, p, s, n = (_quote(name) for name in names)
    return f"{a} long, {p} double, {s} string, {n} struct<`v.w`: int>"


class Total(fw.AggregateFunction):
    def __init__(self, column):
        self.columns = [column]
        self.column = column

    def create_accumulator(self):
        return 0.0

    def add(self, value, acc):
        return acc + (value.get(self.column) or 0.0)

    def get_result(self, acc):
        return (acc,)

    def merge(self, a, b):
        return a + b


def operations(names):
    """{label: stream -> result stream}: every operation, keyed and not, and the key kinds."""
    a, p, _, n = names

    def later(x, y):
        return x if (x[1] or 0) >= (y[1] or 0) else y

    ops = {
        "map_partition": lambda w: w.map_partition(lambda rs: ((r[0], r.get(p)) for r in rs), "k long, v double"),
        "sort_partition": lambda w: w.sort_partition(p),
        "reduce": lambda w: w.reduce(later),
        "aggregate(AggregateFunction)": lambda w: w.aggregate(Total(p), "t double"),
        "aggregate(Spark columns)": lambda w: w.aggregate([F.sum(F.col(_quote(p))).alias("t`t"), F.count("*").alias("c.c")]),
    }
    cases = {}
    for op_name, op in ops.items():
        cases[f"non-keyed {op_name}"] = lambda ds, op=op: op(ds.full_window_partition())
        cases[f"keyed {op_name}"] = lambda ds, op=op: op(ds.key_by(a).full_window_partition())
    cases["keyed by a struct column, reduce"] = lambda ds: ops["reduce"](ds.key_by(n).full_window_partition())
    cases["keyed by a selector, map_partition"] = lambda ds: ops["map_partition"](
        ds.key_by(lambda r: r[0] % 2).full_window_partition())
    cases["sort by a selector"] = lambda ds: ds.full_window_partition().sort_partition(lambda r: -(r[1] or 0))
    return cases


def frozen(partitions):
    return [sorted(map(repr, map(tuple, part))) for part in partitions]


@pytest.fixture(scope="module")
def streams(spark):
    return {
        tuple(names): fw.from_records(ROWS, schema(names), partitions=3, name="names") for names in (AWKWARD, PLAIN)
    }


@pytest.mark.spark
@pytest.mark.parametrize("label", [
    pytest.param(label, marks=[pytest.mark.core] if label in CONNECT_TOO else []) for label in operations(PLAIN)
])
def test_an_operation_gives_what_it_gives_under_plain_names(streams, label):
    awkward = operations(AWKWARD)[label](streams[tuple(AWKWARD)])
    plain = operations(PLAIN)[label](streams[tuple(PLAIN)])
    got = awkward.collect_partitions()
    assert frozen(got) == frozen(plain.collect_partitions())
    expected_names = [{"a_b": "a.b", "p_q": "p`q", "n_x": "n.x"}.get(f, f) for f in plain.schema.names]
    assert awkward.schema.names == expected_names
    assert awkward.to_dataframe().columns == expected_names


@pytest.mark.spark
@pytest.mark.core
def test_execute_commits_and_reads_back_awkward_names(streams, tmp_path):
    ds = streams[tuple(AWKWARD)]
    stream = ds.key_by("a.b").full_window_partition().sort_partition("p`q")
    result = fw.execute(stream, job_dir=str(tmp_path), job_name="names")
    assert frozen(result.collect_partitions()) == frozen(stream.collect_partitions())
    assert result.to_dataframe().columns == AWKWARD


@given(st.lists(st.text(min_size=1, max_size=6), min_size=1, max_size=3), st.data())
def test_a_reference_gets_its_top_level_column_replaced(path, data):
    renames = {path[0]: "__fw_col0"} if data.draw(st.booleans()) else {}
    reference = ".".join(_quote(part) for part in path)
    expected = ".".join([renames.get(path[0], _quote(path[0])), *(_quote(part) for part in path[1:])])
    assert _renamed_reference(reference, renames) == expected
