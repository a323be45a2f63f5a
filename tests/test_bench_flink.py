"""The --against-flink benchmark's pure parts: its table, and what it says without PyFlink (no Spark, no Flink)."""

import subprocess
import sys

from benchmarks import against_flink


def test_the_table_has_every_case_with_its_ratio():
    table = against_flink.format_table([("sort_partition(price)", 3.0, 1.5), ("scan", 1.0, 2.0)]).splitlines()
    assert table[0] == "| case | fw-magics | Flink (Java operator) | ratio fw-magics/Flink |"
    assert table[2] == "| sort_partition(price) | 3.00 s | 1.50 s | 2.00x |"
    assert table[3] == "| scan | 1.00 s | 2.00 s | 0.50x |"


def test_without_pyflink_it_says_how_to_get_it_and_exits_2(tmp_path):
    done = subprocess.run([sys.executable, "-m", "benchmarks", "--against-flink"], capture_output=True, text=True,
                          env={"FW_FLINK_VENV": str(tmp_path / "missing"), "PATH": "/usr/bin:/bin"},
                          cwd=against_flink.ROOT)
    assert done.returncode == 2
    assert done.stdout.count("\n") == 1 and "make bench-flink" in done.stdout
