"""Replay and resume decisions on synthetic event logs (no Spark)."""

import os
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fw_magics.errors import FullWindowError
from fw_magics.recovery import JobLock, JobLockedError, decide_resume, events, replay, safe_job_path


def finished(v, i, ok=True):
    return events.subtask_finished(v, i, 1, None, 1, 10, 0.1,
                                   [{"path": f"results/{v}/{i}.arrow", "size": 10, "sha256": "ok" if ok else "bad"}])


def test_replay_tracks_finished_reset_and_status():
    log = [events.job_submitted("j", "{}", "f1"), events.vertex_initialized("v0", 2, []),
           finished("v0", 0), finished("v0", 1), events.subtask_reset("v0", 1, "lost"),
           {"type": "mystery"}, events.job_failed("boom")]
    with pytest.warns(UserWarning, match="unknown event type"):
        state = replay(log)
    assert state.fingerprint == "f1" and state.parallelism == {"v0": 2}
    assert set(state.finished) == {("v0", 0)} and state.status == "failed"


@st.composite
def logs(draw):
    n = draw(st.integers(1, 5))
    widths = [draw(st.integers(1, 3)) for _ in range(n)]
    vertices = [(f"v{k}", i) for k in range(n) for i in range(widths[k])]
    producers = {}
    for k in range(n):
        for i in range(widths[k]):
            producers[(f"v{k}", i)] = [] if k == 0 else [(f"v{k - 1}", j) for j in range(widths[k - 1])
                                                          if draw(st.booleans()) or j == i % widths[k - 1]]
    done = {v for v in vertices if draw(st.booleans())}
    bad = {v for v in done if draw(st.integers(0, 4)) == 0}
    return vertices, producers, [finished(v, i, (v, i) not in bad) for v, i in sorted(done)], done, bad


def reference_rerun(vertices, producers, done, bad):
    """FLIP-383 by fixpoint: run what is unfinished, every sink whose output is gone, and
    every producer that a vertex to run reads and that is unfinished or lost its result."""
    consumed = {p for ps in producers.values() for p in ps}
    run = {v for v in vertices if v not in done or (v in bad and v not in consumed)}
    while True:
        more = {p for v in run for p in producers[v] if p not in done or p in bad} - run
        if not more:
            return run
        run |= more


@settings(max_examples=300, deadline=None)
@given(logs())
def test_resume_decision_properties(case):
    vertices, producers, log, done, bad = case
    checked = []

    def file_problem(f):
        checked.append(tuple(f["path"].removesuffix(".arrow").split("/")[1:]))
        return None if f["sha256"] == "ok" else "result corrupt"

    decision = decide_resume(vertices, producers, replay(log), file_problem)
    assert decision.rerun == reference_rerun(vertices, producers, done, bad)
    assert decision.keep == set(vertices) - decision.rerun
    assert set(vertices) - done <= decision.rerun  # every unfinished vertex runs
    assert done - bad <= decision.keep  # intact work is never redone
    for v in decision.rerun:  # a re-run vertex can read all its inputs
        for p in producers[v]:
            assert p in decision.rerun or p not in bad
    # files are read only where a result is needed: sinks and inputs of what runs again
    consumed = {p for ps in producers.values() for p in ps}
    needed = {v for v in done if v not in consumed} | {p for v in decision.rerun for p in producers[v]}
    assert {(v, int(i)) for v, i in checked} <= needed and len(checked) == len(set(checked))


