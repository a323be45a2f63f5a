"""fw.from_table: a PostgreSQL table as a source with a backlog (issue 32), against a real server.

The server is Debian's PostgreSQL, started for the run on loopback and stopped by its PID
(tests/postgres_server.py). Each test gets its own table; results are compared with the reference
model (tests/streaming/reference.py) on hand-picked and randomized rows.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import fw_magics as fw
from tests.state import reference_state
from tests.streaming import functions
from tests.streaming.files import BASE, TRIGGER, expected_latest, latest_rows, model, record
from tests.streaming.operator_functions import MODES, Tally
from tests.streaming.reference import Model

pytestmark = [pytest.mark.spark]


class Table:
    """One test's table: ``id bigserial`` (the order), then the test schema's k, v, ts."""

    def __init__(self, server, name: str):
        self.server, self.name = server, name

    def insert(self, rows) -> None:
        """rows: (k, v, seconds after 2024-01-01), inserted in one transaction, in order."""
        self.server.sql(f"INSERT INTO {self.name} (k, v, ts) VALUES (%s, %s, %s)",
                        [(k, v, BASE + dt.timedelta(seconds=s)) for k, v, s in rows])

    def source(self, **options):
        return fw.from_table(self.server.url, self.name, functions.SCHEMA, event_time="ts", **options)


@pytest.fixture
def table(postgres, area):
    name = f"readings_{uuid.uuid4().hex[:8]}"
    postgres.sql(f"CREATE TABLE {name} (id bigserial PRIMARY KEY, k bigint, v bigint, ts timestamptz)")
    yield Table(postgres, name)
    postgres.sql(f"DROP TABLE {name}")


BACKLOG = [(k, v, v) for k in range(6) for v in range(3)]
DURING = [(0, 5, 20), (7, 1, 21)]  # inserted right after start(): fresh, whether the backlog still runs or not
AFTER = [(0, 1, 30), (3, 2, 31)]  # after the switch
STOPPED = [(7, 4, 40), (8, 8, 41)]  # while the job is stopped
DAY = 86_400_000  # a watermark delay no row here is late for


def kinds(events, kind):
    return [e for e in events if e["type"] == kind]


@pytest.mark.core
@pytest.mark.parametrize("kind", ["aggregate", pytest.param("reduce", marks=pytest.mark.extended)])
def test_a_table_backlog_then_rows_inserted_during_and_after_the_switch_and_while_stopped(table, area, kind):
    table.insert(BACKLOG)
    keyed = table.source(watermark_delay="1 second").key_by("k")
    op = keyed.aggregate(functions.CountSum()) if kind == "aggregate" else keyed.reduce(functions.add)
    job = op.start(job_dir=area.jobs, job_name="orders", trigger=TRIGGER)
    try:
        table.insert(DURING)
        job.process_all_available()
        table.insert(AFTER)
        job.process_all_available()
        assert latest_rows(job) == expected_latest(model(kind, 1000, [BACKLOG], [DURING, AFTER]), kind)
        events = job.events()
        assert kinds(events, "backlog_recorded")[0]["position"] == {"rows": len(BACKLOG)}
        assert kinds(events, "switch")[0]["records"] == len(BACKLOG)  # the backlog is the rows at the start
        graph = job.job_graph()
        assert graph.annotations(graph.operators[0].name) == {"backlog": "false", "backlog_rows": str(len(BACKLOG))}
    finally:
        job.stop()
    table.insert(STOPPED)
    again = op.start(job_dir=area.jobs, job_name="orders", trigger=TRIGGER)
    try:
        assert again.phase == "stream"  # no second backlog
        again.process_all_available()
        assert latest_rows(again) == expected_latest(model(kind, 1000, [BACKLOG], [DURING, AFTER, STOPPED]), kind)
        batches = [e["batch"] for e in kinds(again.events(), "micro_batch")]
        assert batches == sorted(set(batches))  # each micro-batch once: no row read twice
        assert sum(e["input_rows"] for e in kinds(again.events(), "micro_batch")) == len(DURING + AFTER + STOPPED)
    finally:
        again.stop()


def test_every_accepted_column_type_reads_as_psycopg_gives_it(postgres, area):
    """Text with commas, quotes and newlines, the empty string and NULL, doubles, booleans, dates,
    decimals and both timestamp types come through the server's CSV as they are (a zone-less timestamp
    as UTC)."""
    import decimal

    name = f"typed_{uuid.uuid4().hex[:8]}"
    postgres.sql(f"CREATE TABLE {name} (id bigserial PRIMARY KEY, k integer, s text, d double precision, "
                 "b boolean, day date, amount numeric(10,2), local timestamp, zoned timestamptz)")
    utc = dt.timezone.utc
    rows = [(1, 'a, "quoted"\nline', 1.5, True, dt.date(2024, 2, 3), decimal.Decimal("12.50"),
             dt.datetime(2024, 1, 1, 5, 0, 0, 1), dt.datetime(2024, 1, 1, 7, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))),
            (2, "", -0.1, False, None, None, None, None),
            (3, None, None, None, dt.date(1999, 12, 31), decimal.Decimal("-3.00"), None,
             dt.datetime(2024, 1, 1, tzinfo=utc))]
    postgres.sql(f"INSERT INTO {name} (k, s, d, b, day, amount, local, zoned) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                 rows)
    try:
        stream = fw.from_table(postgres.url, name, "k int, s string, d double, b boolean, day date, "
                                                   "amount decimal(10,2), local timestamp, zoned timestamp")
        job = stream.key_by("k").reduce(lambda a, b: b).start(job_dir=area.jobs, job_name="typed", mode="batch")
        job.process_all_available()
        got = [tuple(None if v is None or v != v else v for v in r) for r in
               job.latest().astype(object).itertuples(index=False)]

        def when(value):
            # latest() gives naive UTC times
            return None if value is None else (value if value.tzinfo else value.replace(tzinfo=utc)).astimezone(
                utc).replace(tzinfo=None)

        expected = [(k, s, d, b, day, amount, when(local), when(zoned)) for k, s, d, b, day, amount, local, zoned in rows]
        import pandas as pd

        assert [tuple(v.to_pydatetime() if isinstance(v, pd.Timestamp) else v for v in r) for r in got] == expected
    finally:
        postgres.sql(f"DROP TABLE {name}")


@pytest.mark.slow
@pytest.mark.extended  # two driver processes, each killed
def test_kill_9_of_the_driver_in_the_backlog_and_at_the_switch_then_finish(table, area):
    """Nothing lost or read twice: the backlog's committed subtasks are kept, a micro-batch killed before
    its commit reads the same rows again (its offsets, order_by values, are in the checkpoint)."""
    from tests.streaming.driver import KillingCountSum, kill_file
    from tests.streaming.test_kill import kill_at

    table.insert(BACKLOG)
    kill_at(area, "backlog", table=table)  # inside backlog subtask 1
    table.insert(DURING)
    kill_at(area, "switch", table=table)  # the backlog finishes, killed in the first micro-batch after it
    table.insert(AFTER + STOPPED)
    op = table.source(watermark_delay="1 second").key_by("k").aggregate(KillingCountSum(kill_file(area.jobs)))
    job = op.start(job_dir=area.jobs, job_name="counts", trigger="available_now")
    try:
        job.process_all_available()
        assert latest_rows(job) == expected_latest(model("aggregate", 1000, [BACKLOG], [DURING, AFTER + STOPPED]),
                                                   "aggregate")
        events = job.events()
    finally:
        job.stop()
    assert len(kinds(events, "switch")) == 1 and len(kinds(events, "subtask_finished")) == 2
    assert len(kinds(events, "stream_started")) == 3


@pytest.mark.core
@pytest.mark.extended  # make test-extended: here and under Spark Connect
def test_a_table_jobs_savepoint_restored_at_1_and_3_equals_the_job_that_never_rescaled(table, area):
    """The savepoint keeps the greatest order_by read; a restore reads only the rows after it, its keyed
    state re-partitioned; at 1 and 3 the result equals the job that kept running and the model."""
    table.insert(BACKLOG)
    op = table.source(watermark_delay="1 second").key_by("k").aggregate(functions.CountSum())
    job = op.start(job_dir=area.jobs, job_name="kept", trigger=TRIGGER)
    try:
        table.insert(DURING)
        job.process_all_available()
        path = job.savepoint()
        saved = fw.load_savepoint(path)
        assert saved.document["read_through"] == len(BACKLOG + DURING) and "read through" in repr(saved)
        table.insert(AFTER)
        job.process_all_available()
        restored = {}
        for n in (1, 3):
            again = op.start(job_dir=area.jobs, job_name=f"restored-{n}", from_savepoint=path, parallelism=n,
                             trigger=TRIGGER)
            try:
                again.process_all_available()
                restored[n] = (latest_rows(again), [e["input_rows"] for e in kinds(again.events(), "micro_batch")])
            finally:
                again.stop()
        expected = expected_latest(model("aggregate", 1000, [BACKLOG], [DURING, AFTER]), "aggregate")
        assert latest_rows(job) == expected
        for n, (rows, read) in restored.items():
            assert rows == expected, n
            assert sum(read) == len(AFTER), n  # only the rows after the savepoint: none read twice
    finally:
        job.stop()
    other = fw.from_table(table.server.url, table.name, functions.SCHEMA, event_time="ts",
                          watermark_delay="2 seconds").key_by("k").aggregate(functions.CountSum())
    with pytest.raises(fw.ResumeError, match="was taken of another source: its delay_ms was 1000, now 2000"):
        other.start(job_dir=area.jobs, job_name="elsewhere", from_savepoint=path)


def _bootstrapped(totals: dict, read) -> Model:
    """The model of a job restored from a savepoint whose state is ``totals`` (key -> CountSum's [n, total]), then
    reading each of ``read``'s lists as a micro-batch (no row late: a delay of a day)."""
    m = Model("aggregate", functions.CountSum(), ["k"], "ts", DAY)
    m.running = {key: list(acc) for key, acc in totals.items()}
    for i, rows in enumerate(read):
        m.fresh(i, [record(r) for r in rows])
    return m


@pytest.mark.extended  # make test keeps the table's positions (tests/connectors/test_table_position.py)
@pytest.mark.parametrize("positions", ["now", "beginning"])
def test_per_key_totals_written_as_a_table_jobs_savepoint_restore_as_the_job_over_the_whole_table(spark, table, area,
                                                                                                   positions):
    """Bootstrap (issue 50): the per-key totals of the rows in the table (the model's, as a DataFrame) written as the
    job's savepoint with positions="now", restored, then rows inserted before and after the restore: the state and
    the outputs are those of a job over every row, and only the new rows are read. With "beginning" the restored job
    reads every row over the same totals (the table's first rows counted twice, as the model says)."""
    table.insert(BACKLOG)
    op = table.source(watermark_delay="1 day").key_by("k").aggregate(functions.CountSum())
    totals = model("aggregate", DAY, [BACKLOG], []).running
    frame = spark.createDataFrame([(k, json.dumps(acc)) for (k,), acc in totals.items()], "k long, running string")
    written = fw.write_savepoint(op, area.jobs + "/boot", keyed_state=frame, parallelism=2, positions=positions)
    saved = fw.load_savepoint(written)
    assert saved.document["read_through"] == (len(BACKLOG) if positions == "now" else None)  # bigserial: 1, 2, ...
    assert saved.document["watermark"] is None
    table.insert(DURING)  # after the write: not read, whatever the positions
    job = op.start(job_dir=area.jobs, job_name="boot", trigger=TRIGGER, from_savepoint=written, parallelism=1)
    try:
        table.insert(AFTER)
        job.process_all_available()
        state = {(r["k"],): json.loads(r["running"]) for r in job.state().keyed_state().collect()}
        read = sum(e["input_rows"] for e in kinds(job.events(), "micro_batch"))
        outputs = latest_rows(job)
    finally:
        job.stop()
    whole = model("aggregate", DAY, [BACKLOG], [DURING, AFTER])
    if positions == "now":
        assert state == whole.running and read == len(DURING + AFTER)
        touched = {(k,) for k, _, _ in DURING + AFTER}  # a restored job's latest() starts empty
        assert outputs == {key: row for key, row in expected_latest(whole, "aggregate").items() if key in touched}
    else:
        again = _bootstrapped(totals, [BACKLOG + DURING, AFTER])
        assert state == again.running and read == len(BACKLOG + DURING + AFTER)
        assert outputs == expected_latest(again, "aggregate")


ROWS = st.lists(st.tuples(st.integers(0, 5), st.integers(-50, 50), st.integers(0, 600)), max_size=25)


@pytest.mark.extended  # three jobs per example
@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck))
@given(backlog=ROWS, fresh=ROWS)
@example(backlog=[], fresh=[(1, 2, 3)])  # an empty table: an empty backlog
def test_every_mode_over_a_table_equals_the_model(postgres, area, backlog, fresh):
    """Mixed and stream read the backlog and the rows inserted after start(); batch only the backlog.
    A watermark delay of a day: no row is late, so every mode has one right answer."""
    name = f"random_{uuid.uuid4().hex[:8]}"
    postgres.sql(f"CREATE TABLE {name} (id bigserial PRIMARY KEY, k bigint, v bigint, ts timestamptz)")
    table = Table(postgres, name)
    try:
        table.insert(backlog)
        op = table.source(watermark_delay="1 day").key_by("k").aggregate(functions.CountSum())
        jobs = {mode: op.start(job_dir=area.jobs, job_name=f"{name}-{mode}", mode=mode, trigger=TRIGGER)
                for mode in ("mixed", "stream", "batch")}
        try:
            table.insert(fresh)
            for job in jobs.values():
                job.process_all_available()
            assert latest_rows(jobs["mixed"]) == expected_latest(model("aggregate", DAY, [backlog], [fresh]), "aggregate")
            assert latest_rows(jobs["stream"]) == expected_latest(model("aggregate", DAY, [], [backlog + fresh]),
                                                                  "aggregate")
            assert latest_rows(jobs["batch"]) == expected_latest(model("aggregate", DAY, [backlog], []), "aggregate")
        finally:
            for job in jobs.values():
                job.stop()
    finally:
        postgres.sql(f"DROP TABLE {name}")


