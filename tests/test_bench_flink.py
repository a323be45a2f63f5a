"""The --against-flink benchmark's pure parts: its table, and what it says without PyFlink (no Spark, no Flink)."""

import subprocess
import sys

from benchmarks import against_flink


def test_the_table_has_every_case_with_its_ratio_and_its_time_less_the_scan():
    table = against_flink.format_table([("scan (read and discard)", 1.0, 0.5), ("sort_partition(price)", 3.0, 1.5),
                                        ("aggregate", 0.9, 0.4), ("cold start", 5.0, 3.0)]).splitlines()
    assert table[0] == ("| case | fw-magics | Flink (Java operator) | fw-magics / Flink "
                        "| less the scan: fw-magics, Flink, ratio |")
    assert table[2] == "| scan (read and discard) | 1.00 s | 0.50 s | 2.00x |  |"
    assert table[3] == "| sort_partition(price) | 3.00 s | 1.50 s | 2.00x | 2.00 s, 1.00 s, 2.00x |"
    assert table[4] == "| aggregate | 0.90 s | 0.40 s | 2.25x | -0.10 s, -0.10 s, - |"  # faster than its scan
    assert table[5] == "| cold start | 5.00 s | 3.00 s | 1.67x |  |"


def test_without_a_scan_row_the_table_has_no_times_less_the_scan():
    table = against_flink.format_table([("sort_partition(price)", 3.0, 1.5)]).splitlines()
    assert table[2] == "| sort_partition(price) | 3.00 s | 1.50 s | 2.00x |  |"


def test_without_pyflink_it_says_how_to_get_it_and_exits_2(tmp_path):
    done = subprocess.run([sys.executable, "-m", "benchmarks", "--against-flink"], capture_output=True, text=True,
                          env={"FW_FLINK_VENV": str(tmp_path / "missing"), "PATH": "/usr/bin:/bin"},
                          cwd=against_flink.ROOT)
    assert done.returncode == 2
    assert done.stdout.count("\n") == 1 and "make bench-flink" in done.stdout
