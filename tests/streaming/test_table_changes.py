"""fw.from_table(..., changes=True): a PostgreSQL table's snapshot, then its changes from a replication slot
(issue 49), against a real server (Debian's, started for the run with wal_level = logical).

The mirror (``key_by("id").mirror()``) is compared with ``SELECT * ORDER BY id`` after each committed
micro-batch, on hand-picked and random transactions (hypothesis); a process function's view of each key's
changes with the order they were committed in.
"""

from __future__ import annotations

import html
import uuid

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import fw_magics as fw
from fw_magics import hooks
from tests.streaming.files import TRIGGER

pytestmark = [pytest.mark.spark]

SCHEMA = "id bigint, customer string, amount double"


class Orders:
    """One test's table: ``id`` (the primary key), ``customer``, ``amount``."""

    def __init__(self, server, name: str):
        self.server, self.name = server, name

    def run(self, *statements) -> None:
        """The statements in one transaction."""
        from fw_magics.connectors.postgres.client import connect

        with connect(self.server.url) as conn, conn.transaction():
            for statement in statements:
                if isinstance(statement, tuple):
                    conn.execute(*statement)
                else:
                    conn.execute(statement)

    def rows(self) -> list[tuple]:
        return [tuple(r) for r in self.server.sql(f"SELECT id, customer, amount FROM {self.name} ORDER BY id")]

    def source(self, **options):
        return fw.from_table(self.server.url, self.name, SCHEMA, changes=True, **options)

    def slots(self) -> list[str]:
        return [r[0] for r in self.server.sql("SELECT slot_name FROM pg_replication_slots ORDER BY 1")]


@pytest.fixture
def orders(postgres, area):
    name = f"orders_{uuid.uuid4().hex[:8]}"
    postgres.sql(f"CREATE TABLE {name} (id bigint PRIMARY KEY, customer text, amount double precision)")
    table = Orders(postgres, name)
    yield table
    postgres.sql(f"DROP TABLE {name}")
    for (slot,) in postgres.sql("SELECT slot_name FROM pg_replication_slots WHERE NOT active"):
        fw.drop_slot(postgres.url, slot)


def mirrored(job) -> list[tuple]:
    return [tuple(None if v != v else v for v in r) for r in
            job.latest()[["id", "customer", "amount"]].astype(object).itertuples(index=False)]


def insert(table, rows):
    return tuple((f"INSERT INTO {table.name} VALUES (%s, %s, %s)", r) for r in rows)


@pytest.mark.core
def test_a_mirror_equals_the_table_through_inserts_updates_and_deletes_in_mixed_and_stream_mode(orders, area):
    from fw_magics.connectors.postgres.client import connect

    orders.run(*insert(orders, [(1, "ann", 10.0), (2, "bob", 20.0), (3, "cy", 30.0)]))
    stream = orders.source().key_by("id").mirror()
    jobs = {mode: stream.start(job_dir=area.jobs, job_name=f"mirror-{mode}", mode=mode, trigger=TRIGGER)
            for mode in ("mixed", "stream")}
    late = None
    try:
        for job in jobs.values():
            assert mirrored(job.process_all_available()) == orders.rows()
        late = connect(orders.server.url)  # a transaction that inserts key 7 and commits after key 9 was read
        late.execute(f"INSERT INTO {orders.name} VALUES (7, 'eve', 70.0)")
        orders.run(f"UPDATE {orders.name} SET amount = 11 WHERE id = 1", f"DELETE FROM {orders.name} WHERE id = 2",
                   *insert(orders, [(4, "dee", 40.0), (9, "fay", 90.0)]))
        orders.run(f"UPDATE {orders.name} SET id = 5 WHERE id = 3")  # the key moves: 3 is gone, 5 is there
        for job in jobs.values():
            assert mirrored(job.process_all_available()) == orders.rows() == [
                (1, "ann", 11.0), (4, "dee", 40.0), (5, "cy", 30.0), (9, "fay", 90.0)]
        late.commit()  # out of key order: 7 after 9 (a growing column's reader would never see it)
        for job in jobs.values():
            assert mirrored(job.process_all_available()) == orders.rows() == [
                (1, "ann", 11.0), (4, "dee", 40.0), (5, "cy", 30.0), (7, "eve", 70.0), (9, "fay", 90.0)]
        assert sorted(set(orders.slots()) & {f"fw_mirror_{m}" for m in jobs}) == []  # named with a hash too
        assert len([s for s in orders.slots() if s.startswith("fw_mirror_")]) == 2
    finally:
        if late is not None:
            late.close()  # a failed assertion must not leave the table locked
        for job in jobs.values():
            job.stop()