def test_a_lost_result_nothing_reads_again_is_not_recomputed():
    # v0 -> v1 -> v2 pointwise, one subtask each: v0's file is gone, v1 finished intact,
    # v2 unfinished. Only v2 runs; v0's file is never even looked at.
    vertices = [("v0", 0), ("v1", 0), ("v2", 0)]
    producers = {("v0", 0): [], ("v1", 0): [("v0", 0)], ("v2", 0): [("v1", 0)]}
    log = [finished("v0", 0, ok=False), finished("v1", 0)]
    looked = []
    decision = decide_resume(vertices, producers, replay(log), lambda f: looked.append(f["path"]) or
                       (None if f["sha256"] == "ok" else "result missing"))
    assert decision.rerun == {("v2", 0)} and decision.reasons == {("v2", 0): "unfinished"}
    assert looked == ["results/v1/0.arrow"]
    # a lost sink output is the job's output: it runs again, and so does its lost input
    log = [finished("v0", 0, ok=False), finished("v1", 0), finished("v2", 0, ok=False)]
    decision = decide_resume(vertices, producers, replay(log), lambda f: None if f["sha256"] == "ok" else "result missing")
    assert decision.rerun == {("v2", 0)} and decision.reasons == {("v2", 0): "result missing"}


def test_job_names_cannot_escape():
    assert safe_job_path("/jobs", "sales 2024-01") == "/jobs/sales 2024-01"
    for name in ["..", "../x", "a/b", "a\\b", "", ".hidden", "x" * 201, "nul\x00"]:
        with pytest.raises(FullWindowError, match="is not allowed"):
            safe_job_path("/jobs", name)


def test_lock_excludes_a_second_holder_and_releases(tmp_path):
    with JobLock(str(tmp_path)):
        with pytest.raises(JobLockedError, match="is being run by pid"):
            JobLock(str(tmp_path)).acquire()
    assert not (tmp_path / "LOCK").exists()


def test_lock_of_a_dead_process_is_taken_over(tmp_path, capsys):
    import json
    import socket
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)
    (tmp_path / "LOCK").write_text(json.dumps({"pid": pid, "host": socket.gethostname(), "heartbeat": time.time()}))
    with JobLock(str(tmp_path)):
        assert json.loads((tmp_path / "LOCK").read_text())["pid"] == os.getpid()
    said = capsys.readouterr().out
    assert said.startswith("fw-magics: taking over a stale lock") and said.endswith("that process is gone\n"), said


def test_lock_with_an_old_heartbeat_is_stale(tmp_path, capsys):
    import json

    (tmp_path / "LOCK").write_text(json.dumps({"pid": 1, "host": "elsewhere", "heartbeat": time.time() - 100}))
    JobLock(str(tmp_path), stale_after=10).acquire().release()
    assert capsys.readouterr().out.startswith("fw-magics: taking over a stale lock")


def test_a_cancelled_job_replays_as_cancelled():
    log = [events.job_submitted("j", "{}", "f1"), events.vertex_initialized("v0", 1, []), finished("v0", 0),
           events.job_cancelled("interrupted: cancelled 1 Spark job")]
    assert replay(log).status == "cancelled"
    assert replay(log + [events.job_submitted("j", "{}", "f1")]).status == "running"  # resumed


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["finish", "fail", "reset", "noise"]), st.integers(0, 1), st.integers(0, 2)),
                max_size=30))
def test_subtask_attempts_count_every_ended_attempt_of_each_subtask(steps):
    """Reference: an attempt ends in subtask_finished or in a region_failed listing the subtask."""
    from fw_magics.recovery import subtask_attempts

    log, expected = [events.job_submitted("j", "{}", "f")], {}
    for kind, vertex, subtask in steps:
        key = (f"v{vertex}", subtask)
        if kind == "finish":
            log.append(finished(*key))
        elif kind == "fail":
            others = [f"v{vertex}[{(subtask + 1) % 3}]"] if subtask % 2 else []
            log.append(events.region_failed(key[0], [f"{key[0]}[{subtask}]", *others], "boom", 1))
            for name in others:
                other = (key[0], int(name[-2]))
                expected[other] = expected.get(other, 0) + 1
        elif kind == "reset":
            log.append(events.subtask_reset(*key, "restarted by failover"))  # no attempt ends
            continue
        else:
            log.append({"type": "subtask_finished", "vertex": key[0]})  # malformed: skipped
            continue
        expected[key] = expected.get(key, 0) + 1
    assert subtask_attempts(log) == expected