def test_what_a_table_job_does_not_do_yet_is_one_line(table, area):
    op = table.source().key_by("k").aggregate(functions.CountSum())
    with pytest.raises(fw.FullWindowError, match=r"max_files_per_trigger 2 caps the files of a micro-batch; a table "
                                                 r"source's micro-batch reads every new row \(leave it None\)"):
        op.start(job_dir=area.jobs, job_name="capped", max_files_per_trigger=2)


def test_a_job_started_when_its_table_cannot_be_read_is_one_line_and_starts_once_it_can(postgres, area):
    """At the first start and at a restart alike (a restart read the table inside Spark, at length)."""
    name = f"gone_{uuid.uuid4().hex[:8]}"
    postgres.sql(f"CREATE TABLE {name} (id bigserial PRIMARY KEY, k bigint, v bigint, ts timestamptz)")
    op = Table(postgres, name).source().key_by("k").aggregate(functions.CountSum())
    postgres.sql(f"DROP TABLE {name}")  # after the source was made: a server stopped, a table dropped
    with pytest.raises(fw.FullWindowError) as refused:
        op.start(job_dir=area.jobs, job_name="gone", trigger=TRIGGER)
    assert str(refused.value).startswith(f"the job cannot read '{name}' at {postgres.url}: ")
    assert "does not exist" in str(refused.value) and "\n" not in str(refused.value)
    postgres.sql(f"CREATE TABLE {name} (id bigserial PRIMARY KEY, k bigint, v bigint, ts timestamptz)")
    try:
        Table(postgres, name).insert([(1, 2, 3)])
        job = op.start(job_dir=area.jobs, job_name="gone", trigger=TRIGGER)
        try:
            assert latest_rows(job.process_all_available()) == expected_latest(
                model("aggregate", 0, [[(1, 2, 3)]], []), "aggregate")
        finally:
            job.stop()
        postgres.sql(f"ALTER TABLE {name} RENAME TO {name}_away")
        recorded = job.events()
        with pytest.raises(fw.FullWindowError) as refused:
            op.start(job_dir=area.jobs, job_name="gone", trigger=TRIGGER)
        assert job.events() == recorded  # refused before the log was opened: nothing recorded
        assert str(refused.value).startswith(f"the job cannot read '{name}' at {postgres.url}: ")
        assert "does not exist" in str(refused.value) and "\n" not in str(refused.value)
        postgres.sql(f"ALTER TABLE {name}_away RENAME TO {name}")
        Table(postgres, name).insert([(1, 5, 4)])
        job = op.start(job_dir=area.jobs, job_name="gone", trigger=TRIGGER)  # the same job goes on
        try:
            assert latest_rows(job.process_all_available()) == expected_latest(
                model("aggregate", 0, [[(1, 2, 3)]], [[(1, 5, 4)]]), "aggregate")
        finally:
            job.stop()
    finally:
        postgres.sql(f"DROP TABLE {name}")


