"""A table's snapshot, then its changes (issue 49, ``--only cdc``): a mirror of a PostgreSQL table.

A scratch PostgreSQL server (``ScratchPostgres(logical=True)``, Debian's, on loopback) holds a table of
``rows`` rows (id, customer, amount; replica identity default), filled by the server (``generate_series``)
afresh before every run. Each variant first reads the table's snapshot, then ``changes`` changes are
committed in transactions of ``PER_TRANSACTION`` (a third updates of existing rows, a tenth deletes, the
rest inserts of new ids), and the variant catches up. Timed, in turns (one round per run):

* ``mixed``: ``fw.from_table(..., changes=True).key_by("id").mirror()`` in mode mixed (the snapshot as the
  backlog, one sorted batch), trigger ``TRIGGER``;
* ``stream``: the same in mode stream (the snapshot as the first micro-batch);
* ``psycopg loop``: no Spark: a slot created with the snapshot the same way (``postgres_cdc.slot``), the
  snapshot ``COPY``'d into a dict, then the slot's changes peeked, decoded (``pgoutput``) and applied to the
  dict, the slot advanced: what one process with psycopg does.

Two phases each: **snapshot** (``start()`` to the mirror holding every row: ``process_all_available()``)
and **changes** (the first change's transaction begun to the mirror equal to the table again: the writes,
which every variant waits for alike, are timed apart as ``writes``). After each run the mirror's row count
and the sum of its amounts are checked against the table's.

**Latency**: on the last run's mirror (mixed, then stream, each caught up), ``LATENCY_SAMPLES`` times: one
row updated and committed, then the time until the job's micro-batch holding it committed (the
``micro_batch`` hook); the median.

**Memory**: ``keys.Sampler`` (every 0.2 s) keeps each phase's peak RSS of the driver's Python process and
of the largest Python worker (and the JVM's). The psycopg loop's dict lives in the driver process, so it
runs last in each round; a peak is a maximum over the runs.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import threading
import time

from benchmarks.keys import Sampler

TABLE = "bench_orders"
SCHEMA = "id bigint, customer bigint, amount double"
TRIGGER = "500 milliseconds"
PER_TRANSACTION = 1_000
LATENCY_SAMPLES = 20
VARIANTS = ("mixed", "stream", "psycopg loop")
CUSTOMERS = 1_000


def fill(server, rows: int) -> None:
    server.sql(f"DROP TABLE IF EXISTS {TABLE}")
    server.sql(f"CREATE TABLE {TABLE} (id bigint PRIMARY KEY, customer bigint, amount double precision)")
    server.sql(f"INSERT INTO {TABLE} SELECT i, (i * 7919) % {CUSTOMERS}, (i % 1000) / 10.0 "
               f"FROM generate_series(1::bigint, {rows}) AS i")
    server.sql(f"ANALYZE {TABLE}")


def change_statements(rows: int, changes: int) -> list[list[str]]:
    """The changes as transactions of about ``PER_TRANSACTION`` changes: each updates, deletes and inserts
    its share (a third updates of ids from 1 up, a tenth deletes of ids from ``rows`` down, the rest inserts
    of ids above ``rows``), so that every change touches a row once."""
    updates, deletes = changes // 3, changes // 10
    inserts = changes - updates - deletes
    if updates + deletes > rows:
        raise ValueError(f"--changes {changes:,} updates and deletes more rows than --table-rows {rows:,} holds")
    count = max(1, changes // PER_TRANSACTION)

    def share(total: int, i: int) -> tuple[int, int]:  # the i-th of ``count`` slices of range(total)
        return total * i // count, total * (i + 1) // count

    out = []
    for i in range(count):
        (u0, u1), (d0, d1), (i0, i1) = share(updates, i), share(deletes, i), share(inserts, i)
        out.append([
            f"UPDATE {TABLE} SET amount = amount + 1 WHERE id > {u0} AND id <= {u1}",
            f"DELETE FROM {TABLE} WHERE id > {rows - d1} AND id <= {rows - d0}",
            f"INSERT INTO {TABLE} SELECT i, i % {CUSTOMERS}, 1.5 FROM generate_series({rows + i0 + 1}::bigint, "
            f"{rows + i1}) AS i",
        ])
    return out


def write(url: str, transactions: list[list[str]]) -> float:
    """Commit the transactions; the seconds it took."""
    from fw_magics.connectors.postgres.client import connect

    started = time.perf_counter()
    with connect(url) as conn:
        for statements in transactions:
            with conn.transaction():
                for statement in statements:
                    conn.execute(statement)
    return time.perf_counter() - started


def table_totals(server) -> tuple[int, float]:
    n, total = server.sql(f"SELECT count(*), coalesce(sum(amount), 0) FROM {TABLE}")[0]
    return int(n), round(float(total), 1)


class Mirror:
    """One fw-magics mirror job in ``mode``."""

    def __init__(self, server, jobs: str, mode: str, name: str):
        import fw_magics as fw

        self.server, self.mode = server, mode
        stream = fw.from_table(server.url, TABLE, SCHEMA, changes=True).key_by("id").mirror()
        self.job = stream.start(job_dir=jobs, job_name=name, mode=mode, trigger=TRIGGER)

    def catch_up(self) -> None:
        self.job.process_all_available()

    def totals(self) -> tuple[int, float]:
        latest = self.job.latest()
        return len(latest), round(float(latest["amount"].sum()), 1)

    def latency(self, samples: int) -> float:
        """The median seconds from an update's commit to the micro-batch holding it committed."""
        from fw_magics import hooks
        from fw_magics.connectors.postgres.client import connect

        seen = threading.Event()
        hook = hooks.register("micro_batch", lambda job, info: (job is self.job and info.get("input_rows"))
                              and seen.set())
        times = []
        try:
            with connect(self.server.url) as conn:
                conn.autocommit = True
                for i in range(samples):
                    seen.clear()
                    conn.execute(f"UPDATE {TABLE} SET amount = amount + 1 WHERE id = {i + 1}")
                    committed = time.perf_counter()
                    if not seen.wait(60):
                        raise RuntimeError(f"{self.mode}: no micro-batch within 60 s of a commit")
                    times.append(time.perf_counter() - committed)
                    time.sleep(0.3)  # the next change after the query is idle again, not mid-batch
        finally:
            hook.unregister()
        return statistics.median(times)

    def stop(self) -> None:
        self.job.stop()


