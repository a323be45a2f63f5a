"""Run every benchmark in one process and print medians and ratios.

    python -m benchmarks [--rows N] [--partitions P] [--runs R] [--only graph,import,widgets,recovery,fullwindow,backlog]
    python -m benchmarks --only backlog [--backlog-records N] [--keys K] [--files F] [--quick Q] [--runs R] [--ratio-only] [--case reduce]
    python -m benchmarks --only two [--backlog-records N] [--updates U] [--keys K] [--files F] [--quick Q] [--runs R]
    python -m benchmarks --only cdc [--table-rows N] [--changes C] [--runs R]   (a scratch PostgreSQL, wal_level=logical)
    python -m benchmarks --only live [--runs R]    (a burst of 300,000 fresh records with job.show() open vs without)
    python -m benchmarks --only cold [--runs R]    (fresh processes: embedded Spark against FW_SPARK_SHARED=1)
    python -m benchmarks --only jvm [--runs R]     (fresh processes: a short job's JVM, Java's defaults against the test targets')
    python -m benchmarks --only keys [--keys 10000,1000000] [--backlog-records N] [--files F] [--runs R]
                                     [--references-up-to K]
    python -m benchmarks --only state_read [--keys 1000000] [--runs R]   (a savepoint's keyed state as columns)
    python -m benchmarks --only per_record [--rows N] [--runs R]   (a per-record map_partition's Python, piece by piece)
    python -m benchmarks --scale [--scale-rows 1000000,5000000,20000000] [--wide-columns 50] [--wide-rows N]
                         [--runs R] [--case NAME] [--plot docs/scale.png]   (alone, in a fresh process)
    python -m benchmarks --against-flink [--rows N (default 1,000,000)] [--runs R] [--case NAME]   (make bench-flink)
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import sys


def machine() -> str:
    cores = os.cpu_count()
    try:
        with open("/proc/meminfo") as f:
            mem_gib = int(f.readline().split()[1]) / 2**20
    except OSError:
        mem_gib = float("nan")
    return f"{platform.machine()}, {cores} cores, {mem_gib:.0f} GiB, Python {platform.python_version()}"


MAIN_VARIANTS = ("fw-magics", "hand-written PySpark", "naive Python")


def print_fullwindow(results) -> None:
    print("\n| operation | fw-magics | hand-written PySpark | naive Python | fw / hand-written | naive / fw |")
    print("|---|---|---|---|---|---|")
    for r in results:
        m = r["medians"]
        ours, hand, naive = m["fw-magics"], m["hand-written PySpark"], m["naive Python"]
        print(f"| {r['case']} | {ours:.2f} s | {hand:.2f} s | {naive:.2f} s | {ours / hand:.2f}x | {naive / ours:.1f}x |")
        for name, other in m.items():  # an extra reference timed in the same turns
            if name not in MAIN_VARIANTS:
                print(f"| ... against {name} | | {other:.2f} s | | {ours / other:.2f}x | |")


def print_recovery(results) -> None:
    r = results[0]
    print("\n| measure | time | ratio |")
    print("|---|---|---|")
    print(f"| plain PySpark, straight to Parquet | {r['plain']:.2f} s | 1.00x |")
    print(f"| plain PySpark, each job vertex's result to Parquet and read back | {r['staged']:.2f} s | "
          f"{r['staged'] / r['plain']:.2f}x |")
    print(f"| execute() with committed results and events | {r['execute']:.2f} s | {r['execute'] / r['plain']:.2f}x |")
    print(f"| the same stream without execute(), straight to Parquet (fw-magics operators) | {r['same_stream']:.2f} s | "
          f"{r['same_stream'] / r['plain']:.2f}x |")
    print(f"| the same job vertices staged through Parquet by hand (fw-magics operators) | {r['same_staged']:.2f} s | "
          f"{r['same_staged'] / r['plain']:.2f}x |")
    print(f"| execute() / plain, / hand-staged, / the same vertices hand-staged | | {r['execute'] / r['plain']:.2f}x, "
          f"{r['execute'] / r['staged']:.2f}x, {r['execute'] / r['same_staged']:.2f}x |")
    print(f"| last job vertex's share of a clean execute() | {r['last_vertex_share']:.2f} s | |")
    print(f"| resume after a kill during the last job vertex | {r['resume']:.2f} s | "
          f"{r['resume'] / r['last_vertex_share']:.2f}x of that share |")
    print(f"| driver time writing events | {r['events_share'] * 100:.2f} % of the job | |")
    if r.get("breakdown"):
        print("\nwhere the time goes (one more run of each):")
        for line in r["breakdown"]:
            print(f"  {line}")


BACKLOG_VARIANTS = ("mixed", "batch", "stream", "stream, 1 file per trigger", "Spark batch groupBy().agg(sum)",
                    "Spark Structured Streaming groupBy().agg(sum)", "Spark batch groupBy().applyInPandas")


def print_backlog(results) -> None:
    print("\n| operator | " + " | ".join(BACKLOG_VARIANTS) + " | 1 file per trigger / mixed | mixed / batch "
          "| mixed / applyInPandas | first fresh result (1 small file) | fresh burst processed |")
    print("|---" * (len(BACKLOG_VARIANTS) + 6) + "|")
    for r in results:
        m = r["medians"]
        cells = " | ".join(f"{m[v]:.2f} s" if v in m else "–" for v in BACKLOG_VARIANTS)
        if "fresh_result_s" not in r:  # --ratio-only
            print(f"| {r['case']} | {cells} | – | {r['mixed_over_batch']:.2f}x | {r['mixed_over_pandas']:.2f}x | – | – |")
            continue
        print(f"| {r['case']} | {cells} | {r['limited_over_mixed']:.1f}x | {r['mixed_over_batch']:.2f}x "
              f"| {r['mixed_over_pandas']:.2f}x | {r['fresh_result_s']:.2f} s | {r['fresh_burst_s']:.2f} s |")
    for r in results:
        if r.get("note"):
            print(f"\n{r['case']}: {r['note']}")


def print_two_inputs(r) -> None:
    from benchmarks.two_inputs import VARIANTS

    m = r["medians"]
    print("\n| case | pairs | " + " | ".join(VARIANTS) + " | 1 file per trigger / mixed | stream / mixed "
          "| mixed / batch |")
    print("|---" * (len(VARIANTS) + 5) + "|")
    print(f"| {r['case']} | {r['pairs']:,} | " + " | ".join(f"{m[v]:.2f} s" for v in VARIANTS)
          + f" | {r['limited_over_mixed']:.1f}x | {r['stream_over_mixed']:.2f}x | {r['mixed_over_batch']:.2f}x |")
    if r.get("note"):
        print(f"\n{r['note']}")


def print_rows(title: str, results) -> None:
    print(f"\n| {title} | median | runs | note |")
    print("|---|---|---|---|")
    for r in results:
        print(f"| {r['case']} | {r['median_s'] * 1000:.1f} ms | {r['runs']} | {r.get('note', '')} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=None, help="default 5,000,000 (--against-flink: 1,000,000)")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", default="")
    parser.add_argument("--case", default="", help="full-window cases (backlog: operators) whose name contains this")
    parser.add_argument("--no-naive", action="store_true", help="skip the (slow) naive Python timings")
    parser.add_argument("--no-hand-written", action="store_true",
                        help="fullwindow: skip the hand-written PySpark timings (minutes with many --keys)")
    parser.add_argument("--warmups", type=int, default=2, help="fullwindow: warm-up rounds (default 2)")
    parser.add_argument("--no-breakdown", action="store_true",
                        help="fullwindow: no extra run of each variant for Spark's UI breakdown")
    parser.add_argument("--backlog-records", type=int, default=2_000_000, help="backlog: records (default 2,000,000)")
    parser.add_argument("--keys", default=None,
                        help="backlog: distinct keys (default 10,000); keys: the sizes, comma-separated "
                             "(default 10000,1000000); fullwindow: the keyed cases' keys (default 1,000)")
    parser.add_argument("--references-up-to", type=int, default=None,
                        help="keys: run the backlog's references (applyInPandas: minutes) up to this many keys "
                             "(default 1,000,000)")
    parser.add_argument("--files", type=int, default=20, help="backlog: Parquet files (default 20)")
    parser.add_argument("--updates", type=int, default=100_000, help="two: the second input's records (default 100,000)")
    parser.add_argument("--table-rows", type=int, default=1_000_000, help="cdc: the table's rows (default 1,000,000)")
    parser.add_argument("--changes", type=int, default=100_000,
                        help="cdc: the changes after the snapshot (default 100,000: a third updates, a tenth deletes)")
    parser.add_argument("--quick", type=int, default=None,
                        help="backlog: run the 1-file-per-trigger stream over only this many files, scaled")
    parser.add_argument("--ratio-only", action="store_true",
                        help="backlog: time mixed, batch and applyInPandas only, no fresh results (for FLIP-327's 10,000,000 records)")
    parser.add_argument("--scale", action="store_true",
                        help="every full-window case at several sizes and on a wide input, with spark.driver.memory=1g")
    parser.add_argument("--scale-rows", default="1000000,5000000,20000000", help="--scale: the sizes, comma-separated")
    parser.add_argument("--wide-columns", type=int, default=50, help="--scale: columns of the wide input (<= 4: none)")
    parser.add_argument("--wide-rows", type=int, default=None, help="--scale: rows of the wide input (the first size)")
    parser.add_argument("--plot", default=None, help="--scale: write the ratios as a PNG here (needs matplotlib)")
    parser.add_argument("--against-flink", action="store_true",
                        help="the full-window cases against Flink's Java FLIP-380 operators (needs .venv-flink)")
    args = parser.parse_args()
    if args.rows is None:
        args.rows = 1_000_000 if args.against_flink else 5_000_000
    only = set(filter(None, args.only.split(",")))
    if args.against_flink:
        from benchmarks import against_flink

        sys.exit(against_flink.main(args.rows, args.runs, only=args.case, header=f"machine: {machine()}"))
    if args.scale:
        from benchmarks import scale

        sizes = [int(size) for size in args.scale_rows.split(",") if size.strip()]
        print(f"machine: {machine()}")
        print(f"\ncost as the work grows: {', '.join(f'{s:,}' for s in sizes)} rows in {args.partitions} partitions "
              f"and a {args.wide_columns}-column input; median of {args.runs} runs taken in turns after one warm-up "
              f"round; input generated for every run; embedded Spark local[*], spark.driver.memory="
              f"{scale.DRIVER_MEMORY}")
        results = scale.run(sizes, args.partitions, args.runs, args.wide_columns, args.wide_rows, only=args.case)
        scale.print_table(results)
        if args.plot:
            problem = scale.plot(results, args.plot)
            print(f"\n{problem}" if problem else f"\nplot: {args.plot}")
        return

    print(f"machine: {machine()}")
    if not only or "graph" in only:
        try:
            graph = importlib.import_module("benchmarks.graph_scale")
        except ImportError:
            graph = None
        if graph is not None:
            print("\njob graph model (pure Python, no Spark):")
            print_rows("graph case", graph.run())
    if not only or "import" in only:
        from benchmarks import imports

        print("\nimport time (fresh interpreters):")
        print_rows("import", imports.run(args.runs))
    if not only or "widgets" in only:
        from benchmarks import widgets

        print("\njob-graph widget (pure Python, no Spark, no browser):")
        print_rows("widget case", widgets.run())
    if not only or "recovery" in only:
        from benchmarks import recovery

        print(f"\nexecute() with recovery: a 3-job-vertex pipeline on {args.rows:,} rows, median of 3 runs")
        print_recovery(recovery.run(args.rows, args.partitions))
    sizes = [int(k) for k in (args.keys or "").split(",") if k.strip()]
    if not only or "fullwindow" in only:
        from benchmarks import fullwindow

        print(f"\nfull-window operations: {args.rows:,} rows in {args.partitions} partitions, "
              f"median of {args.runs} runs taken in turns after {args.warmups} warm-up round(s), "
              "embedded Spark local[*]")
        print_fullwindow(fullwindow.run(args.rows, args.partitions, args.runs, only=args.case,
                                        naive=not args.no_naive, keys=sizes[0] if sizes else 1000,
                                        warmups=args.warmups, hand_written=not args.no_hand_written,
                                        breakdown=not args.no_breakdown))
    if not only or "backlog" in only:
        from benchmarks import backlog

        args.keys = sizes[0] if sizes else 10_000

        then = ("mixed, batch and applyInPandas only" if args.ratio_only else f"then 1 fresh file of {backlog.SMALL_FILE:,} records "
                f"and a burst of 3 fresh files of {args.backlog_records // args.files:,}")
        print(f"\nbacklog then stream (FLIP-327): {args.backlog_records:,} records, {args.keys:,} keys in "
              f"{args.files} Parquet files, {then}; median of {args.runs} runs taken in turns after "
              "one warm-up round, embedded Spark local[*]")
        print_backlog(backlog.run(args.backlog_records, args.keys, args.files, runs=args.runs, quick=args.quick,
                                  ratio_only=args.ratio_only, only=args.case))
    if "two" in only:  # the two-input case: only when asked for (its 1-file-per-trigger stream takes minutes)
        from benchmarks import two_inputs

        keys = sizes[0] if sizes else 10_000
        print(f"\ntwo inputs (FLIP-327): an interval join of {args.backlog_records:,} orders with {args.updates:,} "
              f"customer updates, {keys:,} keys, {args.files} Parquet files each, each order with the updates of the "
              f"hour before it; median of {args.runs} runs taken in turns after one warm-up round, embedded Spark "
              "local[*]")
        print_two_inputs(two_inputs.run(args.backlog_records, args.updates, keys, args.files, runs=args.runs,
                                        quick=args.quick))
    if "table" in only:  # needs a PostgreSQL server (a scratch one is started): only when asked for
        from benchmarks import table

        print(f"\nbacklog of a PostgreSQL table (FLIP-327 over a database): {args.backlog_records:,} rows, "
              f"{sizes[0] if sizes else 10_000:,} keys, a keyed count and sum; median of {args.runs} runs taken in "
              "turns after one warm-up round, embedded Spark local[*], a scratch PostgreSQL on loopback")
        table.print_table(table.run(args.backlog_records, sizes[0] if sizes else 10_000, args.runs))
    if "cdc" in only:  # needs a PostgreSQL server with wal_level = logical (a scratch one is started)
        from benchmarks import cdc

        print(f"\na table's snapshot then its changes (issue 49): a mirror of {args.table_rows:,} rows, then "
              f"{args.changes:,} changes in transactions of {cdc.PER_TRANSACTION:,} (a third updates, a tenth "
              f"deletes, the rest inserts); median of {args.runs} run(s) taken in turns, trigger {cdc.TRIGGER}, "
              "embedded Spark local[*], a scratch PostgreSQL on loopback")
        cdc.print_table(cdc.run(args.table_rows, args.changes, args.runs))
    if "live" in only:  # a streaming job's bursts: only when asked for
        from benchmarks import live

        runs = min(args.runs, 3)
        print(f"\nthe live view (issue 48): bursts of 300,000 fresh records into a running mixed job (a keyed count "
              f"and sum), landing to processed, with job.show() open and without, in turns after one warm-up burst; "
              f"median of {runs} runs, embedded Spark local[*]")
        live.print_table(live.run(runs=runs))
    if "cold" in only:  # fresh processes, a server started and stopped: only when asked for
        from benchmarks import cold_start

        print(f"\ncold start: a fresh process to its first result (sort of 1,000 rows), embedded Spark against "
              f"the shared warm Spark (FW_SPARK_SHARED=1); {args.runs} runs of each, in turns")
        cold_start.print_table(cold_start.run(args.runs))
    if "jvm" in only:  # fresh processes: only when asked for
        from benchmarks import short_jvms

        print(f"\nthe test suite's JVMs: a fresh process's short mixed job (300 records of backlog, one fresh file), "
              f"Java's defaults against C1 only, and C1 only with the serial GC (the Makefile's test targets); "
              f"{args.runs} runs of each, in turns")
        short_jvms.print_table(short_jvms.run(args.runs))
    if "keys" in only:  # long (minutes per size): only when asked for
        from benchmarks import keys

        sizes = sizes or [10_000, 1_000_000]
        print(f"\nkeyed state at scale (issue 33): {', '.join(f'{k:,}' for k in sizes)} keys, "
              f"{args.backlog_records:,} records (at least 2 per key) in {args.files} Parquet files, a keyed count "
              f"and sum at parallelism 2 (restored at 3); backlog variants: median of {args.runs} run(s) taken in "
              "turns; switch, fresh result, savepoint and restore: one run each; embedded Spark local[*]")
        up_to = keys.REFERENCES_UP_TO if args.references_up_to is None else args.references_up_to
        keys.print_table(keys.run(sizes, args.backlog_records, args.files, runs=args.runs, references_up_to=up_to))

    if "per_record" in only:  # issue 52: pure Python, in-process: only when asked for
        from benchmarks import per_record

        print(f"\na per-record map_partition's Python, piece by piece: one partition of {args.rows:,} rows in 4, "
              f"CPU time, the least of {args.runs} runs, no Spark")
        per_record.print_table(per_record.run(args.rows, args.runs))

    if "state_read" in only:  # issue 50: a savepoint's keyed state read as typed columns
        from benchmarks import state_read

        count = (sizes or [1_000_000])[0]
        print(f"\nkeyed state read as typed columns against spark.read.parquet: {count:,} keys, median of {args.runs}")
        state_read.print_table(state_read.run(count, args.runs))


if __name__ == "__main__":
    main()
