"""A kernel's shutdown request (Kernel > Restart or Shut Down) is a running job's last word, on disk at once.

ipykernel answers a shutdown request by setting the shell's ``exit_now``, then terminates Spark's JVM, and
Jupyter kills the kernel 5 s after the request: the interruption must be on disk before any of that, and
whatever the job writes while it stops (its ``stopped`` phase, a failure the JVM's end causes) never
replaces it. A real IPython shell, real files; no Spark.
"""

import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from IPython.core.interactiveshell import InteractiveShell

from fw_magics.graph import JobGraph
from fw_magics.recovery import events
from fw_magics.recovery.event_store import JobEventStore
from fw_magics.recovery.job_log import EXITING, SHUTDOWN, JobLog
from fw_magics.recovery.jobs import read_job
from fw_magics.recovery.paths import EVENTS


@pytest.fixture
def shell(tmp_path, monkeypatch):
    monkeypatch.setenv("FW_JOB_INDEX", str(tmp_path / "index.json"))
    shell = InteractiveShell.instance()
    shell.exit_now = False
    yield shell
    shell.exit_now = False


def running(root: str) -> JobLog:
    """A streaming job's log in its backlog, as start() leaves it."""
    log = JobLog(root, "job")
    log.acquire()
    log.read()
    log.begin()
    graph = JobGraph(mode="streaming")
    graph.add_operator("files(src)", 2, kind="source")
    log.submitted(graph, None)
    log.emit(events.stream_started("mixed", 1))
    log.emit(events.phase_changed("backlog"))
    return log


def on_disk(root: str) -> list[dict]:
    """The events a fresh kernel reads: what is on disk now, read by another reader."""
    return JobEventStore(JobLog(root, "job").storage.path(EVENTS)).read_events()


def test_a_shutdown_request_puts_the_interruption_on_disk_before_anything_stops(shell, tmp_path):
    log = running(str(tmp_path / "job"))
    shell.exit_now = True  # what ipykernel's do_shutdown does on a shutdown request
    last = on_disk(log.root)[-1]  # the log is still open: nothing has stopped yet
    assert (last["type"], last["cause"]) == ("job_cancelled", SHUTDOWN)
    # then the job stops as Spark's JVM goes: a clean stop's phase, then the exit handlers
    log.emit(events.phase_changed("stopped"))
    log.interrupt_at_exit()
    job = read_job(log.root, "job")
    assert job.status == "cancelled" and job.state.phase == "stopped"
    assert [e["cause"] for e in job.events if e["type"] == "job_cancelled"] == [SHUTDOWN]


# The job's own ends: stop() (its stopped phase, no last word), an interruption seen by its thread (the
# session went away), a failure; or none (the process killed first). Each then closes the log.
ENDS = {
    "stop": lambda log: None,
    "interrupted": lambda log: log.cancelled("interrupted: the Spark session went away under it"),
    "failed": lambda log: log.failed(RuntimeError("boom")),
}


def expected(end: str | None, shutdown: str, exits: bool) -> tuple[str, str | None]:
    """The reference model: the first last word written before the log closes wins; with none, a stop
    reads as stopped and a log cut short as interrupted (its process died without a word)."""
    words = []
    if shutdown == "before":
        words.append(("cancelled", SHUTDOWN))
    if end == "interrupted":
        words.append(("cancelled", "interrupted: the Spark session went away under it"))
    elif end == "failed":
        words.append(("failed", "RuntimeError: boom"))
    if end is None and shutdown == "after":  # the job has not closed its log: the request still finds it open
        words.append(("cancelled", SHUTDOWN))
    if end is None and exits:
        words.append(("cancelled", EXITING))
    if words:
        return words[0]
    return ("stopped", None) if end == "stop" else ("interrupted", None)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(end=st.sampled_from([None, *ENDS]), shutdown=st.sampled_from(["before", "after", "never"]),
       exits=st.booleans())
def test_the_status_a_shutdown_leaves_matches_the_model(shell, end, shutdown, exits):
    with tempfile.TemporaryDirectory() as folder:
        log = running(folder + "/job")
        shell.exit_now = False
        if shutdown == "before":
            shell.exit_now = True
        if end is not None:
            ENDS[end](log)
            log.emit(events.phase_changed("failed" if end == "failed" else "stopped"))
            log.close()
        if shutdown == "after":
            shell.exit_now = True
        if exits:
            log.interrupt_at_exit()  # the exit handler
        else:  # SIGKILL: nothing more is written; what is on disk counts, and no process holds the lock
            log.close()
        job = read_job(log.root, "job")
        status, cause = expected(end, shutdown, exits)
        last = job.state.timeline[-1] if job.state.last_word is None else next(
            e for e in job.events if e["type"] == job.state.last_word)
        assert (job.status, last.get("cause") if job.state.last_word else None) == (status, cause)
        shell.exit_now = False
