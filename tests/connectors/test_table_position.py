"""A table source's position for a savepoint written from tables (``fw.write_savepoint`` without ``from_savepoint``,
issue 50): ``Source.position_at``. No Spark: "beginning" asks nothing, "now" asks a real PostgreSQL server (the run's,
tests/conftest.py) for the table's greatest ``order_by``, compared with a model of the rows present on random inserts
and deletes. The restore of such a savepoint is tested in tests/streaming/test_table_source.py.
"""

from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, example, given, settings
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


#: A changes source's records: the table's columns, then each change's own (``values.changes``).
CHANGES = T.StructType(SCHEMA.fields + [T.StructField("op", T.StringType()), T.StructField("lsn", T.LongType()),
                                        T.StructField("seq", T.IntegerType()),
                                        T.StructField("commit_time", T.TimestampType())])


def _changes(url: str, table: str) -> ChangesSource:
    return ChangesSource({"url": url, "table": table, "keys": ["k"], "event_time": None, "delay_ms": None}, CHANGES)


def test_a_table_changes_source_s_beginning_is_no_slot_yet_and_now_asks_the_server_in_one_line():
    """Their beginning asks the server nothing and holds no slot (a restore makes the job's, below): every check a
    savepoint's load makes passes; "now" makes a slot on the server: one that cannot be reached is one line."""
    source = _changes(UNREACHABLE, "rates")
    position = source.position_at(now=False)
    assert position == {"format": 1, "table": "rates", "slot": None, "lsn": None, "rows": None}
    assert ChangesSource.check_position(position, "written", AssertionError) == position
    fields = source.position_fields(position)
    assert fields == {"read_lsn": None}
    accepted, ok = ChangesSource.POSITION_FIELDS["read_lsn"]
    assert ok(fields["read_lsn"]) and accepted.startswith("null (nothing read yet) or an LSN")
    ChangesSource.check_position_fields(fields, position, "written", AssertionError)
    for parallelism in (1, 2, 3):
        ChangesSource.check_splits(source.position_snapshots(position, parallelism), position, "written",
                                   AssertionError)
    assert source.same_place(position) is None
    assert ChangesSource.position_in_words(position) == "changes of table 'rates' not read yet (a restore makes its slot)"
    with pytest.raises(FullWindowError) as refused:
        source.position_at(now=True)
    assert str(refused.value).startswith(f"the job cannot read the changes of 'rates' at {UNREACHABLE}: ")
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("doc", [
    {"format": 1, "table": "rates", "slot": None, "lsn": "0/15", "rows": None},  # an LSN without its slot
    {"format": 1, "table": "rates", "slot": "fw_sp_0a", "lsn": None, "rows": None},  # a slot without its LSN
    {"format": 1, "table": "rates", "slot": None, "lsn": None, "rows": 3},
    {"format": 1, "table": "rates", "slot": None, "lsn": None, "rows": None, "unread": True},
])
def test_a_position_half_unread_is_refused_in_one_line(doc):
    with pytest.raises(AssertionError, match=r"^the table changes source's position written is not one fw-magics "
                                             r"wrote \(format 1\)$"):
        ChangesSource.check_position(doc, "written", AssertionError)


def test_a_job_s_own_position_file_must_name_its_slot(tmp_path):
    """The position of nothing read is a savepoint's only: a job's ``source/changes.json`` without a slot is refused."""
    from fw_magics.connectors.postgres_cdc.source import ChangesPosition
    from fw_magics.errors import JobStorageError

    ChangesPosition(str(tmp_path)).write({"format": 1, "table": "rates", "slot": None, "lsn": None, "rows": None})
    with pytest.raises(JobStorageError, match="is not one fw-magics wrote"):
        ChangesPosition(str(tmp_path)).read()