# -- random transactions against SELECT * ORDER BY id, and each key's changes in commit order ----------

STEP = st.lists(st.tuples(st.sampled_from(["insert", "update", "delete"]), st.integers(0, 5),
                          st.integers(-50, 50)), min_size=1, max_size=5)


def statements(table: Orders, model: dict, step, changes: dict) -> list:
    """One transaction's statements from ``step`` (an op on a missing key becomes an insert, an insert on a
    present key an update), applied to ``model`` ({id: amount}); each key's expected changes (op, amount)
    appended to ``changes`` (the table's replica identity is FULL: an update gives its old row)."""
    out = []
    for op, key, amount in step:
        if key not in model:
            out.append((f"INSERT INTO {table.name} VALUES (%s, %s, %s)", (key, f"c{key % 2}", float(amount))))
            changes.setdefault(key, []).append(("insert", float(amount)))
            model[key] = float(amount)
        elif op == "delete":
            out.append((f"DELETE FROM {table.name} WHERE id = %s", (key,)))
            changes.setdefault(key, []).append(("delete", model.pop(key)))
        else:
            out.append((f"UPDATE {table.name} SET amount = %s WHERE id = %s", (float(amount), key)))
            changes.setdefault(key, []).extend([("update_before", model[key]), ("update_after", float(amount))])
            model[key] = float(amount)
    return out


class Changes(fw.KeyedProcessFunction):
    """Each change as it reaches its key: op, amount, lsn, seq."""

    schema = "op string, amount double, lsn long, seq int"

    def process_element(self, record, ctx):
        yield record.op, record.amount, record.lsn, record.seq


@pytest.mark.extended  # three jobs, a micro-batch per transaction
@settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck))
@given(backlog=st.lists(st.integers(-50, 50), max_size=6), steps=st.lists(STEP, min_size=1, max_size=4))
@example(backlog=[], steps=[[("insert", 0, 0)]])  # an empty table at the first start: its snapshot has no rows
def test_random_transactions_the_mirror_equals_the_table_after_each_micro_batch_and_each_key_sees_commit_order(
        postgres, area, backlog, steps):
    name = f"random_{uuid.uuid4().hex[:8]}"
    postgres.sql(f"CREATE TABLE {name} (id bigint PRIMARY KEY, customer text, amount double precision)")
    postgres.sql(f"ALTER TABLE {name} REPLICA IDENTITY FULL")
    table = Orders(postgres, name)
    model = {}
    changes: dict = {}
    table.run(*statements(table, model, [("insert", k, a) for k, a in enumerate(backlog)], changes))
    snapshot = {k: list(v) for k, v in changes.items()}
    jobs = {}
    try:
        keyed = table.source().key_by("id")
        for mode in ("mixed", "stream"):
            jobs[mode] = keyed.mirror().start(job_dir=area.jobs, job_name=f"{name}-{mode}", mode=mode, trigger=TRIGGER)
        jobs["process"] = keyed.process(Changes()).start(job_dir=area.jobs, job_name=f"{name}-p", mode="stream",
                                                         trigger=TRIGGER)
        for step in steps:
            table.run(*statements(table, model, step, changes))
            for mode in ("mixed", "stream"):
                assert mirrored(jobs[mode].process_all_available()) == table.rows(), mode
        seen = jobs["process"].process_all_available().changelog()
    finally:
        for job in jobs.values():
            job.stop()
        postgres.sql(f"DROP TABLE {name}")
        for slot in table.slots():
            if name in slot:
                fw.drop_slot(postgres.url, slot)
    got: dict = {}
    for row in seen.sort_values(["lsn", "seq"]).itertuples(index=False):  # the commit order
        got.setdefault(row.id, []).append((row.op, row.amount))
    assert got == changes
    for key, rows in seen.groupby("id"):  # the order each key saw them in is the commit order
        assert list(rows["lsn"]) == sorted(rows["lsn"]) and rows[["lsn", "seq"]].duplicated().sum() == 0, key
    assert all(k in got and got[k][:len(v)] == v for k, v in snapshot.items())  # the snapshot as inserts


