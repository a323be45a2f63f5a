"""Every valid line builds the same job as the equivalent Python API calls.

Compared twice: Spark's physical plan (ids normalized) and the records of each partition.
The lines and the API calls are written independently here, not derived from each other.
"""

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

import fw_magics as fw
from fw_magics.magics import build, grammar
from tests.datastream.helpers import SPARK_SETTINGS, spark_examples
from tests.magics.conftest import ORDERS, ORDERS_SCHEMA, normalized_plan, ok

pytestmark = [pytest.mark.spark, pytest.mark.core]


# Functions the lines name. Deterministic whatever order records arrive in (after a hash
# exchange it varies between runs), so two runs of the same plan give the same records.
def top_two(records):
    return sorted(records, key=lambda r: repr(tuple(r)))[:2]


def larger(a, b):
    return max(a, b, key=lambda r: repr(tuple(r)))


class CountAgg(fw.AggregateFunction):
    schema = "n long"

    def create_accumulator(self):
        return 0

    def add(self, record, n):
        return n + 1

    def get_result(self, n):
        return n


@pytest.fixture(scope="module")
def names(shell, spark):
    shell.user_ns.update(
        top_two=top_two, larger=larger, CountAgg=CountAgg, count_agg=CountAgg(), spark=spark, pd=pd,
        frame=spark.createDataFrame(ORDERS, ORDERS_SCHEMA).repartition(2, "id"),
        table=pd.DataFrame(ORDERS, columns=["id", "customer", "price", "qty"]),
    )
    return shell.user_ns


def records(stream):
    """Each partition's records, as a sorted list (ties in a sort may come in any order)."""
    return [sorted(repr(tuple(r)) for r in partition) for partition in stream.collect_partitions()]


def assert_same_job(made, expected):
    assert normalized_plan(made.to_dataframe()) == normalized_plan(expected.to_dataframe())
    assert records(made) == records(expected)


def magic(shell, line, source="orders"):
    ok(shell, f"%%fullwindow {line} -o made\n{source};")
    return shell.user_ns["made"]


# -- generated pipelines -------------------------------------------------------------------

FIELDS = [0, 1, 2, 3, "id", "customer", "price", "qty"]
sorts = st.lists(st.tuples(st.sampled_from(FIELDS), st.sampled_from(["asc", "desc"])), min_size=1, max_size=2).map(
    lambda keys: (
        "sort " + " ".join(f"field={f} {o}" for f, o in keys),
        lambda w: w.sort_partition([f for f, _ in keys], [o for _, o in keys]),
    )
)
middle = st.one_of(
    sorts,
    st.just(("map fn=top_two", lambda w: w.map_partition(top_two))),
    st.just(("reduce fn=larger", lambda w: w.reduce(larger))),
)
CALLS = [  # (text, Spark column, made once a session exists)
    ("sum(qty)", lambda: F.sum("qty")), ("count()", lambda: F.count("*")),
    ("max(price)", lambda: F.max("price")), ("min(customer)", lambda: F.min("customer")),
]
last = st.one_of(
    middle,
    st.just(("aggregate fn=CountAgg", lambda w: w.aggregate(CountAgg))),
    st.lists(st.sampled_from(CALLS), min_size=1, max_size=3, unique_by=lambda c: c[0]).map(
        lambda calls: ("aggregate " + " ".join(t for t, _ in calls), lambda w: w.aggregate([make() for _, make in calls]))
    ),
)
pipelines = st.tuples(st.lists(middle, max_size=2), last, st.sampled_from([None, "customer"]))


@settings(SPARK_SETTINGS, max_examples=spark_examples(8))
@given(pipelines)
def test_generated_lines_build_the_api_job(shell, names, pipeline):
    stages, final, key = pipeline
    stages = stages + [final]
    line = " | ".join(text for text, _ in stages) + (f" key={key}" if key else "")
    expected = names["orders"]
    for _, apply in stages:
        window = expected.key_by(key).full_window_partition() if key else expected.full_window_partition()
        expected = apply(window)
    assert_same_job(magic(shell, line), expected)


# -- hand-picked lines, other inputs, and what --explain prints ----------------------------

CASES = [
    ('sort field="price" desc field=0', "frame",
     lambda ns: fw.from_dataframe(ns["frame"]).full_window_partition().sort_partition(["price", 0], ["desc", "asc"])),
    ("sort field=price", "table", lambda ns: fw.from_pandas(ns["table"]).full_window_partition().sort_partition("price")),
    ('map fn="lambda rs: [(sum(r.qty for r in rs),)]" schema="total long"', "orders",
     lambda ns: ns["orders"].full_window_partition().map_partition(lambda rs: [(sum(r.qty for r in rs),)], "total long")),
    ("aggregate percentile_approx(price, 1) count_distinct(id, qty) first(price, true) key=customer", "orders",
     lambda ns: ns["orders"].key_by("customer").full_window_partition().aggregate(
         [F.percentile_approx("price", 1), F.count_distinct("id", "qty"), F.first("price", True)])),
    ('aggregate fn=count_agg schema="m long" | sort field=m', "orders",
     lambda ns: ns["orders"].full_window_partition().aggregate(ns["count_agg"], schema="m long")
     .full_window_partition().sort_partition("m")),
]


@pytest.mark.parametrize("line, source, api", CASES, ids=[c[0] for c in CASES])
def test_hand_picked_lines_build_the_api_job(shell, names, line, source, api):
    made = magic(shell, line, source)
    assert_same_job(made, api(names))
    # --explain's Python code, run, builds the same job as well
    built = build.build(grammar.parse(line), build.as_stream(names[source], source), names)
    namespace = dict(names)
    exec(build.python_code(built, source, names[source]), namespace)
    assert normalized_plan(namespace["ds"].to_dataframe()) == normalized_plan(made.to_dataframe())


def test_explained_pyspark_sort_gives_the_same_records(shell, names):
    line = "sort field=2 desc field=customer key=customer"
    built = build.build(grammar.parse(line), names["orders"], names)
    namespace = dict(names)
    exec(build.pyspark_code(built, "orders", names["orders"]), namespace)
    hand_written = [[tuple(r) for r in p] for p in fw.from_dataframe(namespace["df"]).collect_partitions()]
    assert hand_written == [[tuple(r) for r in p] for p in built.result.collect_partitions()]
