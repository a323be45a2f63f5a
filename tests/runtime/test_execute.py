"""execute(): region-by-region runs, failover during a run, resume from the event log."""

import os
import shutil

import pytest

import fw_magics as fw
from fw_magics.failover import FixedDelayRestart
from fw_magics.teaching import testing
from tests.conftest import is_connect
from tests.runtime import jobs

pytestmark = [pytest.mark.spark, pytest.mark.backends]  # and on the cluster, in the same run as the core cases


def rows(result):
    return sorted(tuple(r) for r in result.collect())


@pytest.fixture
def dirs(tmp_path):
    return str(tmp_path / "jobs"), str(tmp_path / "markers")


@pytest.fixture(scope="module")
def _finished_once(spark, tmp_path_factory):
    """Job "sales" run once to its end, its job directory and markers kept as they were then."""
    root = tmp_path_factory.mktemp("finished")
    work = str(root / "jobs"), str(root / "markers")
    fw.execute(jobs.three_vertex_job(work[1]), job_dir=work[0], job_name="sales")
    kept = str(root / "kept")
    for path in work:
        shutil.copytree(path, os.path.join(kept, os.path.basename(path)))
    return work, kept


@pytest.fixture
def finished(_finished_once):
    """``dirs`` after a clean run of job "sales": the module's one run, copied back to the same paths for each
    test (the job's closures hold the markers' path, so its content fingerprint is that of a run in this test)."""
    work, kept = _finished_once
    for path in work:
        shutil.rmtree(path, ignore_errors=True)
        shutil.copytree(os.path.join(kept, os.path.basename(path)), path)
    return work


def test_clean_run_equals_the_stream_and_records_events(spark, dirs):
    job_dir, markers = dirs
    stream = jobs.three_vertex_job(markers)
    result = fw.execute(stream, job_dir=job_dir, job_name="sales")
    assert rows(result) == jobs.expected() == sorted(tuple(r) for r in stream.collect())
    assert result.recovered == frozenset() and len(result.ran) > 0
    types = [e["type"] for e in result.events()]
    assert types[0] == "job_submitted" and types[-1] == "job_finished"
    assert types.count("vertex_initialized") == 3
    assert types.count("subtask_finished") == 4 + 4 + 4
    # "attempt" is each subtask's own: nothing failed, so every subtask ran once
    assert {e["attempt"] for e in result.events() if e["type"] == "subtask_finished"} == {1}
    # and the job is in the job index, so that %fw_recover finds it after a restart
    from fw_magics.recovery import index

    assert (os.path.join(os.path.abspath(job_dir), "sales"), "sales") in index.registered()
    # the on-disk contract a resume reads back: vertex names in the events and the folders
    assert [e["vertex"] for e in result.events() if e["type"] == "vertex_initialized"] == ["v0", "v1", "v2"]
    results = os.path.join(job_dir, "sales", "results")
    assert {(v, f) for v in os.listdir(results) for f in os.listdir(os.path.join(results, v))} == {
        (f"v{k}", f"{i}.{ext}") for k in range(3) for i in range(4) for ext in ("arrow", "json")}


@pytest.mark.core
def test_spark_task_progress_is_reported_while_each_vertex_runs(spark, dirs):
    from fw_magics import hooks

    job_dir, markers = dirs
    reports = []
    record = lambda vertex, done, total: reports.append((vertex, done, total))  # noqa: E731
    with hooks.register("vertex_progress", record):
        fw.execute(jobs.three_vertex_job(markers), job_dir=job_dir, job_name="sales")
    assert reports and all(0 <= done <= total for _, done, total in reports)
    if is_connect(spark):
        # The Connect server reports when it chooses: its last word may predate the last tasks.
        assert {vertex for vertex, _, _ in reports} <= {"v0", "v1", "v2"}
        return
    for vertex in ("v0", "v1", "v2"):
        # every vertex reads or writes 4 partitions; polled once more after its Spark job
        # ended, the count is complete
        _, done, total = [r for r in reports if r[0] == vertex][-1]
        assert done == total >= 4


