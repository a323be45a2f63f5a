"""A full disk and a read-only job directory (issue 16, item 5).

The full disk is real: a small tmpfs mounted as the job directory (Linux, as root; the tests
that need it are skipped elsewhere). Without root, the temporary-file check runs against a
file-size limit (``RLIMIT_FSIZE``) in a subprocess instead, which fails writes the same way.
A read-only directory is a tmpfs remounted read-only (as root) or a folder without write
permission (otherwise).
"""

import contextlib
import os
import shutil
import subprocess
import sys
import uuid

import pytest

import fw_magics as fw
from fw_magics import hooks
from fw_magics.failover import FixedDelayRestart
from fw_magics.teaching import testing
from tests.runtime import jobs

pytestmark = [pytest.mark.spark]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _can_mount() -> bool:
    return sys.platform.startswith("linux") and os.geteuid() == 0


@contextlib.contextmanager
def tmpfs(path, size: str):
    os.makedirs(path, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield str(path)
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(folder: str) -> None:
    """Write until the file system is full."""
    with open(os.path.join(folder, f"filler-{uuid.uuid4().hex}"), "wb") as f:
        with contextlib.suppress(OSError):
            while True:
                f.write(b"\0" * 4096)
                f.flush()


def leftovers(folder: str) -> list[str]:
    return [os.path.join(d, n) for d, _, names in os.walk(folder) for n in names if ".tmp" in n]


def summarize(records):
    rows = list(records)
    yield (len(rows), sum(r.v for r in rows))


@pytest.mark.skipif(not _can_mount(), reason="a real full disk needs a tmpfs, which only root can mount")
def test_a_full_disk_names_the_tasks_error_and_the_event_logs_in_one_line(spark, tmp_path):
    with tmpfs(tmp_path / "disk", "512k") as disk:
        failing = testing.fail_on_attempts(summarize, subtask=0, attempts={1, 2}, state_dir=str(tmp_path / "state"))
        stream = fw.from_records(jobs.RECORDS, jobs.SCHEMA, partitions=1, name="sales")  # one task: its error
        stream = stream.full_window_partition().map_partition(failing, "n long, total double")
        with hooks.register("job_started", lambda run, recovered: fill(disk)):  # full once the run has begun
            with pytest.raises(fw.JobStorageError) as caught:
                stream.execute(job_dir=disk, job_name="full", restart=FixedDelayRestart(1, 0.0))
        message = str(caught.value)
        assert "\n" not in message and message.startswith("job 'full' failed: ")
        assert "InjectedFailure: injected failure in summarize subtask 0" in message  # the task's own error
        assert message.endswith("and then writing its job events failed too: OSError: [Errno 28] No space left "
                                "on device")
        assert "InjectedFailure" in str(caught.value.__cause__)  # the chain keeps both
        assert "No space left" in str(caught.value.__context__)
        assert leftovers(disk) == []


@pytest.mark.skipif(not _can_mount(), reason="a real full disk needs a tmpfs, which only root can mount")
def test_results_that_fill_the_disk_leave_no_temporary_file(spark, tmp_path):
    with tmpfs(tmp_path / "disk", "256k") as disk:
        big = [(i, i % 5, i % 3, float(i)) for i in range(40_000)]  # ~1.3 MB of Arrow: more than the disk
        stream = fw.from_records(big, jobs.SCHEMA, partitions=2, name="sales").full_window_partition().sort_partition("v")
        with pytest.raises(Exception, match="No space left on device"):
            stream.execute(job_dir=disk, job_name="big", restart=FixedDelayRestart(1, 0.0))
        assert leftovers(disk) == []


ATOMIC = """
import os, resource, signal, sys
from fw_magics.recovery.filesystem import Storage
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
folder = sys.argv[1]
try:
    with Storage(folder).atomic(os.path.join(folder, "results", "v0", "0.arrow")) as f:
        for _ in range(100):
            f.write(b"x" * 1000)
except OSError as error:
    print(error.errno)
"""


def test_a_write_that_fails_leaves_no_temporary_file(tmp_path):
    # no root needed: a file-size limit fails the write (EFBIG) as a full disk would (ENOSPC)
    done = subprocess.run([sys.executable, "-c", ATOMIC, str(tmp_path)], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=ROOT), timeout=60)
    assert done.stdout.strip() == str(27), done.stderr  # EFBIG: File too large
    assert leftovers(str(tmp_path)) == [] and os.listdir(tmp_path / "results" / "v0") == []


