"""A tutorial's scratch server and folders go when its kernel goes, however it goes (issue 47, item 11):
Run All runs the clean-up cell too, so the tutorial leaves them to the kernel's end, and Kernel > Restart
kills a kernel that has not exited within 5 s, which runs no atexit."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _wait_until(predicate, timeout: float = 20) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def _kernel_like(tmp_path, body: str) -> subprocess.Popen:
    """A Python process (the kernel's stand-in) that runs ``body``, prints its last line, then waits."""
    script = tmp_path / "kernel.py"
    script.write_text(textwrap.dedent(body) + "\nimport sys, time\nsys.stdout.flush()\ntime.sleep(600)\n")
    return subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                            cwd=os.getcwd(), env={**os.environ, "PYTHONPATH": os.getcwd()})


@pytest.mark.parametrize("ending", ["kill -9", "normal exit"])
def test_a_process_and_folders_left_to_the_kernel_go_when_it_ends(tmp_path, ending):
    folder = tmp_path / "scratch"
    kernel = _kernel_like(tmp_path, f"""
        import os, subprocess, sys
        from fw_magics.teaching.leftovers import Leftovers
        os.makedirs({str(folder)!r})
        child = subprocess.Popen(["sleep", "600"])
        left = Leftovers(folders=[{str(folder)!r}], pid=child.pid)
        print(child.pid, left.watcher.pid, flush=True)
        {"sys.exit(0)" if ending == "normal exit" else "pass"}
    """)
    child, watcher = map(int, kernel.stdout.readline().split())
    if ending == "kill -9":
        kernel.send_signal(signal.SIGKILL)
    kernel.wait(30)
    try:
        assert _wait_until(lambda: _gone(child) and not folder.exists()), "the leftovers outlived the kernel"
        assert _wait_until(lambda: _gone(watcher))
    finally:
        for pid in (child, watcher):
            if not _gone(pid):
                os.kill(pid, signal.SIGKILL)


def test_clean_stops_and_removes_at_once_and_the_watcher_then_signals_nothing(tmp_path):
    from fw_magics.teaching.leftovers import Leftovers

    folder = tmp_path / "scratch"
    folder.mkdir()
    child = subprocess.Popen(["sleep", "600"])
    left = Leftovers(folders=[folder], pid=child.pid)
    left.clean()
    assert _gone(child.pid) and not folder.exists()  # at once: clean() waited for it
    assert left.watcher.wait(10) == 0
    left.clean()  # twice: nothing more
    stopped_by_its_owner = subprocess.Popen(["sleep", "600"])
    other = Leftovers(pid=stopped_by_its_owner.pid)
    stopped_by_its_owner.kill()
    stopped_by_its_owner.wait()
    other.clean(stopped=True)  # the owner stopped it: its PID, maybe reused already, is not signalled
    assert other.watcher.wait(10) == 0


def test_a_scratch_server_whose_kernel_is_killed_stops(tmp_path, postgres):
    """The real thing: ScratchPostgres started (and restarted: a new PID) in a process that is then killed -9
    stops by its PID."""
    kernel = _kernel_like(tmp_path, """
        from fw_magics.teaching.scratch_postgres import ScratchPostgres
        server = ScratchPostgres().start().restart()
        print(server.process.pid, server.folder, flush=True)
    """)
    pid, folder = kernel.stdout.readline().split()
    kernel.send_signal(signal.SIGKILL)
    kernel.wait(30)
    assert _wait_until(lambda: _gone(int(pid)) and not os.path.exists(folder), 40), "the server outlived its kernel"
