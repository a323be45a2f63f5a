"""The table `.ci/run` prints at its end: each part's wall time, its tests and their outcome.

    python scripts/ci_report.py REPORT_DIR

REPORT_DIR holds ``started`` (the run's start, epoch seconds), ``parts`` (one line per part `.ci/run` ran:
its name, seconds, exit status, written as each part ends; two parts may run side by side) and the JUnit
XML files pytest wrote (``JUNIT_DIR``, see the Makefile), named after the pytest run they hold (a part's
``NAME.xml``, then ``NAME-*.xml``: see ``runs_of``), each with a ``.cpu``
file beside it: how busy the machine's cores were over that run
(tests/conftest.py), a share from 0 to 1. Only the standard library: it runs before and after the virtualenv exists.

After the table, each run's slowest cases (``slowest``): where the next minute of CI is to be found.
"""

from __future__ import annotations

import pathlib
import sys
import time
import xml.etree.ElementTree as ET


def minutes(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


def junit(path: pathlib.Path) -> dict:
    """Counts of one pytest run's JUnit file: passed, failed, skipped, and the time pytest measured."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return {}
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    total = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0, "time": 0.0}
    for suite in suites:
        for key in total:
            total[key] += float(suite.get(key, 0) or 0)
    return total


def busy(run: pathlib.Path) -> str:
    """How busy the cores were over a pytest run, as written beside its JUnit file, or ''."""
    try:
        return f"{float(run.with_suffix('.cpu').read_text()):.0%}"
    except (OSError, ValueError):
        return ""


def runs_of(report: pathlib.Path, name: str) -> list[pathlib.Path]:
    """A part's pytest runs: NAME.xml, then NAME-*.xml (NAME-beside.xml where it ran two side by side,
    scripts/side_by_side.py; NAME-connect.xml, make test-extended's Spark Connect run)."""
    return sorted(report.glob(f"{name}.xml")) + sorted(report.glob(f"{name}-*.xml"))


def table(report: pathlib.Path) -> str:
    lines = ["| part | result | tests | time | cores busy |", "|---|---|---|---|---|"]
    whole, failed = 0.0, False
    parts = report / "parts"
    for line in (parts.read_text().splitlines() if parts.exists() else []):
        name, seconds, status = line.rsplit(" ", 2)
        whole += float(seconds)
        failed |= status != "0"
        runs = runs_of(report, name)
        counts = [junit(run) for run in runs]
        if not any(counts):
            lines.append(f"| {name} | {'passed' if status == '0' else f'FAILED (exit {status})'} | | {minutes(float(seconds))} | |")
        for run, c in zip(runs, counts):
            if not c:
                continue
            bad = int(c["failures"] + c["errors"])
            passed = int(c["tests"] - bad - c["skipped"])
            # a part of two runs fails as a whole: its run without failures passed
            alone = status == "0" or (len(runs) > 1 and any(d and d["failures"] + d["errors"] for d in counts))
            result = f"**{bad} failed**" if bad else "passed" if alone else f"FAILED (exit {status})"
            wall = minutes(float(seconds)) + " " if run.stem == name else "in its second lane: "
            lines.append(f"| {run.stem} | {result} | {passed} passed, {int(c['skipped'])} skipped | "
                         f"{wall}(pytest {minutes(c['time'])}) | {busy(run)} |")
    try:  # parts ran side by side: the run's own wall time, not their sum
        whole = time.time() - float((report / "started").read_text())
    except (OSError, ValueError):
        pass
    lines.append(f"| all of .ci/run | {'**failed**' if failed else 'passed'} | | **{minutes(whole)}** | |")
    return "\n".join(lines)


def slowest(report: pathlib.Path, count: int = 8) -> str:
    """Each pytest run's ``count`` slowest cases (setup, call and teardown together), longest first."""
    lines = []
    for run in sorted(report.glob("*.xml")):
        try:
            cases = list(ET.parse(run).getroot().iter("testcase"))
        except (OSError, ET.ParseError):
            continue
        timed = sorted(((float(c.get("time", 0) or 0), f"{c.get('classname', '')}::{c.get('name', '')}")
                        for c in cases), reverse=True)[:count]
        if timed:
            lines.append(f"{run.stem}: its {len(timed)} slowest cases")
            lines += [f"  {seconds:7.1f} s  {name}" for seconds, name in timed]
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(pathlib.Path(sys.argv[1])))
    print(slowest(pathlib.Path(sys.argv[1])))