def _tally_state(path: str) -> list[dict]:
    return [{name: entry["units"] for name, entry in s.items()}
            for s in fw.load_savepoint(path).operator_state["process(Tally)"]]


@pytest.mark.extended  # make test-extended (CI), with tutorial 08 that runs it too
def test_a_process_function_over_a_table_keeps_its_operator_state_through_a_savepoint_restored_at_1_and_3(table, area):
    """process(fn) over a table (issue 32): a table is one split, so every row reaches subtask 0 in
    order_by order; a savepoint keeps the operator state and the greatest order_by read, and restores
    at 1 and 3 redistribute the state as FLIP-8's rule (tests/state/reference_state.py) says and read
    only the rows inserted after it: none lost, none twice."""
    table.insert([(k, v, v) for k, v in [(1, 1), (2, 2), (1, 3)]])
    op = table.source().process(Tally())
    job = op.start(job_dir=area.jobs, job_name="tally", trigger=TRIGGER, parallelism=2)
    try:
        job.process_all_available()
        table.insert([(3, 4, 4), (3, 5, 5)])
        job.process_all_available()
        path = job.savepoint()
        rows = job.changelog()
    finally:
        job.stop()
    assert list(rows["subtask"]) == [0] * 5 and list(rows["v"]) == [1, 2, 3, 4, 5]
    assert list(rows["count"]) == [1, 2, 3, 4, 5]
    before = _tally_state(path)
    assert [sorted(s["seen"]) for s in before] == [[1, 2, 3, 4, 5], []] and [s["origins"] for s in before] == [[0], [1]]
    assert fw.load_savepoint(path).document["read_through"] == 5

    restored = {}
    try:
        for p in (1, 3):
            restored[p] = op.start(job_dir=area.jobs, job_name=f"tally-{p}", trigger=TRIGGER, from_savepoint=path,
                                   parallelism=p)
        for p, again in restored.items():
            again.process_all_available()
            assert _tally_state(again.savepoint()) == reference_state.redistribute(before, p, MODES), p
        table.insert([(4, 40, 6), (5, 50, 7)])
        for p, again in restored.items():
            again.process_all_available()
            fresh = again.changelog()
            assert list(fresh["v"]) == [40, 50] and list(fresh["subtask"]) == [0, 0], p
            assert fresh["restored"].all(), p
            after = _tally_state(again.savepoint())
            assert sorted(v for s in after for v in s["seen"]) == [1, 2, 3, 4, 5, 40, 50], p
            assert sum(sum(s["count"]) for s in after) == 7, p
    finally:
        for again in restored.values():
            again.stop()