class Loop:
    """The psycopg-only way: a slot created with its snapshot, the snapshot into a dict, the changes applied."""

    SLOT = "fw_bench_psycopg_loop"

    def __init__(self, server):
        from fw_magics.connectors.postgres_cdc import slot

        self.server, self.rows = server, {}

        def read_snapshot(copy, lsn, now):
            with copy(f"COPY {TABLE} (id, customer, amount) TO STDOUT") as stream:
                for row in stream.rows():
                    self.rows[int(row[0])] = (int(row[1]), float(row[2]))

        self.lsn, _ = slot.create(server.url, TABLE, self.SLOT, read_snapshot)

    def catch_up(self) -> None:
        from fw_magics.connectors.postgres_cdc import pgoutput, slot
        from fw_magics.values.changes import DELETE, UPDATE_BEFORE

        relations: dict = {}
        with slot.connect(self.server.url) as conn:
            last = slot.last_commit(conn, self.SLOT, self.SLOT, TABLE)
            if last is None or last <= self.lsn:
                return
            for tx in pgoutput.transactions(slot.messages(conn, self.SLOT, self.SLOT, last, TABLE), relations):
                for change in tx.changes:
                    key = int(change.values[0])
                    if change.op == DELETE:
                        self.rows.pop(key, None)
                    elif change.op != UPDATE_BEFORE:
                        self.rows[key] = (int(change.values[1]), float(change.values[2]))
            slot.advance(conn, self.SLOT, last, TABLE)
            self.lsn = last

    def totals(self) -> tuple[int, float]:
        return len(self.rows), round(sum(amount for _, amount in self.rows.values()), 1)

    def stop(self) -> None:
        from fw_magics.connectors.postgres_cdc import slot

        slot.drop(self.server.url, self.SLOT)
        self.rows = {}


