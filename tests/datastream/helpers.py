"""Shared helpers for the stream tests."""

from __future__ import annotations

import contextlib
import io
import os

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from tests.examples import examples

#: Under Spark Connect (``make test``'s second run, the core cases) the same properties run
#: again on the same code paths above the engine: a third of the examples there shows the
#: API behaves the same under Connect, and the classic run carries the breadth.
CONNECT = bool(os.environ.get("SPARK_REMOTE"))


def spark_examples(classic: int) -> int:
    """How many examples a Spark-backed property runs: ``classic`` (scaled as tests/examples.py says), or a
    third of it (>= 2) under Connect."""
    classic = examples(classic)
    return max(2, classic // 3) if CONNECT else classic


SPARK_SETTINGS = settings(
    max_examples=spark_examples(12), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

SCHEMA = "id long, name string, price double, qty int"

longs = st.integers(min_value=-(2**63), max_value=2**63 - 1)
small = st.integers(min_value=-1000, max_value=1000)
texts = st.text(max_size=8)  # unicode, empty strings, NUL included
prices = st.floats(allow_nan=False, allow_infinity=False, width=64) | st.none()


def record(ids=longs):
    return st.tuples(ids, texts | st.none(), prices, st.integers(0, 5) | st.none())


def partitioned(ids=longs, max_partitions=4, max_records=12):
    """A list of partitions, each a list of records (empty partitions likely)."""
    return st.lists(st.lists(record(ids), max_size=max_records), min_size=1, max_size=max_partitions)


def flatten(partitions):
    return [r for p in partitions for r in p]


def plan_text(frame) -> str:
    """The physical plan Spark prints for a DataFrame (works under Spark Connect too)."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        frame.explain(mode="simple")
    return buffer.getvalue()


def tuples(partitions):
    return [[tuple(r) for r in p] for p in partitions]
