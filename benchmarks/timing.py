"""The one timing rule of every benchmark: warm up, then the median of repeated runs."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_time(fn: Callable[[], object], runs: int, warmups: int = 0) -> float:
    for _ in range(warmups):
        fn()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def interleaved_medians(fns: dict[str, Callable[[], object]], runs: int, warmups: int = 0) -> dict[str, float]:
    """Median time of each of ``fns``, run in turns so that drift and warm-up hit all alike.

    A JVM compiles hot code over the first few runs; timing one variant's runs before the
    other's would hand the second the warm-up the first paid for.
    """
    times: dict[str, list[float]] = {name: [] for name in fns}
    for round_ in range(warmups + runs):
        for name, fn in fns.items():
            started = time.perf_counter()
            fn()
            if round_ >= warmups:
                times[name].append(time.perf_counter() - started)
    return {name: statistics.median(t) for name, t in times.items()}


def print_runs_table(times: dict[str, list[float]], baseline: str, what: str) -> None:
    """A markdown table of each variant's runs: its median, the runs, and the median against ``baseline``'s."""
    base = statistics.median(times[baseline])
    print(f"\n| {what} | median | runs | against {baseline} |")
    print("|---|---|---|---|")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"| {name} | {median:.2f} s | {', '.join(f'{v:.2f}' for v in values)} | {median / base:.2f}x |")