# -- bad input: one line naming the table and what to do; nothing created on the server -------------------


@pytest.mark.parametrize("case, message", [
    ("no_key", "from_table(changes=True): table '{table}' has no primary key, so an update or a delete cannot say "
               "which row it changed; add one (ALTER TABLE {table} ADD PRIMARY KEY (...))"),
    ("no_replication", "from_table(changes=True) of '{table}': the role '{role}' has no REPLICATION right, which a "
                       "replication slot needs; ALTER ROLE {role} REPLICATION (as a superuser)"),
    ("key_left_out", "from_table(changes=True): the schema leaves out 'id', of the primary key of '{table}' (id), "
                     "which says which row a change is of; add it"),
    ("change_column", "from_table(changes=True): column 'op' of '{table}' has the name of a change record's own "
                      "column (op, lsn, seq, commit_time); leave it out of the schema"),
    ("password", "from_table: the url holds a password, which would be recorded in the job's log (not repeated "
                 "here); put the password in ~/.pgpass"),
])
def test_a_bad_changes_argument_is_one_line_naming_the_table_and_what_to_do(postgres, spark, case, message):
    name, role = f"bad_{uuid.uuid4().hex[:8]}", f"plain_{uuid.uuid4().hex[:8]}"
    postgres.sql(f"CREATE TABLE {name} (id bigint{'' if case == 'no_key' else ' PRIMARY KEY'}, customer text, "
                 "amount double precision)")
    url = postgres.url
    if case == "no_replication":
        postgres.sql(f"CREATE ROLE {role} LOGIN NOREPLICATION; GRANT SELECT ON {name} TO {role}")
        url = f"postgresql://{role}@127.0.0.1:{postgres.port}/postgres"
    schema = {"key_left_out": "customer string, amount double", "change_column": SCHEMA + ", op string"}.get(
        case, SCHEMA)
    if case == "password":
        url = url.replace("@", ":hunter2@", 1)
    slots = postgres.sql("SELECT count(*) FROM pg_replication_slots")
    try:
        with pytest.raises(fw.FullWindowError) as refused:
            fw.from_table(url, name, schema, changes=True)
    finally:
        postgres.sql(f"DROP TABLE {name}")
        if case == "no_replication":
            postgres.sql(f"DROP ROLE {role}")
    text = str(refused.value)
    assert "\n" not in text and text.startswith(message.format(table=name, role=role)), text
    assert "hunter2" not in text and "hunter2" not in repr(refused.value)
    assert postgres.sql("SELECT count(*) FROM pg_replication_slots") == slots  # nothing made on the server


def test_a_savepoint_written_from_tables_now_then_refused_leaves_no_slot_or_publication_on_the_server(
        orders, area, spark):
    """"now" over a table's changes makes a slot at the write (its publication first); a keyed_state refused after
    it (a column that is not a state: refused before any Spark job, cheap) is the frame's one line, and the slot and
    its publication are dropped (``Source.discarding``): nothing written, nothing left on the server."""
    import os

    stream = orders.source().key_by("id").process(Seen())
    frame = spark.createDataFrame([], "id bigint, count bigint")
    before = orders.slots()
    with pytest.raises(fw.FullWindowError) as refused:
        fw.write_savepoint(stream, area.jobs + "/boot", keyed_state=frame, positions="now")
    assert str(refused.value) == (
        "write_savepoint's keyed_state: column 'count' is not a state of Seen, column 'n' is missing; accepted: "
        "id bigint, n bigint (as reader.keyed_state() returns)")
    assert not os.path.exists(area.jobs + "/boot") and orders.slots() == before
    assert orders.server.sql("SELECT count(*) FROM pg_publication WHERE pubname LIKE 'fw_sp_%'") == [(0,)]
    assert orders.server.sql(f"SELECT count(*) FROM pg_publication_tables WHERE tablename = '{orders.name}'") == [(0,)]