def warm_up(server, jobs: str) -> None:
    """One small mirror, untimed: the first job of a process pays for Spark's Python workers and the
    source's first use, which no variant should carry."""
    fill(server, 1_000)
    mirror = Mirror(server, jobs, "mixed", "warm-up")
    try:
        mirror.catch_up()
        write(server.url, change_statements(1_000, 100))
        mirror.catch_up()
    finally:
        mirror.stop()


def run(rows: int, changes: int, runs: int) -> dict:
    import fw_magics as fw
    from fw_magics.teaching.scratch_postgres import ScratchPostgres

    spark = fw.get_spark()
    transactions = change_statements(rows, changes)
    server = ScratchPostgres(logical=True).start()
    jobs = tempfile.mkdtemp(prefix="fw-bench-cdc-")
    times = {(v, phase): [] for v in VARIANTS for phase in ("snapshot", "changes", "writes")}
    latency = {}
    try:
        warm_up(server, jobs)
        with Sampler(spark) as sampler:
            for round_ in range(runs):
                for variant in VARIANTS:
                    fill(server, rows)
                    sampler.mark(f"{variant} snapshot")
                    started = time.perf_counter()
                    mirror = Loop(server) if variant == "psycopg loop" else \
                        Mirror(server, jobs, variant, f"{variant}-{round_}")
                    try:
                        mirror.catch_up()
                        times[variant, "snapshot"].append(time.perf_counter() - started)
                        sampler.mark(f"{variant} changes")
                        started = time.perf_counter()
                        times[variant, "writes"].append(write(server.url, transactions))
                        mirror.catch_up()
                        times[variant, "changes"].append(time.perf_counter() - started)
                        sampler.mark(None)
                        if mirror.totals() != table_totals(server):
                            raise AssertionError(f"{variant}: the mirror {mirror.totals()} is not the table "
                                                 f"{table_totals(server)} (rows, sum of amounts)")
                        if round_ == runs - 1 and variant != "psycopg loop":
                            latency[variant] = mirror.latency(LATENCY_SAMPLES)
                        print(f"  {variant}, run {round_ + 1}: snapshot {times[variant, 'snapshot'][-1]:.2f} s, "
                              f"changes {times[variant, 'changes'][-1]:.2f} s", file=sys.stderr, flush=True)
                    finally:
                        sampler.mark(None)
                        mirror.stop()
                    for (slot_name,) in server.sql("SELECT slot_name FROM pg_replication_slots WHERE NOT active"):
                        fw.drop_slot(server.url, slot_name)
        return {"rows": rows, "changes": changes, "runs": runs, "latency": latency, "peaks": sampler.peaks,
                "medians": {key: statistics.median(t) for key, t in times.items()}}
    finally:
        server.stop()
        shutil.rmtree(jobs, ignore_errors=True)


def print_table(result: dict) -> None:
    m, peaks = result["medians"], result["peaks"]
    print("\n| variant | snapshot | changes (writes included) | of which writes | first change visible (median of "
          f"{LATENCY_SAMPLES}) | peak driver Python, snapshot / changes | peak largest worker, snapshot / changes |")
    print("|---" * 7 + "|")
    for v in VARIANTS:
        snap, chg = peaks.get(f"{v} snapshot", {}), peaks.get(f"{v} changes", {})
        seen = f"{result['latency'][v]:.2f} s" if v in result["latency"] else "–"
        worker = "–" if v == "psycopg loop" else f"{snap.get('worker', 0)} / {chg.get('worker', 0)} MiB"
        print(f"| {v} | {m[v, 'snapshot']:.2f} s | {m[v, 'changes']:.2f} s | {m[v, 'writes']:.2f} s | {seen} "
              f"| {snap.get('driver', 0)} / {chg.get('driver', 0)} MiB | {worker} |")
    ours = m["mixed", "snapshot"] + m["mixed", "changes"]
    loop = m["psycopg loop", "snapshot"] + m["psycopg loop", "changes"]
    stream = m["stream", "snapshot"] + m["stream", "changes"]
    print(f"\nsnapshot and changes in all: mixed {ours:.1f} s, stream {stream:.1f} s ({stream / ours:.2f}x mixed), "
          f"psycopg loop {loop:.1f} s ({loop / ours:.2f}x mixed); peak JVM RSS "
          f"{max(p.get('jvm', 0) for p in peaks.values())} MiB")
