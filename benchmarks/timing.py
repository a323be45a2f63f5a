"""The one timing rule of every benchmark: warm up, then the median of repeated runs."""

from __future__ import annotations

import statistics
import time
from typing import Callable


def median_time(fn: Callable[[], object], runs: int, warmups: int = 0) -> float:
    for _ in range(warmups):
        fn()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)