@pytest.mark.parametrize("args, message", [
    (("postgresql://fw:hunter2@127.0.0.1:1/postgres", "t"), "from_table: the url holds a password, which would be "
     "recorded in the job's log (not repeated here); put the password in ~/.pgpass"),
    (("postgresql://fw@127.0.0.1:1/postgres?password=hunter2", "t"), "from_table: the url holds a password, "),
    (("postgresql://fw@127.0.0.1:1/postgres?sslmode=disable&PassWord=hunter2", "t"), "from_table: the url holds a "
     "password, "),
    (("postgresql://fw@127.0.0.1:1/postgres?sslpassword=hunter2", "t"), "from_table: the url holds a sslpassword, "),
    (("postgresql://fw@127.0.0.1:1/postgres?passfile=/home/me/hunter2", "t"), "from_table: the url holds a "
     "passfile, "),
    (("host=127.0.0.1 user=fw password='hunter2 x' dbname=postgres", "t"), "from_table url 'host=127.0.0.1 "
     "user=fw password=*** dbname=postgres'; accepted: a PostgreSQL URL such as "
     "'postgresql://user@localhost:5432/db' (put the password in ~/.pgpass"),
    (("mysql://x/y", "t"), "from_table url 'mysql://x/y'; accepted: a PostgreSQL URL such as "
     "'postgresql://user@localhost:5432/db'"),
    ((None, "t; drop table x"), "from_table table 't; drop table x'; accepted: a table name or schema.name "
     "(letters, digits, underscores)"),
    ((None, "nothere"), "from_table: no table 'nothere' at {url}"),
    ((None, "{table}", "k long, v long, stamp timestamp"), "from_table: table '{table}' has no column 'stamp'; "
     "its columns are: id, k, v, ts"),
    ((None, "{table}", "k long, v string, ts timestamp"), "from_table: column 'v' of '{table}' is bigint, read as "
     "string; accepted for it: text, character varying, character, name, uuid"),
    ((None, "{table}", functions.SCHEMA, "ts"), "from_table order_by 'ts': '{table}' has it as timestamp with time "
     "zone; accepted: an integer column (bigint, integer) that grows with each insert, e.g. a serial key"),
    (("postgresql://fw@127.0.0.1:1/postgres", "t"), "from_table cannot read 't' at postgresql://fw@127.0.0.1:1/postgres: "),
])
def test_a_bad_table_argument_is_one_line_naming_it(table, args, message):
    url = args[0] or table.server.url
    name = args[1].format(table=table.name)
    schema = args[2] if len(args) > 2 else functions.SCHEMA
    order = {"order_by": args[3]} if len(args) > 3 else {}
    with pytest.raises(fw.FullWindowError) as refused:
        fw.from_table(url, name, schema, **order)
    text = str(refused.value)
    assert "\n" not in text and text.startswith(message.format(url=table.server.url, table=table.name))
    assert "hunter2" not in text and "hunter2" not in repr(refused.value)


