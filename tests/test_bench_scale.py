"""The --scale benchmark's pure parts: its table, its plot, and finding Python workers (no Spark).

The runner itself is run at a tiny size by hand (docs/benchmarks.md): it needs a fresh
Spark session of its own (spark.driver.memory=1g, no worker reuse), which the suite's
shared session cannot be.
"""

import os
import subprocess
import sys
import time

import pytest

from benchmarks import scale


def result(case, rows, columns, ours, hand, peak):
    return {"case": case, "rows": rows, "columns": columns, "shape": f"{rows:,} rows",
            "medians": {"fw-magics": ours, "hand-written PySpark": hand}, "ratio": ours / hand,
            "peaks": {"fw-magics": peak, "hand-written PySpark": None}}


RESULTS = [result("sort", 1000, 4, 1.2, 1.0, 120.0), result("sort", 5000, 4, 2.2, 2.0, 130.0),
           result("sort", 1000, 50, 3.0, 2.0, None)]


def test_the_table_has_every_row_with_its_ratio_and_peaks(capsys):
    scale.print_table(RESULTS)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 + len(RESULTS)
    assert lines[2] == "| sort | 1,000 rows | 1.20 s | 1.00 s | 1.20x | 120 MiB | n/a |"
    assert "1.50x | n/a | n/a |" in lines[4]


def test_the_plot_is_a_png(tmp_path):
    pytest.importorskip("matplotlib")  # the bench extra, not the tests'
    path = tmp_path / "docs" / "scale.png"
    assert scale.plot(RESULTS, str(path)) is None
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_python_workers_are_the_children_of_a_pyspark_daemon():
    # a stand-in daemon (a process whose command names pyspark) with one forked child
    code = ("import os, time\nif os.fork() == 0:\n    time.sleep(30)\nelse:\n    time.sleep(30)\n")
    daemon = subprocess.Popen([sys.executable, "-c", code, "pyspark.daemon"])
    try:
        for _ in range(100):
            workers = scale.python_workers(daemon.pid)  # not the suite's own Spark workers
            if workers:
                break
            time.sleep(0.05)
        assert len(workers) == 1 and workers[0] != daemon.pid
    finally:
        for pid in scale.python_workers(daemon.pid):
            os.kill(pid, 9)
        daemon.kill()
        daemon.wait()
