"""JobLock is really exclusive (issue 16, item 10).

Several processes released together on a barrier never hold it at once (with and without a
stale LOCK to take over); a holder paused past ``stale_after`` loses it without clobbering or
deleting the new owner's LOCK, and learns it lost it; symlinks in the job directory are never
followed; a damaged LOCK is taken over, not a crash. Every process started here is stopped
by its PID.
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import warnings

import pytest

from fw_magics.recovery import JobLock, JobLockedError
from fw_magics.recovery.lock import JobLockLostError

PROCESSES = 3
TRIALS = 100


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


def _plant_stale(root: str, pid: int) -> None:
    with open(os.path.join(root, "LOCK"), "w") as f:
        json.dump({"pid": pid, "host": socket.gethostname(), "heartbeat": time.time() - 3600,
                   "started": time.time() - 7200}, f)


def _contend(root, index, trials, stale_pid, barrier, holding, overlaps, holders):
    """One contender: in each trial, take the lock if it can, hold it briefly, release it."""
    warnings.simplefilter("ignore")
    for trial in range(trials):
        if stale_pid and index == 0:
            _plant_stale(root, stale_pid)
        barrier.wait(timeout=60)
        try:
            lock = JobLock(root, stale_after=30).acquire()
        except JobLockedError:
            pass
        else:
            with holding.get_lock():
                holding.value += 1
                if holding.value > 1:
                    overlaps.value += 1
            time.sleep(0.003)
            with holding.get_lock():
                holding.value -= 1
            with holders.get_lock():
                holders[trial] += 1
            lock.release()
        barrier.wait(timeout=60)


@pytest.mark.parametrize("stale", [False, True], ids=["free", "stale LOCK present"])
def test_processes_released_together_never_hold_the_lock_at_once(tmp_path, stale):
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(PROCESSES)
    holding, overlaps = context.Value("i", 0), context.Value("i", 0)
    holders = context.Array("i", TRIALS)
    stale_pid = _dead_pid() if stale else 0
    workers = [
        context.Process(target=_contend, args=(str(tmp_path), i, TRIALS, stale_pid, barrier, holding, overlaps, holders))
        for i in range(PROCESSES)
    ]
    for worker in workers:
        worker.start()
    try:
        for worker in workers:
            worker.join(timeout=120)
        assert all(w.exitcode == 0 for w in workers), [w.exitcode for w in workers]
    finally:
        for worker in workers:
            if worker.is_alive():
                os.kill(worker.pid, signal.SIGKILL)
                worker.join()
    assert overlaps.value == 0, f"two holders at once in {overlaps.value} of {TRIALS} trials"
    assert min(holders) >= 1, "a trial where nobody got the lock"
    assert not os.path.exists(tmp_path / "LOCK")
    assert [p.name for p in tmp_path.iterdir()] == [], "temporary files left behind"


HOLDER = textwrap.dedent("""
    import sys, warnings
    warnings.simplefilter("ignore")
    from fw_magics.recovery import JobLock
    from fw_magics.recovery.lock import JobLockLostError
    lock = JobLock(sys.argv[1], stale_after=float(sys.argv[2])).acquire()
    print("held", flush=True)
    sys.stdin.readline()
    try:
        lock.release()
    except JobLockLostError as error:
        print("lost:", error, flush=True)
    else:
        print("released", flush=True)