class Seen(fw.KeyedProcessFunction):
    """Each change counted per key: op, amount and the key's count so far."""

    schema = "op string, amount double, n long"

    def open(self, ctx):
        self.n = ctx.get_state(fw.ValueStateDescriptor("n", "long"))

    def process_element(self, record, ctx):
        self.n.update((self.n.value() or 0) + 1)
        yield record.op, record.amount, self.n.value()


WRITTEN = {1: 5, 9: 2}  # the per-key counts a savepoint is written with


def by_count(log) -> dict:
    """Each key's (op, amount) in a changelog of counted changes, in the order its count says they came."""
    return {k: [(op, amount) for _, op, amount in sorted(zip(rows["n"], rows["op"], rows["amount"]))]
            for k, rows in log.groupby("id")}


class Interrupted(BaseException):
    """What a hook raises to interrupt a savepoint's write, as a KeyboardInterrupt would (hooks log an Exception)."""


def interrupt(*_):
    raise Interrupted


@pytest.mark.extended  # a restore over a table's changes per case
@pytest.mark.parametrize("positions, counts", [
    ("beginning", {1: 5 + 3, 2: 2, 3: 1, 9: 2}),  # the snapshot at the restore (1 updated, 2, 3), 2 deleted, 1 updated
    ("now", {1: 5 + 4, 2: 1, 3: 1, 9: 2}),  # only the changes after the write: 1 updated twice, 3 inserted, 2 deleted
])
def test_a_savepoint_written_from_tables_restores_reading_what_its_positions_say_over_the_written_counts(
        orders, area, spark, positions, counts):
    """Per-key counts written with ``positions="beginning"`` (no slot: nothing is made on the server by the write):
    the changes committed after the write and before the restore are in the table's snapshot the restore makes its
    slot at, read first, then the changes after it, as a fresh start reads them; or with ``"now"`` (a slot made at
    the write, kept by the savepoint, which the restore copies): the rows present at the write are not read, and
    every change committed after it is, once. Each key's count is the written one plus the changes the model
    (``statements``) says it was given, in commit order; ``job.state()`` keeps no slot on the server, nor (``"now"``)
    a job's savepoint interrupted while its files are written (its slot's copy dropped)."""
    orders.run(f"ALTER TABLE {orders.name} REPLICA IDENTITY FULL")
    model: dict = {}
    orders.run(*statements(orders, model, [("insert", 1, 10), ("insert", 2, 20)], {}))
    stream = orders.source().key_by("id").process(Seen())
    before = orders.slots()
    written = fw.write_savepoint(stream, area.jobs + "/written", keyed_state=spark.createDataFrame(
        sorted(WRITTEN.items()), "id bigint, n bigint"), parallelism=2, positions=positions)
    saved = fw.load_savepoint(written)
    made = sorted(set(orders.slots()) - set(before))
    if positions == "beginning":
        assert made == [] and saved.document["read_lsn"] is None
        assert f"changes of table {orders.name!r} not read yet" in repr(saved)
    else:
        assert made == [saved.manifest["slot"]] and saved.document["read_lsn"] == saved.manifest["lsn"]
        assert f"changes of table {orders.name!r} read through LSN {saved.manifest['lsn']}" in repr(saved)
    since_write: dict = {}
    orders.run(*statements(orders, model, [("update", 1, 11), ("insert", 3, 30)], since_write))
    snapshot = {k: [("insert", amount)] for k, amount in model.items()}  # the table at the restore
    job = stream.start(job_dir=area.jobs, job_name="boot", trigger=TRIGGER, from_savepoint=written, parallelism=3)
    try:
        job.process_all_available()
        after: dict = {}
        orders.run(*statements(orders, model, [("delete", 2, 0), ("update", 1, 12)], after))
        job.process_all_available()
        got = {r["id"]: r["n"] for r in job.state().keyed_state().collect()}
        log = job.changelog()
        read = sum(e["input_rows"] for e in job.events() if e["type"] == "micro_batch")
        if positions == "now":  # a job's savepoint interrupted while its files are written: its slot's copy dropped
            with hooks.register("savepoint_writing", interrupt), pytest.raises(Interrupted):
                job.savepoint()
        slots = orders.slots()
    finally:
        job.stop()
    seen = snapshot if positions == "beginning" else since_write
    for key, changes in after.items():
        seen.setdefault(key, []).extend(changes)
    assert got == {k: WRITTEN.get(k, 0) + len(seen.get(k, [])) for k in {*WRITTEN, *seen}} == counts
    assert read == sum(map(len, seen.values()))
    assert by_count(log[log["batch"] >= 0]) == seen  # in commit order: each key's count
    assert len([s for s in slots if s.startswith("fw_boot_")]) == 1  # the restore's own: a first start's, or a copy
    assert [s for s in slots if s.startswith("fw_sp_")] == made  # the savepoint's; job.state(), job.savepoint() none