@pytest.mark.core
def test_under_connect_progress_is_reported_at_the_poll_pace_while_a_view_follows(spark):
    # The server reports every spark.connect.progress.reportInterval (2 s by default): a shorter
    # vertex was often never reported on (and at 250 ms, now and then, on a loaded machine). Set
    # for the block only, then put back.
    if not is_connect(spark):
        pytest.skip("Spark Connect's progress reports only")
    from fw_magics import hooks
    from fw_magics.spark import progress

    key = "spark.connect.progress.reportInterval"
    before = spark.conf.get(key, None)
    with hooks.register("vertex_progress", lambda vertex, done, total: None):
        with progress.reporting(spark, "v0"):
            assert spark.conf.get(key) == "50ms"
    assert spark.conf.get(key, None) == before


def test_second_run_recovers_everything_and_calls_nothing(spark, finished):
    job_dir, markers = finished  # job "sales" ran to its end
    before = testing.calls(markers)
    again = fw.execute(jobs.three_vertex_job(markers), job_dir=job_dir, job_name="sales")
    assert testing.calls(markers) == before
    assert again.ran == frozenset() and rows(again) == jobs.expected()


def test_a_lost_result_nothing_reads_again_is_not_recomputed(spark, finished):
    # FLIP-383 walks back from unfinished sinks only: v1[2]'s consumer finished, so its
    # lost file is not needed and nothing runs.
    job_dir, markers = finished  # job "sales" ran to its end
    os.remove(os.path.join(job_dir, "sales", "results", "v1", "2.arrow"))
    before = testing.calls(markers)
    again = fw.execute(jobs.three_vertex_job(markers), job_dir=job_dir, job_name="sales")
    assert again.ran == frozenset() and testing.calls(markers) == before
    assert rows(again) == jobs.expected()


def test_lost_sink_output_reruns_it_and_its_lost_producer_only(spark, finished):
    job_dir, markers = finished  # job "sales" ran to its end
    os.remove(os.path.join(job_dir, "sales", "results", "v1", "2.arrow"))
    os.remove(os.path.join(job_dir, "sales", "results", "v2", "2.arrow"))
    before = testing.calls(markers)
    again = fw.execute(jobs.three_vertex_job(markers), job_dir=job_dir, job_name="sales")
    assert rows(again) == jobs.expected()
    source, reduce, summarize = again.graph.chains()
    assert again.ran == {(op, 2) for op in reduce + summarize}  # the source is kept
    new_calls = [c for c in testing.calls(markers) if c not in before or testing.calls(markers).count(c) > before.count(c)]
    assert {name for name, _ in new_calls} <= {"add", "summarize"}


def test_truncated_result_file_is_detected(spark, finished):
    job_dir, markers = finished  # job "sales" ran to its end
    path = os.path.join(job_dir, "sales", "results", "v0", "1.arrow")
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)
    for lost in ("v1/0.arrow", "v2/0.arrow"):  # so that v1[0] runs again and reads all of v0
        os.remove(os.path.join(job_dir, "sales", "results", *lost.split("/")))
    again = fw.execute(jobs.three_vertex_job(markers), job_dir=job_dir, job_name="sales")
    assert rows(again) == jobs.expected()
    assert ("sales", 1) in again.ran and ("sales", 0) not in again.ran


def test_changed_graph_is_refused_in_one_line(spark, finished):
    job_dir, markers = finished  # job "sales" ran to its end
    changed = fw.from_records(jobs.RECORDS, jobs.SCHEMA, partitions=4, name="sales")
    changed = changed.full_window_partition().sort_partition("v")
    with pytest.raises(fw.ResumeError) as caught:  # a state conflict, not a misuse
        fw.execute(changed, job_dir=job_dir, job_name="sales")
    assert "was recorded for a different graph" in str(caught.value) and "\n" not in str(caught.value)
    fresh = fw.execute(changed, job_dir=job_dir, job_name="sales", resume="never")
    assert fresh.recovered == frozenset()


