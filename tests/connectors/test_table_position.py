"""A table source's position for a savepoint written from tables (``fw.write_savepoint`` without ``from_savepoint``,
issue 50): ``Source.position_at``. No Spark: "beginning" asks nothing, "now" asks a real PostgreSQL server (the run's,
tests/conftest.py) for the table's greatest ``order_by``, compared with a model of the rows present on random inserts
and deletes. The restore of such a savepoint is tested in tests/streaming/test_table_source.py.
"""

from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import types as T

from fw_magics.connectors.postgres.source import TableSource, check_table_position
from fw_magics.connectors.postgres_cdc.source import ChangesSource
from fw_magics.errors import FullWindowError

SCHEMA = T.StructType([T.StructField("k", T.LongType()), T.StructField("v", T.LongType())])
UNREACHABLE = "postgresql://fw@127.0.0.1:1/postgres"


def _source(url: str, table: str) -> TableSource:
    return TableSource({"url": url, "table": table, "order_by": "id", "event_time": None, "delay_ms": None}, SCHEMA)


def _restorable(source: TableSource, position: dict) -> None:
    """Every check a savepoint's load and a restore make of a table position (its codec, its splits at 1 to 3
    subtasks, its document's field) passes: nothing raised."""
    check_table_position(position, "written", AssertionError)
    TableSource.check_position_fields(source.position_fields(position), position, "written", AssertionError)
    for parallelism in (1, 2, 3):
        TableSource.check_splits(source.position_snapshots(position, parallelism), position, "written", AssertionError)
    assert source.same_place(position) is None


def test_beginning_is_nothing_read_and_asks_no_server():
    source = _source(UNREACHABLE, "rates")
    position = source.position_at(now=False)
    assert position == {"format": 1, "table": "rates", "through": None, "rows": None}
    assert TableSource.position_in_words(position) == "table 'rates' read through None"
    _restorable(source, position)


def test_now_over_a_server_that_cannot_be_reached_is_one_line_naming_the_table():
    with pytest.raises(FullWindowError) as refused:
        _source(UNREACHABLE, "rates").position_at(now=True)
    assert str(refused.value).startswith(f"the job cannot read 'rates' at {UNREACHABLE}: ")
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("now", [False, True])
def test_a_table_changes_source_refuses_either_in_one_line_naming_the_table(now):
    source = ChangesSource({"url": UNREACHABLE, "table": "rates", "keys": ["k"], "event_time": None,
                            "delay_ms": None}, SCHEMA)
    with pytest.raises(FullWindowError) as refused:
        source.position_at(now)
    assert str(refused.value) == (
        "write_savepoint without from_savepoint over the changes of 'rates': their position is a replication slot "
        "made at a snapshot, which a savepoint written from tables does not hold; accepted: from_savepoint=a "
        "savepoint of the job (taken after its first micro-batch)")


#: Steps on the table: ("insert", n rows) or ("delete", the i-th present row, counted modulo how many there are).
STEPS = st.lists(st.tuples(st.sampled_from(["insert", "delete"]), st.integers(0, 4)), max_size=6)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=STEPS)
def test_now_is_every_row_present_read_through_the_greatest_order_by_as_the_model(postgres, steps):
    """The model: the ids present (a bigserial gives 1, 2, ... and never one again); "now" reads through the
    greatest (None for an empty table, the same as "beginning"), whichever rows were deleted."""
    name = f"position_{uuid.uuid4().hex[:8]}"
    postgres.sql(f"CREATE TABLE {name} (id bigserial PRIMARY KEY, k bigint, v bigint)")
    try:
        present, issued = [], 0
        for step, n in steps:
            if step == "insert" and n:
                postgres.sql(f"INSERT INTO {name} (k, v) VALUES (%s, %s)", [(i, i) for i in range(n)])
                present, issued = present + list(range(issued + 1, issued + n + 1)), issued + n
            elif step == "delete" and present:
                gone = present.pop(n % len(present))
                postgres.sql(f"DELETE FROM {name} WHERE id = {gone}")
        source = _source(postgres.url, name)
        position = source.position_at(now=True)
        assert position == {"format": 1, "table": name, "through": max(present, default=None), "rows": None}
        if not present:
            assert position == source.position_at(now=False)
        _restorable(source, position)
    finally:
        postgres.sql(f"DROP TABLE {name}")