def test_a_server_without_wal_level_logical_is_one_line_saying_how_to_set_it(spark):
    from fw_magics.teaching.scratch_postgres import ScratchPostgres

    server = ScratchPostgres().start()  # wal_level = replica, PostgreSQL's default
    try:
        server.sql("CREATE TABLE orders (id bigint PRIMARY KEY, customer text, amount double precision)")
        with pytest.raises(fw.FullWindowError) as refused:
            fw.from_table(server.url, "orders", SCHEMA, changes=True)
    finally:
        server.stop()
    assert str(refused.value) == (
        "from_table(changes=True) of 'orders': the server's wal_level is 'replica', so it writes no changes a slot "
        "can read; set wal_level = logical in postgresql.conf (or ALTER SYSTEM SET wal_level = logical) and "
        "restart the server")


@pytest.mark.extended  # three starts of a job
def test_stop_keeps_the_slot_so_changes_made_while_stopped_are_read_and_reset_makes_a_new_one(orders, area):
    orders.run(*insert(orders, [(1, "ann", 10.0), (2, "bob", 20.0)]))
    stream = orders.source().key_by("id").mirror()

    def slot() -> tuple:
        (found,) = orders.server.sql("SELECT slot_name, confirmed_flush_lsn - '0/0'::pg_lsn FROM pg_replication_slots "
                                     "WHERE slot_name LIKE 'fw_kept_%'")
        return found[0], int(found[1])

    job = stream.start(job_dir=area.jobs, job_name="kept", mode="stream", trigger=TRIGGER)
    try:
        assert mirrored(job.process_all_available()) == orders.rows()
    finally:
        job.stop()
    name, read = slot()
    assert f"holds the replication slot {name!r} on the server" in repr(job)
    assert f"fw.drop_slot({orders.server.url!r}, {name!r})" in repr(job)
    from fw_magics.widgets import RecoveryPanel

    panel = RecoveryPanel(area.jobs)  # %fw_recover's listing, and the job opened in it
    assert [label for label, _ in panel.jobs.options if label.startswith("kept:")][0].endswith(
        f"; holds the replication slot {name!r} on the server")
    panel.open_job("kept")
    assert html.escape(f"This job holds the replication slot {name!r} on the server") in panel.status.value
    assert html.escape(f"fw.drop_slot({orders.server.url!r}, {name!r}) drops it") in panel.status.value
    orders.run(f"UPDATE {orders.name} SET amount = 21 WHERE id = 2", f"DELETE FROM {orders.name} WHERE id = 1")
    (stopped_at,) = orders.server.sql("SELECT pg_current_wal_flush_lsn() - '0/0'::pg_lsn")[0]
    assert slot() == (name, read) and read < int(stopped_at)  # kept, where the job left it
    job = stream.start(job_dir=area.jobs, job_name="kept", mode="stream", trigger=TRIGGER)
    try:
        assert mirrored(job.process_all_available()) == orders.rows() == [(2, "bob", 21.0)]  # read from the slot
    finally:
        job.stop()
    orders.run(*insert(orders, [(3, "cy", 30.0)]))
    (before_reset,) = orders.server.sql("SELECT pg_current_wal_flush_lsn() - '0/0'::pg_lsn")[0]
    assert slot()[1] < int(before_reset)
    job = stream.start(job_dir=area.jobs, job_name="kept", mode="stream", trigger=TRIGGER, reset=True)
    try:
        assert mirrored(job.process_all_available()) == orders.rows() == [(2, "bob", 21.0), (3, "cy", 30.0)]
        assert len(job.changelog()) == 2  # read anew: the new snapshot's two rows, nothing of the old slot's
    finally:
        job.stop()
    assert slot()[0] == name and slot()[1] >= int(before_reset)  # a new slot, made at the new snapshot
    assert fw.drop_slot(orders.server.url, name) is True
    assert name not in orders.slots()
    assert fw.drop_slot(orders.server.url, name) is False


