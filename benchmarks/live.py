"""Issue 48's budget for the live view: a job with ``job.show()`` open processes a burst of fresh records within
1.05x the time without one.

One mixed job (a keyed count and sum, ``benchmarks.backlog.operators``) over a small backlog; after its switch,
bursts of ``records`` fresh records (3 Parquet files landing at once) are timed from landing to
``process_all_available()`` returning, in turns: without a view, then with one open (a ``JobView`` following the
job: it reads the log and each committed micro-batch's changelog part as they come), after one warm-up burst.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time

from benchmarks.backlog import operators, write_files

FILES = 3


def run(records: int = 300_000, keys: int = 10_000, runs: int = 3) -> list[dict]:
    import fw_magics as fw
    from fw_magics.widgets import JobView

    fw.get_spark()
    scratch = tempfile.mkdtemp(prefix="fw-live-")
    source, jobs = os.path.join(scratch, "src"), os.path.join(scratch, "jobs")
    write_files(source, 1_000, keys, 1)
    stream = fw.from_files(source, "parquet", "k long, v long, ts timestamp", event_time="ts")
    job = operators(stream)["aggregate"].start(job_dir=jobs, job_name="live", trigger="100 milliseconds")
    times: dict[str, list[float]] = {"without a view": [], "with job.show() open": []}
    refreshes = []
    first = 1
    try:
        job.process_all_available()

        def burst() -> float:
            nonlocal first
            landed = time.perf_counter()
            write_files(source, records, keys, FILES, first=first)
            first += FILES
            job.process_all_available()
            return time.perf_counter() - landed

        burst()  # warm-up
        for _ in range(runs):
            times["without a view"].append(burst())
            view = JobView(job)
            try:
                seen = view.refreshes
                times["with job.show() open"].append(burst())
                time.sleep(0.5)  # its last read
                refreshes.append(view.refreshes - seen)
            finally:
                view.close()
    finally:
        job.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    medians = {name: statistics.median(found) for name, found in times.items()}
    ratio = medians["with job.show() open"] / medians["without a view"]
    return [{"case": f"burst of {records:,} fresh records, {keys:,} keys ({FILES} files)", "medians": medians,
             "ratio": ratio, "runs": runs, "view_reads": refreshes}]


def print_table(results: list[dict]) -> None:
    print("\n| case | without a view | with job.show() open | ratio (budget 1.05x) | view's reads per burst |")
    print("|---|---|---|---|---|")
    for r in results:
        m = r["medians"]
        print(f"| {r['case']} | {m['without a view']:.2f} s | {m['with job.show() open']:.2f} s | {r['ratio']:.3f}x | "
              f"{', '.join(map(str, r['view_reads']))} |")