@contextlib.contextmanager
def read_only(folder: str):
    """Make ``folder`` read-only for this process: a read-only remount as root, else no write permission."""
    if os.geteuid() == 0:
        subprocess.run(["mount", "-o", "remount,ro", folder], check=True)
        try:
            yield
        finally:
            subprocess.run(["mount", "-o", "remount,rw", folder], check=False)
    else:
        modes = {}
        for d, dirs, names in os.walk(folder):
            for p in [d] + [os.path.join(d, n) for n in dirs + names]:
                modes[p] = os.stat(p).st_mode
                os.chmod(p, modes[p] & ~0o222)
        try:
            yield
        finally:
            for p, mode in modes.items():
                os.chmod(p, mode)


def test_a_finished_job_in_a_read_only_folder_is_read_back_without_the_lock(spark, tmp_path):
    context = tmpfs(tmp_path / "ro", "16m") if os.geteuid() == 0 else contextlib.nullcontext(str(tmp_path / "ro"))
    with context as folder:
        os.makedirs(folder, exist_ok=True)
        fw.execute(jobs.three_vertex_job(str(tmp_path / "markers")), job_dir=folder, job_name="sales")
        with read_only(folder):
            result = fw.execute(jobs.three_vertex_job(str(tmp_path / "markers")), job_dir=folder, job_name="sales")
            assert sorted(tuple(r) for r in result.collect()) == jobs.expected()
            assert result.ran == frozenset() and "read back without the lock" in repr(result)
            assert not os.path.exists(os.path.join(folder, "sales", "LOCK"))
            changed = fw.from_records(jobs.RECORDS[:-1], jobs.SCHEMA, partitions=4, name="sales")
            changed = changed.key_by("k").full_window_partition().reduce(jobs.add)
            changed = changed.key_by("g").full_window_partition().map_partition(jobs.summarize,
                                                                                 "g long, n long, total double")
            with pytest.raises(fw.JobStorageError) as caught:
                fw.execute(changed, job_dir=folder, job_name="sales")
            message = str(caught.value)
            assert "changed since its recorded run (the rows of 'sales';" in message and "\n" not in message
            assert "and its folder cannot be written (" in message
            from fw_magics.recovery import jobs as listing

            assert [(j.name, j.status) for j in listing.list_jobs(folder)] == [("sales", "finished")]


@pytest.fixture(scope="module")
def finished_sales(spark, tmp_path_factory):
    """A finished job (written once) and the markers folder its functions' closures hold."""
    root = tmp_path_factory.mktemp("finished")
    markers = str(root / "markers")
    fw.execute(jobs.three_vertex_job(markers), job_dir=str(root / "jobs"), job_name="sales")
    return str(root / "jobs"), markers


@pytest.mark.parametrize("plant", ["file", "fifo", "link to outside"])
def test_a_results_folder_replaced_by_something_else_is_one_line_and_nothing_is_written_outside(
        spark, tmp_path, finished_sales, plant):
    """Found by the hostile-directory property test: a file where ``results/v2`` belongs was a raw
    FileExistsError from every task attempt (retried to exhaustion); with a link there, folders
    were made through it before the link was noticed."""
    source, markers = finished_sales
    folder, outside = str(tmp_path / "jobs"), tmp_path / "outside"
    outside.mkdir()
    shutil.copytree(source, folder, symlinks=True)
    results = os.path.join(folder, "sales", "results", "v2")
    for name in os.listdir(results):
        os.remove(os.path.join(results, name))
    os.rmdir(results)
    {"file": lambda: open(results, "wb").close(), "fifo": lambda: os.mkfifo(results),
     "link to outside": lambda: os.symlink(outside, results)}[plant]()
    with pytest.raises(fw.JobStorageError) as caught:
        fw.execute(jobs.three_vertex_job(markers), job_dir=folder, job_name="sales",
                   restart=FixedDelayRestart(attempts=0))
    message = str(caught.value)
    assert "\n" not in message and results in message, message
    assert ("symbolic link" if plant.startswith("link") else "is not a folder") in message
    assert list(outside.iterdir()) == []