# -- the table changed under a running job; the server restarted mid-stream ------------------------------


@pytest.mark.extended  # two jobs, each failed by what the table did
def test_a_column_added_is_not_read_a_column_dropped_and_a_truncate_are_one_line_each(orders, area):
    from fw_magics.failover import FixedDelayRestart

    orders.run(*insert(orders, [(1, "ann", 10.0), (2, "bob", 20.0)]))
    stream = orders.source().key_by("id").mirror()
    job = stream.start(job_dir=area.jobs, job_name="altered", mode="stream", trigger=TRIGGER)
    try:
        assert mirrored(job.process_all_available()) == orders.rows()
        orders.run(f"ALTER TABLE {orders.name} ADD COLUMN note text",
                   (f"INSERT INTO {orders.name} VALUES (%s, %s, %s, %s)", (3, "cy", 30.0, "new")))
        assert mirrored(job.process_all_available()) == orders.rows()  # carried without it: the schema lists what is
        assert "note" not in job.latest().columns
        orders.run(f"ALTER TABLE {orders.name} DROP COLUMN customer", f"UPDATE {orders.name} SET amount = 1")
        with pytest.raises(fw.FullWindowError) as dropped:
            job.process_all_available()
    finally:
        job.stop()
    assert str(dropped.value).startswith(
        f"column 'customer' of table '{orders.name}' was dropped or renamed while the job reads it (LSN ")
    assert str(dropped.value).endswith("; declare the columns the table has now and start(..., reset=True) (a column "
                                       "added is not read: the schema lists what is)")
    orders.run(f"ALTER TABLE {orders.name} ADD COLUMN customer text")
    job = stream.start(job_dir=area.jobs, job_name="truncated", mode="stream", trigger=TRIGGER,
                       restart=FixedDelayRestart(attempts=0))
    try:
        assert mirrored(job.process_all_available()) == orders.rows()
        orders.run(f"TRUNCATE {orders.name}")
        with pytest.raises(fw.FullWindowError) as truncated:
            job.process_all_available()
    finally:
        job.stop()
    text = str(truncated.value)
    assert "\n" not in text and text.startswith(f"table '{orders.name}' was truncated (the transaction ending at LSN ")
    assert text.endswith("): a TRUNCATE removes every row without a change per row, which the job cannot follow; "
                         "start(..., reset=True) reads the table anew")


