"""How the cost grows: every full-window case at several sizes, and on a wide input.

    python -m benchmarks --scale [--scale-rows 1000000,5000000,20000000] [--wide-columns 50]
                                 [--wide-rows N] [--runs R] [--case NAME] [--plot docs/scale.png]

Each case of ``--only fullwindow`` (fw-magics and the hand-written PySpark, timed in turns;
the naive way is left out) at each size, and once more at ``--wide-rows`` rows (the first
size by default) with ``--wide-columns`` columns in all; per run, the peak resident memory
of the largest Python worker. The input is generated afresh for every run (seeded, so the
same rows each time), never cached: the session runs with ``spark.driver.memory=1g`` (the
embedded Spark's executors live in the driver), so sort and map must spill, not fail, at
20,000,000 rows, and without Python worker reuse, so that each task's worker is fresh and
its peak memory is the task's own (both ways pay a worker start per task alike). Run it in
a fresh process: a session already started keeps its settings.

The ratio to the hand-written way at each size goes in a table and, with ``--plot``, a small
PNG (matplotlib: ``pip install -e '.[bench]'``).
"""

from __future__ import annotations

import os
import statistics
import time

from benchmarks.fullwindow import cases

SIZES = (1_000_000, 5_000_000, 20_000_000)
DRIVER_MEMORY = "1g"
_KIB = 1024  # /proc/PID/status counts kB


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        parent = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(parent, []).append(int(name))
    found, stack = [], [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def python_workers(root: int | None = None) -> list[int]:
    """The Python workers the embedded Spark forked (children of its pyspark daemon); [] elsewhere.

    ``root``: the process whose descendants (and itself) are searched; this one by default.
    """
    root = os.getpid() if root is None else root
    pyspark = set()
    for pid in [root, *_descendants(root)]:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                command = f.read().split(b"\0")
        except OSError:
            continue
        if any(b"pyspark" in part for part in command) and b"java" not in command[0]:
            pyspark.add(pid)
    workers = []
    for pid in pyspark:
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        if int(stat[stat.rindex(")") + 2:].split()[1]) in pyspark:  # forked by the daemon
            workers.append(pid)
    return workers


def _rss_mib(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * _KIB / 2**20
    except OSError:
        pass
    return None


class PeakSampler:
    """The largest resident memory any Python worker reached while inside, sampled every 20 ms.

    The scale session runs without worker reuse, so every task's worker is fresh and its
    memory is that task's own (a reused worker keeps what earlier runs left behind).
    """

    def __init__(self, interval: float = 0.02):
        self.interval, self.peak, self._stop = interval, None, None

    def __enter__(self):
        import threading

        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self):
        while not self._stop.is_set():
            for pid in python_workers():
                rss = _rss_mib(pid)
                if rss is not None and (self.peak is None or rss > self.peak):
                    self.peak = rss
            self._stop.wait(self.interval)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def timed_with_peaks(variants: dict, runs: int, warmups: int = 1) -> tuple[dict, dict]:
    """Median seconds and the largest Python worker's peak RSS (MiB) of each variant, in turns."""
    times: dict[str, list[float]] = {name: [] for name in variants}
    peaks: dict[str, float | None] = {name: None for name in variants}
    for round_ in range(warmups + runs):
        for name, fn in variants.items():
            with PeakSampler() as sampler:
                started = time.perf_counter()
                fn()
                elapsed = time.perf_counter() - started
            if round_ >= warmups:
                times[name].append(elapsed)
                if sampler.peak is not None:
                    peaks[name] = max(peaks[name] or 0.0, sampler.peak)
    return {name: statistics.median(t) for name, t in times.items()}, peaks


def run(sizes=SIZES, partitions: int = 4, runs: int = 3, wide_columns: int = 50, wide_rows: int | None = None,
        only: str = "", spark=None) -> list[dict]:
    import fw_magics as fw

    spark = spark or fw.get_spark(conf={"spark.driver.memory": DRIVER_MEMORY, "spark.python.worker.reuse": "false"})
    memory = spark.conf.get("spark.driver.memory", None)
    if memory != DRIVER_MEMORY:
        print(f"note: spark.driver.memory is {memory!r}, not {DRIVER_MEMORY!r}: a session was already running",
              flush=True)
    shapes = [(rows, 4, f"{rows:,} rows") for rows in sizes]
    if wide_columns > 4:
        rows = wide_rows or sizes[0]
        shapes.append((rows, wide_columns, f"{rows:,} rows x {wide_columns} columns"))
    results = []
    for rows, columns, label in shapes:
        for case, variants in cases(spark, rows, partitions, cache=False, extra_columns=columns - 4):
            if only and only not in case:
                continue
            variants.pop("naive Python")
            medians, peaks = timed_with_peaks(variants, runs)
            result = {"case": case, "rows": rows, "columns": columns, "shape": label, "medians": medians,
                      "peaks": peaks, "ratio": medians["fw-magics"] / medians["hand-written PySpark"]}
            results.append(result)
            print(f"  {label}, {case}: " + ", ".join(f"{k} {v:.2f}s" for k, v in medians.items())
                  + f"; ratio {result['ratio']:.2f}x", flush=True)
    return results


def _mib(value) -> str:
    return "n/a" if value is None else f"{value:.0f} MiB"


def print_table(results) -> None:
    print("\n| operation | input | fw-magics | hand-written PySpark | fw / hand-written "
          "| Python worker peak RSS, fw-magics | ..., hand-written |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        m, p = r["medians"], r["peaks"]
        print(f"| {r['case']} | {r['shape']} | {m['fw-magics']:.2f} s | {m['hand-written PySpark']:.2f} s "
              f"| {r['ratio']:.2f}x | {_mib(p['fw-magics'])} | {_mib(p['hand-written PySpark'])} |")


def plot(results, path: str) -> str | None:
    """A small PNG: fw / hand-written against rows, one line per case (the wide input as points)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "no plot: matplotlib is not installed (pip install -e '.[bench]')"
    figure, axes = plt.subplots(figsize=(8, 3.6), dpi=100)
    narrow = [r for r in results if r["columns"] == 4]
    wide = [r for r in results if r["columns"] != 4]
    for case in dict.fromkeys(r["case"] for r in narrow):
        points = sorted((r["rows"], r["ratio"]) for r in narrow if r["case"] == case)
        line, = axes.plot([x for x, _ in points], [y for _, y in points], marker="o", label=case)
        for r in wide:
            if r["case"] == case:
                axes.plot([r["rows"]], [r["ratio"]], marker="s", fillstyle="none", color=line.get_color())
    axes.axhline(1.0, color="grey", linewidth=0.8)
    axes.set_xscale("log")
    axes.set_xlabel("rows (squares: the wide input)")
    axes.set_ylabel("fw-magics / hand-written")
    axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
    figure.tight_layout()
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)
    return None