""")


def _start_holder(root, stale_after: float) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-c", HOLDER, str(root), str(stale_after)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "held"
    return process


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.kill(process.pid, signal.SIGCONT)
        os.kill(process.pid, signal.SIGKILL)
        process.wait()


def _lock_pid(root) -> int:
    with open(os.path.join(root, "LOCK")) as f:
        return json.load(f)["pid"]


def test_a_holder_paused_past_stale_after_loses_the_lock_and_does_not_clobber_it(tmp_path, capsys):
    stale_after = 1.0
    paused = _start_holder(tmp_path, stale_after)
    try:
        os.kill(paused.pid, signal.SIGSTOP)
        time.sleep(stale_after * 1.6)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a note, not a warning (nothing for the caller to change)
            mine = JobLock(str(tmp_path), stale_after=stale_after).acquire()
        said = capsys.readouterr().out
        assert said.startswith("fw-magics: taking over a stale lock") and "no heartbeat for" in said, said
        try:
            os.kill(paused.pid, signal.SIGCONT)
            time.sleep(stale_after)  # three of its heartbeats
            assert _lock_pid(tmp_path) == os.getpid(), "the paused holder's heartbeat overwrote the new owner's LOCK"
            paused.stdin.write("release\n")
            paused.stdin.flush()
            said = paused.stdout.readline()
            assert said.startswith("lost:") and "took over" in said, said
            assert paused.wait(timeout=30) == 0
            assert _lock_pid(tmp_path) == os.getpid(), "the paused holder's release deleted the new owner's LOCK"
            assert mine.lost is None
        finally:
            mine.release()
        assert not os.path.exists(tmp_path / "LOCK")
    finally:
        _stop(paused)


def test_losing_the_lock_is_raised_when_the_block_ends(tmp_path):
    with pytest.raises(JobLockLostError, match="took over"):
        with JobLock(str(tmp_path), stale_after=0.3) as lock:
            other = {"pid": 1, "host": "elsewhere", "heartbeat": time.time(), "started": time.time(), "token": "x"}
            (tmp_path / "LOCK.new").write_text(json.dumps(other))
            os.replace(tmp_path / "LOCK.new", tmp_path / "LOCK")  # as a takeover does
            time.sleep(0.5)
            assert lock.lost is not None
    assert json.loads((tmp_path / "LOCK").read_text())["host"] == "elsewhere", "a lost lock must not be deleted"
    # an error already on its way out is not replaced: the loss is a warning then
    (tmp_path / "LOCK").unlink()
    with pytest.raises(KeyError), pytest.warns(UserWarning, match="took over"):
        with JobLock(str(tmp_path), stale_after=0.3):
            (tmp_path / "LOCK.new").write_text(json.dumps(other))
            os.replace(tmp_path / "LOCK.new", tmp_path / "LOCK")
            time.sleep(0.5)
            raise KeyError("the job's own error")


# -- symlinks and other files where LOCK should be -------------------------------------------


def test_a_lock_that_is_a_symlink_is_refused_and_not_followed(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    job = tmp_path / "job"
    job.mkdir()
    (job / "LOCK").symlink_to(victim)
    with pytest.raises(JobLockedError) as caught:
        JobLock(str(job)).acquire()
    assert "\n" not in str(caught.value) and "symbolic link" in str(caught.value)
    assert victim.read_text() == "precious" and (job / "LOCK").is_symlink()
    (job / "LOCK").unlink()
    (job / "LOCK").symlink_to(tmp_path / "nowhere")  # dangling
    with pytest.raises(JobLockedError, match="symbolic link"):
        JobLock(str(job)).acquire()
    assert not (tmp_path / "nowhere").exists()
    assert JobLock(str(job)).held_by() is None


def test_the_heartbeat_never_writes_through_a_planted_symlink(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    job = tmp_path / "job"
    job.mkdir()
    (job / f"LOCK.{os.getpid()}").symlink_to(victim)  # the old heartbeat's temporary name
    with JobLock(str(job), stale_after=0.3):
        time.sleep(0.5)
    assert victim.read_text() == "precious"


@pytest.mark.parametrize("make", ["directory", "fifo"])
def test_a_lock_that_is_not_a_regular_file_is_refused_in_one_line(tmp_path, make):
    path = tmp_path / "LOCK"
    path.mkdir() if make == "directory" else os.mkfifo(path)
    started = time.monotonic()
    with pytest.raises(JobLockedError) as caught:
        JobLock(str(tmp_path)).acquire()
    assert time.monotonic() - started < 10
    assert "\n" not in str(caught.value) and "not a regular file" in str(caught.value)
    assert JobLock(str(tmp_path)).held_by() is None


# -- damaged contents ---------------------------------------------------------------------------


@pytest.mark.parametrize("content", [
    b"", b"not json", b"[1, 2]", b'"x"', b"\xff\xfe", b"[" * 100_000 + b"]" * 100_000,
    b'{"pid": "x", "host": "h", "heartbeat": 1}', b'{"pid": 0, "host": "h", "heartbeat": 1e300}',
    b'{"pid": 5, "host": [], "heartbeat": "soon"}', b" " * 200_000,
], ids=["empty", "text", "list", "string", "binary", "deep", "pid-text", "pid-zero", "field-types", "huge"])
def test_a_damaged_lock_is_taken_over_with_a_line_saying_so(tmp_path, content, capsys):
    (tmp_path / "LOCK").write_bytes(content)
    assert JobLock(str(tmp_path)).held_by() is None
    with JobLock(str(tmp_path)):
        assert _lock_pid(tmp_path) == os.getpid()
    said = capsys.readouterr().out
    assert said.startswith("fw-magics: taking over a damaged lock") and said.count("\n") == 1, said
    assert not (tmp_path / "LOCK").exists()


def test_the_stale_lock_line_gives_local_dates_and_why(tmp_path, capsys, caplog):
    started, beat = time.time() - 7200, time.time() - 3600
    (tmp_path / "LOCK").write_text(json.dumps({"pid": 1, "host": "elsewhere", "heartbeat": beat, "started": started}))
    with caplog.at_level(logging.INFO, logger="fw_magics"), warnings.catch_warnings():
        warnings.simplefilter("error")  # said as a plain line on stdout, not as a red warning
        JobLock(str(tmp_path), stale_after=10).acquire().release()
    printed = capsys.readouterr().out
    assert printed.startswith("fw-magics: ") and printed.count("\n") == 1, printed
    message = printed.removeprefix("fw-magics: ").rstrip("\n")
    assert [r.getMessage() for r in caplog.records if r.name == "fw_magics"] == [message]  # for an app's logs
    assert message.endswith("local time): no heartbeat for 3,600 s"), message
    assert time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)) in message, message
    assert time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(beat)) in message, message
    assert str(int(beat)) not in message and "pid 1 on host elsewhere" in message