@pytest.mark.extended  # a server restart
def test_the_server_restarted_mid_stream_the_job_goes_on_with_nothing_lost_or_twice(orders, area):
    orders.run(*insert(orders, [(1, "ann", 10.0), (2, "bob", 20.0)]))
    counted = orders.source().key_by("id").process(Changes())
    job = counted.start(job_dir=area.jobs, job_name="restarted", mode="stream", trigger=TRIGGER)
    try:
        job.process_all_available()
        orders.run(f"UPDATE {orders.name} SET amount = 11 WHERE id = 1")
        orders.server.restart()
        orders.run(f"DELETE FROM {orders.name} WHERE id = 2", *insert(orders, [(3, "cy", 30.0)]))
        seen = job.process_all_available().changelog()
        restarts = job.restarts
    finally:
        job.stop()
    got = sorted((int(r.id), r.op, None if r.amount != r.amount else r.amount) for r in seen.itertuples(index=False))
    assert got == sorted([(1, "insert", 10.0), (2, "insert", 20.0), (1, "update_after", 11.0), (2, "delete", None),
                          (3, "insert", 30.0)]), restarts


@pytest.mark.extended  # four jobs
def test_a_cdc_mirrors_savepoint_restored_at_1_and_3_equals_the_job_that_never_rescaled(orders, area):
    """The savepoint keeps the LSN read through (and a copy of the slot): a restore at 1 and at 3 reads only the
    changes after it, once, its keyed state re-partitioned; its mirror equals the table and the job that ran on."""
    orders.run(*insert(orders, [(k, f"c{k}", 10.0 * k) for k in range(1, 7)]))
    stream = orders.source().key_by("id").mirror()
    job = stream.start(job_dir=area.jobs, job_name="kept", mode="mixed", trigger=TRIGGER)
    try:
        orders.run(f"UPDATE {orders.name} SET amount = 1 WHERE id = 1", *insert(orders, [(7, "c7", 70.0)]))
        job.process_all_available()
        path = job.savepoint()
        saved = fw.load_savepoint(path)
        assert "LSN" in repr(saved)
        orders.run(f"DELETE FROM {orders.name} WHERE id = 2", f"UPDATE {orders.name} SET amount = 3 WHERE id = 3",
                   *insert(orders, [(8, "c8", 80.0)]))
        assert mirrored(job.process_all_available()) == orders.rows()
        restored = {}
        for n in (1, 3):
            again = stream.start(job_dir=area.jobs, job_name=f"restored-{n}", from_savepoint=path, parallelism=n,
                                 trigger=TRIGGER)
            try:
                again.process_all_available()
                restored[n] = (mirrored(again), [e["input_rows"] for e in again.events() if e["type"] == "micro_batch"])
            finally:
                again.stop()
        expected = mirrored(job)
    finally:
        job.stop()
    assert expected == orders.rows()
    for n, (rows, read) in restored.items():
        assert rows == expected, n
        assert sum(read) == 3, (n, read)  # the delete, the update, the insert after the savepoint: each once


@pytest.mark.extended  # three driver processes, each killed
def test_kill_9_of_the_driver_in_the_snapshot_at_the_switch_and_mid_stream_each_change_once(orders, area):
    """A keyed count of each key's changes (a lost one lowers it, one read twice raises it) and its last change,
    over three kill -9s of the driver: in the snapshot's backlog, in the first micro-batch after it, and in a
    later micro-batch; the job finished here equals the changes made and the table."""
    from tests.streaming.driver import changes_counted, kill_file
    from tests.streaming.test_kill import kill_at

    orders.server.sql(f"ALTER TABLE {orders.name} REPLICA IDENTITY FULL")
    model: dict = {}
    changes: dict = {}
    orders.run(*statements(orders, model, [("insert", k, 10 * k) for k in range(8)], changes))
    kill_at(area, "cdc-backlog", table=orders)  # the slot and the snapshot made, killed in backlog subtask 1
    orders.run(*statements(orders, model, [("update", 1, 11), ("delete", 2, 0), ("insert", 50, 5)], changes))
    kill_at(area, "cdc-switch", table=orders)  # the backlog finishes, killed in the first micro-batch
    orders.run(*statements(orders, model, [("update", 3, 33), ("insert", 100, 1)], changes))
    orders.run(*statements(orders, model, [("delete", 4, 0), ("update", 100, 2)], changes))
    kill_at(area, "cdc-stream", table=orders)  # the killed micro-batch run again, killed in the next one
    orders.run(*statements(orders, model, [("update", 5, 55), ("insert", 101, 3)], changes))
    job = changes_counted(orders.server.url, orders.name, kill_file(area.jobs)).start(
        job_dir=area.jobs, job_name="counts", trigger=TRIGGER)
    try:
        job.process_all_available()
        latest = job.latest()
        kinds = [e["type"] for e in job.events()]
    finally:
        job.stop()
    got = {int(r.id): (int(r.n), r.op, r.amount) for r in latest.itertuples(index=False)}
    assert got == {k: (len(v), *v[-1]) for k, v in changes.items()}  # every change once, the last one last
    assert {k: a for k, (_, op, a) in got.items() if op != "delete"} == {r[0]: r[2] for r in orders.rows()}
    assert kinds.count("switch") == 1 and kinds.count("stream_started") == 4


