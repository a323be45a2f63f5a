"""How long ``import fw_magics`` takes, and the first use of a name that needs Spark.

Each is timed in a fresh interpreter (``python -c ...``), less the same interpreter doing
nothing (``python -c pass``), the median of ``runs``; the disk cache is warm after the first
run (a cold cache, right after a reboot, adds the reading of the files: about 1 s for
PySpark).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

CASES = {
    "import fw_magics": "import fw_magics",
    "import fw_magics, then fw.from_records (imports pyspark and pyarrow)":
        "import fw_magics as fw; fw.from_records",
}


def _seconds(code: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - started


def run(runs: int = 5) -> list[dict]:
    _seconds("import fw_magics as fw; fw.from_records")  # warm the disk cache
    results = []
    for case, code in CASES.items():
        times = []
        for _ in range(runs):
            nothing = _seconds("pass")
            times.append(max(_seconds(code) - nothing, 0.0))
        results.append({"case": case, "median_s": statistics.median(times), "runs": runs,
                        "note": "fresh interpreter, less `python -c pass`; warm disk cache"})
    return results