def test_restoring_a_table_changes_source_s_beginning_makes_the_job_s_slot_at_a_snapshot_read_first(postgres,
                                                                                                   tmp_path):
    """The restore of an unread position lays the job out as a first start without a backlog does: its slot made
    at one snapshot of the table (the rows present, staged in its folder), the stream to read them first
    (``unread``), then the changes after the slot's consistent point. Nothing was on the server before."""
    import pyarrow.parquet as pq

    from fw_magics.connectors.postgres_cdc import slot as slots
    from fw_magics.connectors.postgres_cdc.source import ChangesPosition, drop_slot

    name = f"unread_{uuid.uuid4().hex[:8]}"
    postgres.sql(f"CREATE TABLE {name} (k bigint PRIMARY KEY, v bigint)")
    root = str(tmp_path / "job")
    try:
        postgres.sql(f"INSERT INTO {name} VALUES (%s, %s)", [(1, 10), (2, 20), (3, 30)])
        source = _changes(postgres.url, name)
        position = source.position_at(now=False)
        assert slots.status(postgres.url, slots.slot_name(root)) is None
        for parallelism in (1, 3):
            assert source.restore_position(root, source.position_snapshots(position, 2), position, parallelism) == {}
            laid = ChangesPosition(root).read()
            assert (laid["slot"], laid["rows"], laid["unread"]) == (slots.slot_name(root), 3, True)
            assert slots.status(postgres.url, laid["slot"]) is not None
            staged = pq.read_table(ChangesPosition(root).snapshot).select(["k", "v"]).to_pylist()
            assert sorted((r["k"], r["v"]) for r in staged) == [(1, 10), (2, 20), (3, 30)]
        assert "holds the replication slot" in source.kept_on_server(root)
    finally:
        drop_slot(postgres.url, slots.slot_name(root))
        postgres.sql(f"DROP TABLE {name}")


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


#: Changes after a savepoint's write: (key, a value to upsert it with, or None to delete it).
AFTER = st.lists(st.tuples(st.integers(0, 5), st.one_of(st.none(), st.integers(-9, 9))), max_size=6)


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=st.dictionaries(st.integers(0, 5), st.integers(-9, 9), max_size=4), after=AFTER)
@example(before={1: 1, 2: 2}, after=[(1, 5), (2, None), (3, 3), (3, None)])  # each kind of change after the write
def test_now_over_the_changes_is_a_slot_at_the_write_that_gives_exactly_the_changes_after_it_as_the_model(
        postgres, before, after):
    """"now" makes the table's publication, then a slot at its consistent point, both named as a savepoint's slot:
    the rows present at the write are not in it, each change committed after it is, in commit order, as the model
    says (``REPLICA IDENTITY FULL``: an update's and a delete's old row too); every check a savepoint's load makes
    passes, and ``discard_position`` drops the slot and its publication. No Spark: the slot peeked, decoded."""
    from fw_magics.connectors.postgres_cdc import pgoutput
    from fw_magics.connectors.postgres_cdc import slot as slots
    from fw_magics.values.changes import lsn_value

    name = f"now_{uuid.uuid4().hex[:8]}"
    postgres.sql(f"CREATE TABLE {name} (k bigint PRIMARY KEY, v bigint)")
    postgres.sql(f"ALTER TABLE {name} REPLICA IDENTITY FULL")
    source = _changes(postgres.url, name)
    position = None
    try:
        if before:
            postgres.sql(f"INSERT INTO {name} VALUES (%s, %s)", sorted(before.items()))
        position = source.position_at(now=True)
        slot = position["slot"]
        assert position == {"format": 1, "table": name, "slot": slot, "lsn": position["lsn"], "rows": None,
                            "publication": slot} and slot.startswith("fw_sp_")
        assert ChangesSource.check_position(position, "written", AssertionError) == position
        ChangesSource.check_position_fields(source.position_fields(position), position, "written", AssertionError)
        for parallelism in (1, 3):
            ChangesSource.check_splits(source.position_snapshots(position, parallelism), position, "written",
                                       AssertionError)
        assert slots.status(postgres.url, slot)["confirmed"] == lsn_value(position["lsn"])
        assert [r[0] for r in postgres.sql(f"SELECT tablename FROM pg_publication_tables WHERE pubname = '{slot}'")] \
            == [name]
        table, expected = dict(before), []
        for k, v in after:  # each its own transaction
            if v is None and k in table:
                postgres.sql(f"DELETE FROM {name} WHERE k = {k}")
                expected.append(("delete", k, table.pop(k)))
            elif v is not None and k in table:
                postgres.sql(f"UPDATE {name} SET v = {v} WHERE k = {k}")
                expected += [("update_before", k, table[k]), ("update_after", k, v)]
                table[k] = v
            elif v is not None:
                postgres.sql(f"INSERT INTO {name} VALUES ({k}, {v})")
                expected.append(("insert", k, v))
                table[k] = v
        with slots.connect(postgres.url) as conn:
            upto = slots.last_commit(conn, slot, slot, name)
            found = [] if upto is None else slots.messages(conn, slot, slot, upto, name)
        got = [(c.op, int(c.values[0]), int(c.values[1])) for t in pgoutput.transactions(found) for c in t.changes]
        assert got == expected
    finally:
        if position is not None:
            source.discard_position(position)
            assert slots.status(postgres.url, position["slot"]) is None
            assert postgres.sql(f"SELECT count(*) FROM pg_publication WHERE pubname = '{position['slot']}'") == [(0,)]
        postgres.sql(f"DROP TABLE {name}")
