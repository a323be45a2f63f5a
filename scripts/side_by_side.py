"""Run one selection of the test suite as two pytest processes side by side (issue 53).

    python scripts/side_by_side.py NAME MARK-EXPRESSION [JUNIT_DIR] -- [pytest arguments...]

The cases that use the run's Spark session (marker ``spark``, given by tests/conftest.py to every case that
asks for the ``spark`` fixture) run in one pytest process, whose output shows as it runs; the others (the
models, the grammar, the recovery store; in the extended run the kernels, tutorials, browsers and killed
drivers, each with its own processes) run in a second one at the same time, whose output follows at the end.
One pytest process left a fifth to a third of the two cores idle (it waits on micro-batches, workers, kernel
starts); the second takes that share. With ``JUNIT_DIR``, the runs write ``JUNIT_DIR/NAME.xml`` and
``JUNIT_DIR/NAME-beside.xml`` (.ci/run's closing table, scripts/ci_report.py).

Exits 0 when both runs passed (a side with no case selected counts as passed), 1 otherwise. Ctrl-C (or a
SIGTERM) ends both.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile

NO_TESTS = 5  # pytest's exit status when the selection is empty


def pytest(marks: str, junit: str | None, extra: list[str]) -> list[str]:
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", marks,
            *([f"--junitxml={junit}"] if junit else []), *extra]


def main(argv: list[str]) -> int:
    if "--" not in argv or len(argv[:argv.index("--")]) not in (2, 3):
        sys.exit("usage: side_by_side.py NAME MARK-EXPRESSION [JUNIT_DIR] -- [pytest arguments...]")
    head, extra = argv[:argv.index("--")], argv[argv.index("--") + 1:]
    name, marks, junit_dir = head[0], head[1], (head[2] if len(head) == 3 and head[2] else None)
    junit = (lambda suffix: os.path.join(junit_dir, f"{name}{suffix}.xml")) if junit_dir else (lambda suffix: None)
    with tempfile.TemporaryFile("w+") as held:
        beside = subprocess.Popen(pytest(f"({marks}) and not spark", junit("-beside"), ["-q", *extra]),
                                  stdout=held, stderr=subprocess.STDOUT, start_new_session=True)
        main_run = subprocess.Popen(pytest(f"({marks}) and spark", junit(""), ["--durations=30", *extra]),
                                    start_new_session=True)

        def end_both(signum, _frame):
            for proc in (main_run, beside):
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGTERM)
            sys.exit(128 + signum)

        signal.signal(signal.SIGINT, end_both)
        signal.signal(signal.SIGTERM, end_both)
        statuses = [main_run.wait(), beside.wait()]
        held.seek(0)
        print(f"\n===== beside it, the cases that do not use the run's Spark session ({name}-beside) =====", flush=True)
        sys.stdout.write(held.read())
    return 0 if all(s in (0, NO_TESTS) for s in statuses) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