class BothSides(fw.KeyedCoProcessFunction):
    """Each change of either table counted per key: which table, op, amount and the key's count so far."""

    schema = "side int, op string, amount double, n long"

    def open(self, ctx):
        self.n = ctx.get_state(fw.ValueStateDescriptor("n", "long"))

    def _counted(self, side, record):
        self.n.update((self.n.value() or 0) + 1)
        yield side, record.op, record.amount, self.n.value()

    def process_element1(self, record, ctx):
        yield from self._counted(1, record)

    def process_element2(self, record, ctx):
        yield from self._counted(2, record)


@pytest.mark.extended  # one restore of a two-input job
def test_two_tables_changes_written_now_as_a_two_input_savepoint_restore_reading_each_table_s_changes_after_it(
        orders, postgres, area, spark):
    """Two tables' changes as the two inputs of a co-process job, written at "now" (each input its own slot,
    ``Composite.position_at``), restored at 2: the rows present at the write are not read, each change committed
    after it to either table is, once, over the written counts, as the model (``statements``) says."""
    other = Orders(postgres, f"refunds_{uuid.uuid4().hex[:8]}")
    postgres.sql(f"CREATE TABLE {other.name} (id bigint PRIMARY KEY, customer text, amount double precision)")
    try:
        tables, models = (orders, other), ({}, {})
        for table, model in zip(tables, models):
            table.run(f"ALTER TABLE {table.name} REPLICA IDENTITY FULL",
                      *statements(table, model, [("insert", 1, 10), ("insert", 2, 20)], {}))
        stream = orders.source().connect(other.source()).key_by("id").process(BothSides())
        before = orders.slots()
        written = fw.write_savepoint(stream, area.jobs + "/both", keyed_state=spark.createDataFrame(
            sorted(WRITTEN.items()), "id bigint, n bigint"), positions="now")
        made = sorted(set(orders.slots()) - set(before))
        assert made == sorted(p["slot"] for p in fw.load_savepoint(written).manifest["inputs"]) and len(made) == 2
        seen: list = [{}, {}]
        for table, model, changes, step in zip(tables, models, seen, ([("update", 1, 11), ("insert", 3, 30)],
                                                                      [("delete", 2, 0)])):
            table.run(*statements(table, model, step, changes))
        job = stream.start(job_dir=area.jobs, job_name="both", trigger=TRIGGER, from_savepoint=written, parallelism=2)
        try:
            job.process_all_available()
            orders.run(*statements(orders, models[0], [("delete", 1, 0)], seen[0]))
            other.run(*statements(other, models[1], [("update", 1, 15)], seen[1]))
            job.process_all_available()
            got = {r["id"]: r["n"] for r in job.state().keyed_state().collect()}
            log = job.changelog()
        finally:
            job.stop()
    finally:
        postgres.sql(f"DROP TABLE {other.name}")
    keys = {*WRITTEN, *seen[0], *seen[1]}
    assert got == {k: WRITTEN.get(k, 0) + len(seen[0].get(k, [])) + len(seen[1].get(k, [])) for k in keys}
    changes = log[log["batch"] >= 0]
    for side in (1, 2):
        assert by_count(changes[changes["side"] == side]) == seen[side - 1], side