def test_resume_require_without_a_log(spark, dirs):
    job_dir, markers = dirs
    with pytest.raises(fw.ResumeError, match="nothing to resume for job 'sales'"):
        fw.execute(jobs.three_vertex_job(markers), job_dir=job_dir, job_name="sales", resume="require")


def test_region_failing_twice_then_succeeding_under_fixed_delay_3(spark, dirs, tmp_path):
    job_dir, markers = dirs
    stream = jobs.three_vertex_job(markers, fail=(1, {1, 2}), state_dir=str(tmp_path / "state"),
                                   siblings_first=job_dir)
    result = fw.execute(stream, job_dir=job_dir, job_name="sales", restart=FixedDelayRestart(attempts=3, delay=0.0))
    assert rows(result) == jobs.expected()
    kinds = [e["type"] for e in result.events()]
    assert kinds.count("region_failed") == 2 and kinds.count("region_restarted") == 2
    # v2[1] failed twice and finished on its third attempt; its region was only itself
    attempts = {(e["vertex"], e["subtask"]): e["attempt"] for e in result.events() if e["type"] == "subtask_finished"}
    assert attempts == {(f"v{k}", i): 3 if (k, i) == (2, 1) else 1 for k in range(3) for i in range(4)}
    assert [(e["vertices"], e["attempt"]) for e in result.events() if e["type"] == "region_failed"] == [
        (["v2[1]"], 1), (["v2[1]"], 2)]


def test_exhausted_attempts_fail_with_the_users_exception(spark, dirs, tmp_path):
    job_dir, markers = dirs
    stream = jobs.three_vertex_job(markers, fail=(1, {1, 2, 3}), state_dir=str(tmp_path / "state"))
    with pytest.raises(Exception, match="injected failure in summarize subtask 1"):
        fw.execute(stream, job_dir=job_dir, job_name="sales", restart=FixedDelayRestart(attempts=1, delay=0.0))
    from fw_magics.recovery import JobEventStore

    kinds = [e["type"] for e in JobEventStore(os.path.join(job_dir, "sales", "events")).read_events()]
    assert kinds[-1] == "job_failed"


def test_a_verdict_raised_in_a_worker_fails_the_job_at_once_without_a_restart(spark, dirs):
    """A value its column cannot hold (a FullWindowError in a Spark worker) is fw-magics' own verdict: a restart
    would meet the same value, so the restart strategy is not asked (before: the default restarted once)."""
    job_dir, _ = dirs
    stream = fw.from_records([(1,), (2,)], "k long").full_window_partition().map_partition(
        lambda records: [(29.25,)], "a long")
    with pytest.raises(fw.FullWindowError, match="produced a value that") as caught:
        fw.execute(stream, job_dir=job_dir, job_name="fraction", restart=FixedDelayRestart(attempts=3, delay=0.0))
    assert "\n" not in str(caught.value)
    from fw_magics.recovery import JobEventStore

    kinds = [e["type"] for e in JobEventStore(os.path.join(job_dir, "fraction", "events")).read_events()]
    assert kinds.count("region_failed") == 1 and "region_restarted" not in kinds and kinds[-1] == "job_failed"


def test_a_second_runner_is_locked_out(spark, dirs):
    job_dir, markers = dirs
    from fw_magics.recovery import JobLock, JobLockedError

    os.makedirs(os.path.join(job_dir, "sales"), exist_ok=True)
    with JobLock(os.path.join(job_dir, "sales")):
        with pytest.raises(JobLockedError):
            fw.execute(jobs.three_vertex_job(markers), job_dir=job_dir, job_name="sales")


@pytest.mark.parametrize("name", ["../escape", "a/b", ""])
def test_job_names_cannot_escape(spark, dirs, name):
    job_dir, markers = dirs
    with pytest.raises(fw.FullWindowError):
        fw.execute(jobs.three_vertex_job(markers), job_dir=job_dir, job_name=name)
