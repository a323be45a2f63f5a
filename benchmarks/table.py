"""FLIP-327 over a database: a keyed count-and-sum over a PostgreSQL table's backlog (``--only table``).

A scratch PostgreSQL server (``fw_magics.teaching.scratch_postgres``, Debian's, on loopback) holds a table of
``records`` rows (k, v, ts; ``keys`` keys), filled by the server itself (``generate_series``). In turns
(``timing.interleaved_medians``):

* ``mixed``: ``fw.from_table`` in mixed mode, until ``process_all_available()`` returns after the switch
  (the backlog read in ranges of ``id``, one task per core, run as one sorted batch, the stream running);
* ``batch``: the same backlog in batch mode (the backlog only);
* ``stream``: stream mode, every row in the first micro-batch (``availableNow``);
* ``pyspark by hand``: what one writes without a JDBC driver on Spark's classpath: the rows fetched with
  psycopg into pandas, ``createDataFrame``, then Spark's ``groupBy().agg(count, sum)`` (a JVM aggregate:
  no Python per record);
* ``naive python``: the rows fetched with psycopg, counted and summed per key in a dict;
* ``in postgresql``: the same ``GROUP BY`` inside the database (what a query costs where the data is).
"""

from __future__ import annotations

import shutil
import tempfile

from benchmarks.backlog import operators
from benchmarks.timing import interleaved_medians

TABLE = "bench_readings"
VARIANTS = ("mixed", "batch", "stream", "pyspark by hand", "naive python", "in postgresql")


def fill(server, records: int, keys: int) -> None:
    server.sql(f"DROP TABLE IF EXISTS {TABLE}")
    server.sql(f"CREATE TABLE {TABLE} (id bigserial PRIMARY KEY, k bigint, v bigint, ts timestamptz)")
    server.sql(f"INSERT INTO {TABLE} (k, v, ts) SELECT (i * 7919) % {keys}, i % 100, "
               f"timestamptz '2024-01-01 00:00:00+00' + i * interval '1 millisecond' "
               f"FROM generate_series(1::bigint, {records}) AS i")
    server.sql(f"ANALYZE {TABLE}")


def run(records: int, keys: int, runs: int) -> dict:
    import fw_magics as fw
    from fw_magics.connectors.postgres.client import connect
    from fw_magics.teaching.scratch_postgres import ScratchPostgres

    spark = fw.get_spark()
    server = ScratchPostgres().start()
    jobs = tempfile.mkdtemp(prefix="fw-bench-table-")
    try:
        fill(server, records, keys)
        stream = fw.from_table(server.url, TABLE, "k long, v long, ts timestamp", event_time="ts")
        counted = operators(stream)["aggregate"]
        count = {"n": 0}

        def job(mode, **options):
            def go():
                count["n"] += 1
                started = counted.start(job_dir=jobs, job_name=f"{mode}-{count['n']}", mode=mode, **options)
                try:
                    started.process_all_available()
                finally:
                    started.stop()
            return go

        def by_hand():
            import pandas as pd
            from pyspark.sql import functions as F

            with connect(server.url) as conn, conn.cursor() as cur:
                cur.execute(f"SELECT k, v, ts FROM {TABLE}")
                frame = pd.DataFrame(cur.fetchall(), columns=["k", "v", "ts"])
            (spark.createDataFrame(frame).groupBy("k").agg(F.count("v"), F.sum("v"))
             .write.format("noop").mode("overwrite").save())

        def naive():
            totals: dict = {}
            with connect(server.url) as conn, conn.cursor(name="naive") as cur:
                cur.execute(f"SELECT k, v FROM {TABLE}")
                for k, v in cur:
                    n, s = totals.get(k, (0, 0))
                    totals[k] = (n + 1, s + v)
            assert len(totals) == keys

        def in_database():
            assert len(server.sql(f"SELECT k, count(*), sum(v) FROM {TABLE} GROUP BY k")) == keys

        medians = interleaved_medians({
            "mixed": job("mixed", trigger="1 second"), "batch": job("batch"),
            "stream": job("stream", trigger="available_now"), "pyspark by hand": by_hand, "naive python": naive,
            "in postgresql": in_database,
        }, runs, warmups=1)
        return {"records": records, "keys": keys, "runs": runs, "medians": medians}
    finally:
        server.stop()
        shutil.rmtree(jobs, ignore_errors=True)


def print_table(result: dict) -> None:
    m = result["medians"]
    print("\n| " + " | ".join(VARIANTS) + " | mixed / batch | mixed / by hand | mixed / naive |")
    print("|---" * (len(VARIANTS) + 3) + "|")
    print("| " + " | ".join(f"{m[v]:.2f} s" for v in VARIANTS) + f" | {m['mixed'] / m['batch']:.2f}x | "
          f"{m['mixed'] / m['pyspark by hand']:.2f}x | {m['mixed'] / m['naive python']:.2f}x |")
