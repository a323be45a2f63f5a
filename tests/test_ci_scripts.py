"""The scripts CI runs around the suite: two pytest runs side by side, and the closing table (issue 53)."""

import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import ci_report  # noqa: E402


def test_side_by_side_runs_the_spark_cases_and_the_others_apart_and_fails_if_any_run_fails(tmp_path):
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "test_cases.py").write_text(
        "import os, pytest\n"
        "@pytest.mark.spark\n"
        "def test_spark():\n    open(os.environ['SEEN'] + '/spark-' + str(os.getpid()), 'w').close()\n"
        "def test_other():\n    open(os.environ['SEEN'] + '/other-' + str(os.getpid()), 'w').close()\n"
        "@pytest.mark.extended\n"
        "def test_left_out():\n    raise AssertionError('not selected')\n")
    seen, junit = tmp_path / "seen", tmp_path / "junit"
    seen.mkdir(), junit.mkdir()

    def run(*then):
        return subprocess.run([sys.executable, str(ROOT / "scripts" / "side_by_side.py"), "part", "not extended",
                               str(junit), *then, "--", str(cases)], cwd=cases, capture_output=True, text=True,
                              env={"SEEN": str(seen), "PATH": "/usr/bin:/bin"})

    done = run("--then", "touch $SEEN/then-0; ls $SEEN/other-*")  # after the second lane's pytest
    assert done.returncode == 0, done.stdout + done.stderr
    pids = {name.split("-")[0]: name.split("-")[1] for name in (p.name for p in seen.iterdir())}
    assert set(pids) == {"spark", "other", "then"} and pids["spark"] != pids["other"]  # two processes
    assert {p.name for p in junit.glob("*.xml")} == {"part.xml", "part-beside.xml"}
    assert "beside it" in done.stdout and "1 passed" in done.stdout and "/other-" in done.stdout
    assert run("--then", "exit 3").returncode == 1  # the follow-up's failure fails the run
    (cases / "test_cases.py").write_text((cases / "test_cases.py").read_text().replace(
        "def test_other():\n", "def test_other():\n    raise AssertionError('beside fails')\n"))
    failed = run()
    assert failed.returncode == 1 and "beside fails" in failed.stdout


def test_the_closing_table_has_a_row_per_run_and_the_run_s_own_wall_time(tmp_path):
    def junit(name, tests, failures, seconds):
        (tmp_path / f"{name}.xml").write_text(
            f'<testsuites><testsuite tests="{tests}" failures="{failures}" errors="0" skipped="1" '
            f'time="{seconds}"/></testsuites>')

    (tmp_path / "started").write_text(str(time.time() - 3000))
    (tmp_path / "parts").write_text("test 600 0\nextended 1500 1\ncluster 700 0\n")
    junit("test", 300, 0, 590), junit("test-beside", 1200, 0, 100)
    junit("extended", 80, 1, 1400), junit("extended-beside", 40, 0, 900), junit("extended-connect", 49, 0, 390)
    junit("cluster", 6, 0, 690)
    rows = ci_report.table(tmp_path).splitlines()[2:]
    assert rows[0] == "| test | passed | 299 passed, 1 skipped | 10:00 (pytest 9:50) |  |"
    assert rows[1] == "| test-beside | passed | 1199 passed, 1 skipped | in its second lane: (pytest 1:40) |  |"
    assert rows[2].startswith("| extended | **1 failed** | 78 passed") and rows[3].startswith("| extended-beside | passed")
    assert rows[4].startswith("| extended-connect | passed | 48 passed") and rows[5].startswith("| cluster | passed")
    assert rows[6] in ("| all of .ci/run | **failed** | | **50:00** | |", "| all of .ci/run | **failed** | | **50:01** | |")


def test_the_slowest_cases_of_each_run_follow_the_table_longest_first(tmp_path):
    (tmp_path / "extended.xml").write_text(
        '<testsuites><testsuite tests="3">'
        '<testcase classname="tests.a" name="test_quick" time="1.5"/>'
        '<testcase classname="tests.b" name="test_slow" time="90.25"/>'
        '<testcase classname="tests.c" name="test_middle" time="30"/>'
        '</testsuite></testsuites>')
    (tmp_path / "broken.xml").write_text("<testsuites>")  # cut short: left out, not a crash
    lines = ci_report.slowest(tmp_path, count=2).splitlines()
    assert lines == ["extended: its 2 slowest cases", "     90.2 s  tests.b::test_slow",
                     "     30.0 s  tests.c::test_middle"]
