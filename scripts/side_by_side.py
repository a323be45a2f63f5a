"""Run one selection of the test suite as two pytest processes side by side (issue 53).

    python scripts/side_by_side.py NAME MARK-EXPRESSION [JUNIT_DIR] [--then COMMAND] -- [pytest arguments...]

The cases that use the run's Spark session (marker ``spark``, given by tests/conftest.py to every case that
asks for the ``spark`` fixture) run in one pytest process, whose output shows as it runs; the others (the
models, the grammar, the recovery store; in the extended run the kernels, tutorials, browsers and killed
drivers, each with its own processes) run in a second one at the same time, whose output follows at the end.
One pytest process left a fifth to a third of the two cores idle (it waits on micro-batches, workers, kernel
starts); the second takes that share. ``--then COMMAND`` (a shell command) runs in the second lane after its
pytest, its output held with it (make test-extended: the Spark Connect run, while the classic Spark cases
still run; the two lanes never run two Connect servers at once). With ``JUNIT_DIR``, the runs write
``JUNIT_DIR/NAME.xml`` and ``JUNIT_DIR/NAME-beside.xml`` (.ci/run's closing table, scripts/ci_report.py).

Exits 0 when every run passed (a side with no case selected counts as passed), 1 otherwise. Ctrl-C (or a
SIGTERM) ends them all.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import threading

NO_TESTS = 5  # pytest's exit status when the selection is empty


class Lane(threading.Thread):
    """Commands run one after the other, each in its own process group; their exit statuses in ``statuses``."""

    def __init__(self, commands: list[list[str]], out=None):
        super().__init__(daemon=True)
        self.commands, self.out, self.statuses = commands, out, []
        self.proc, self.stopped = None, False

    def run(self) -> None:
        for command in self.commands:
            if self.stopped:
                return
            self.proc = subprocess.Popen(command, stdout=self.out, stderr=subprocess.STDOUT if self.out else None,
                                         start_new_session=True)
            self.statuses.append(self.proc.wait())

    def stop(self) -> None:
        self.stopped = True
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)


def pytest(marks: str, junit: str | None, extra: list[str]) -> list[str]:
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", marks,
            *([f"--junitxml={junit}"] if junit else []), *extra]


def main(argv: list[str]) -> int:
    cut = argv.index("--") if "--" in argv else len(argv)
    parser = argparse.ArgumentParser(prog="side_by_side.py")
    parser.add_argument("name")
    parser.add_argument("marks")
    parser.add_argument("junit_dir", nargs="?", default="")
    parser.add_argument("--then", default=None, help="a shell command the second lane runs after its pytest")
    args, extra = parser.parse_args(argv[:cut]), argv[cut + 1:]
    junit = (lambda suffix: os.path.join(args.junit_dir, f"{args.name}{suffix}.xml")) if args.junit_dir else \
        (lambda suffix: None)
    with tempfile.TemporaryFile("w+") as held:
        beside = Lane([pytest(f"({args.marks}) and not spark", junit("-beside"), ["-q", *extra]),
                       *([["sh", "-c", args.then]] if args.then else [])], out=held)
        main_run = Lane([pytest(f"({args.marks}) and spark", junit(""), ["--durations=30", *extra])])

        def end_all(signum, _frame):
            for lane in (main_run, beside):
                lane.stop()
            sys.exit(128 + signum)

        signal.signal(signal.SIGINT, end_all)
        signal.signal(signal.SIGTERM, end_all)
        for lane in (beside, main_run):
            lane.start()
        for lane in (main_run, beside):
            while lane.is_alive():
                lane.join(0.5)  # (a bare join() would hold off the signal handlers)
        held.seek(0)
        print(f"\n===== beside it: the cases that do not use the run's Spark session ({args.name}-beside)"
              f"{', then ' + args.then if args.then else ''} =====", flush=True)
        sys.stdout.write(held.read())
    return 0 if all(s in (0, NO_TESTS) for s in main_run.statuses + beside.statuses) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