def test_a_password_set_after_spark_started_is_one_line_saying_the_workers_cannot_see_it(spark, monkeypatch):
    """Spark's Python workers are children of the JVM and keep its environment: PGPASSWORD set later reaches the
    driver's check, never a worker's read (fe_sendauth: no password supplied, a minute into the job)."""
    from fw_magics.spark.session import environment_at_jvm_start
    from fw_magics.teaching.scratch_postgres import ScratchPostgres

    if environment_at_jvm_start() is None:
        pytest.skip("the JVM was not started by this process")
    assert "PGPASSWORD" not in environment_at_jvm_start()
    server = ScratchPostgres(password="hunter2").start()
    try:
        server.sql("CREATE TABLE t (id bigserial PRIMARY KEY, k bigint, v bigint, ts timestamptz)")
        monkeypatch.setenv("PGPASSWORD", "hunter2")
        with pytest.raises(fw.FullWindowError) as refused:
            fw.from_table(server.url, "t", functions.SCHEMA)
        text = str(refused.value)
        assert text.startswith("from_table: PGPASSWORD changed after Spark started in this process, and Spark's "
                               "Python workers, started with it, cannot log in without it (")
        assert "\n" not in text and "hunter2" not in text and "~/.pgpass" in text
        monkeypatch.delenv("PGPASSWORD")
        with pytest.raises(fw.FullWindowError, match="from_table cannot read 't' at postgresql://fw@127.0.0.1"):
            fw.from_table(server.url, "t", functions.SCHEMA)  # without it the driver cannot log in either
    finally:
        server.stop()
