"""The same tests on a real standalone cluster and on a Spark Connect server started as its own process.

One cluster (a master, two workers) and one Connect server (its executors on that cluster)
serve the whole run; each backend gets its own driver in a subprocess. What runs there: the
core cases that depend on where Spark runs (CORE_ON_A_CLUSTER), execute() with failover, what a
cluster changes (``test_on_any_backend.py``: user modules, relative and unshared job
directories, the probe reaching every executor), the driver killed during a vertex and a new
driver resuming, a worker killed during a vertex (and started again), one %%fullwindow case
under the Connect server, and the Connect server killed during execute() and started again
while the client process lives on.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest

from fw_magics.teaching import testing
from tests.cluster.conftest import ROOT, backend_env, cluster_script, run_pytest
from tests.runtime import jobs

#: Each case may take longer than pytest's default 600 s on a loaded machine: more than the 900 s
#: run_pytest gives a backend's run, so that its own timeout (with the run's output) is what fires.
pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(1000)]


#: What runs on each backend, in one pytest run per backend (one driver start): the core cases and
#: the "backends" ones (all of execute() with region failover and the restart strategies; the graph
#: widget following execute() live) of these paths.
SELECTED = ["-m", "core or backends"]
#: On the standalone cluster: what a cluster changes, where data, code and files live apart from the driver:
#: user modules and job directories (tests/cluster), execute() with failover and cancelled workers
#: (tests/runtime), a subtask's records and partitions on executors, and the streaming cases whose state,
#: files or data sources are read and written by executors (the modes, the handover's files, savepoints
#: restored at another parallelism, a table read by the executors' workers, a query stopped and failed).
#: The other core cases take the same path wherever Spark runs (the grammar, errors, display; the sort
#: orders of one Flink case; a query's progress, timers and the seam's timing): `make test` runs all of them
#: on the embedded Spark, `make test-extended` those that differ under Connect (tests/connect_cases.py).
FLINK, PARTITIONING, STREAMING = "tests/datastream/test_flink_cases.py", "tests/datastream/test_partitioning.py", \
    "tests/streaming"
CORE_ON_A_CLUSTER = [
    "tests/cluster", "tests/runtime",
    f"{FLINK}::test_map_partition_sees_every_record_of_its_subtask", f"{FLINK}::test_reduce", f"{FLINK}::test_aggregate",
    f"{FLINK}::test_sort_partition[asc-013-name]",
    f"{PARTITIONING}::test_map_partition_called_once_per_partition_including_empty",
    f"{PARTITIONING}::test_map_partition_feeds_lazily_memory_bounded_by_a_batch",
    f"{PARTITIONING}::test_sort_happens_in_the_jvm",
    f"{STREAMING}/test_modes.py", f"{STREAMING}/test_rescale.py", f"{STREAMING}/test_handover.py",
    f"{STREAMING}/test_operator_state.py",
    f"{STREAMING}/test_partitioned_state.py::test_a_restore_at_another_parallelism_runs_its_stream_at_that_many_state_partitions",
    f"{STREAMING}/test_partitioned_state.py::test_each_stream_worker_opens_only_its_partition_and_finds_only_keys_with_fresh_records",
    f"{STREAMING}/test_table_source.py::test_a_table_backlog_then_rows_inserted_during_and_after_the_switch_and_while_stopped[aggregate]",
    f"{STREAMING}/test_table_source.py::test_a_table_jobs_savepoint_restored_at_1_and_3_equals_the_job_that_never_rescaled",
    f"{STREAMING}/test_two_inputs.py::test_a_folder_joined_with_a_table_s_history_and_new_rows_in_mixed_mode_then_a_restart",
    f"{STREAMING}/test_restart.py::test_stop_then_start_again_continues_without_loss_or_duplicates",
    f"{STREAMING}/test_restart.py::test_a_failed_micro_batch_restarts_the_query_from_its_checkpoint_with_nothing_lost_or_twice",
    f"{STREAMING}/test_keyed_operator_state.py::test_a_broadcast_input_reaches_every_subtask_and_its_state_is_restored_at_three",
]
#: Under the separate Connect server (its executors on the same cluster) what its being a process of its
#: own changes: user modules shipped as artifacts, job directories and the probe, execute() and Spark's task
#: progress through it, and a stream's state partitions as the server's sessions hold them (a restore at
#: another parallelism; two restores started back to back). The streaming cases whose handover and
#: savepoints depend on the session's flavour (Flavour.CONNECT assumes nothing of the server's settings:
#: the modes, the handover, operator state, the rescale) take the same path under any Connect server: they
#: run under the in-process one (make test-extended, tests/connect_cases.py) and, for executors apart from
#: the driver, on the cluster above; a third run here added about two minutes and showed nothing new.
CORE_UNDER_THE_CONNECT_SERVER = [
    "tests/cluster", "tests/runtime", "tests/widgets/test_with_spark.py::test_a_view_follows_execute_live",
    f"{STREAMING}/test_partitioned_state.py::test_a_restore_at_another_parallelism_runs_its_stream_at_that_many_state_partitions",
    f"{STREAMING}/test_partitioned_state.py::test_two_restores_started_back_to_back_each_run_at_their_own_state_partitions"]
#: And one %%fullwindow case under the Connect server: a real IPython shell whose cell defines the
#: function the executors run, over a Spark DataFrame and a pandas one.
MAGIC_UNDER_CONNECT = "tests/magics/test_magic.py::test_spark_and_pandas_dataframes_are_inputs"


def passed(proc) -> int:
    failures = proc.stdout.find("= FAILURES =")  # before -rA's list of passed cases, which can be long
    assert proc.returncode == 0, (proc.stdout[failures:failures + 6000] if failures >= 0 else "") + (
        proc.stdout[-3000:] + proc.stderr[-3000:])
    found = re.search(r"(\d+) passed", proc.stdout)
    return int(found.group(1)) if found else 0


def passed_in(proc, path: str) -> int:
    """How many cases of ``path`` (a file, or a case's node id) passed, by ``-rA``'s list."""
    return len(re.findall(rf"^PASSED {re.escape(path)}(::|\[|$)", proc.stdout, re.M))


def test_core_cases_cluster_cases_and_execute_with_failover_on_the_standalone_cluster(cluster):
    proc = run_pytest(backend_env(cluster), "-rA", *SELECTED, *CORE_ON_A_CLUSTER)
    assert passed(proc) >= 40
    assert "FW_TEST_PRIVATE_DIR" not in proc.stdout or cluster["private"] is None  # the unshared-dir case ran
    assert passed_in(proc, "tests/runtime/test_execute.py") >= 12, proc.stdout[-3000:]  # failover included


def driver(env, job_dir, markers, mode):
    proc = subprocess.run([sys.executable, "-m", "tests.runtime.jobs", job_dir, markers, mode], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    return proc


def test_driver_killed_during_a_vertex_and_a_new_driver_resumes_on_the_cluster(cluster, tmp_path):
    env = backend_env(cluster)
    job_dir, markers = str(tmp_path / "jobs"), str(tmp_path / "markers")
    killed = driver(env, job_dir, markers, "kill-last")
    assert killed.returncode == -9, killed.stderr[-3000:]
    reduced_calls = [c for c in testing.calls(markers) if c[0] == "add"]
    assert reduced_calls, "the middle region ran on the cluster before the kill"
    resumed = driver(env, job_dir, markers, "clean")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    out = json.loads(resumed.stdout.strip().splitlines()[-1])
    assert [tuple(r) for r in out["rows"]] == jobs.expected()
    assert [c for c in testing.calls(markers) if c[0] == "add"] == reduced_calls  # nothing finished ran again
    assert not any(op.startswith("reduce") or op == "sales" for op, _ in map(tuple, out["ran"]))


def test_a_worker_killed_during_a_vertex_and_spark_reschedules_its_task_on_the_other(cluster, tmp_path):
    # a node dies (its worker, executor and Python workers, by PID) while the last vertex's subtask 0 runs
    # on it: Spark runs the task again on the surviving worker (what Spark gave up on would go through
    # fw-magics' region failover); nothing of the finished vertices runs again, the output is a clean run's
    env = backend_env(cluster)
    job_dir, markers, hold = str(tmp_path / "jobs"), str(tmp_path / "markers"), tmp_path / "hold"
    hold.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "tests.runtime.jobs", job_dir, markers, "hold-last", str(hold)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    index = None
    try:
        deadline = time.monotonic() + 600
        while not (started := list(hold.glob("started-*"))):
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "the last vertex never started"
            time.sleep(0.2)
        where = started[0].read_text()
        index = next(i for i, work in enumerate(cluster["work_dirs"]) if where.startswith(work + os.sep))
        killed = cluster_script.kill_worker(cluster["state"], index)
        assert len(killed) >= 2 and not any(cluster_script.alive(pid) for pid in killed)  # worker and executor
        (hold / "go").touch()
        out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if index is not None:
            cluster_script.restart_worker(cluster["state"], index)  # for the tests after this one
    assert proc.returncode == 0, err[-3000:]
    result = json.loads(out.strip().splitlines()[-1])
    assert [tuple(r) for r in result["rows"]] == jobs.expected()
    again = [p.read_text() for p in hold.glob("started-*") if p != started[0]]
    assert again and not any(w.startswith(cluster["work_dirs"][index] + os.sep) for w in again)  # elsewhere
    adds = [c for c in testing.calls(markers) if c[0] == "add"]
    keys = {r[1] for r in jobs.RECORDS}
    assert len(adds) == len(jobs.RECORDS) - len(keys)  # the reduce vertex ran once: n - 1 adds per key


def test_core_cases_execute_and_the_widgets_task_progress_under_the_separate_connect_server(cluster, connect_server):
    proc = run_pytest(backend_env(cluster, connect_server), "-rA", *SELECTED, MAGIC_UNDER_CONNECT,
                      *CORE_UNDER_THE_CONNECT_SERVER)
    assert passed(proc) >= 20  # of the 26 cases selected; those that need the embedded Spark skip
    assert passed_in(proc, MAGIC_UNDER_CONNECT) == 2, proc.stdout[-3000:]
    for case in CORE_UNDER_THE_CONNECT_SERVER[3:]:  # the state partitions under the server
        assert passed_in(proc, case) == 1, proc.stdout[-3000:]
    assert passed_in(proc, "tests/runtime/test_execute.py") >= 12, proc.stdout[-3000:]
    assert passed_in(proc, "tests/widgets/test_with_spark.py::test_a_view_follows_execute_live") == 1


def test_connect_server_killed_during_execute_then_restarted_and_the_same_client_resumes(
        cluster, connect_server, tmp_path):
    env = backend_env(cluster, connect_server)
    job_dir, markers, control = str(tmp_path / "jobs"), str(tmp_path / "markers"), tmp_path / "control"
    control.mkdir()
    server = connect_server["pid"]
    client = subprocess.Popen(
        [sys.executable, "-m", "tests.cluster.connect_client", job_dir, markers, str(control), str(server)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 600
        while cluster_script.alive(server):  # a task of the last vertex kills it
            assert client.poll() is None, client.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "the server was never killed"
            time.sleep(0.2)
        reduced_calls = [c for c in testing.calls(markers) if c[0] == "add"]
        assert reduced_calls, "the middle region ran before the kill"
        # started again on the same port while the client still retries its connection
        again = cluster_script.connect_start(connect_server["state"], master=cluster["master"],
                                             port=connect_server["port"])
        connect_server["pid"] = again["pid"]
        (control / "restarted").touch()
        out, err = client.communicate(timeout=600)
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
    assert client.returncode == 0, err[-3000:]
    assert (control / "failed").read_text()  # the client saw execute() fail with its server
    result = json.loads(out.strip().splitlines()[-1])
    assert result["pid"] == client.pid  # the same client process resumed
    assert [tuple(r) for r in result["rows"]] == jobs.expected()
    assert [c for c in testing.calls(markers) if c[0] == "add"] == reduced_calls
    assert not any(op.startswith("reduce") or op == "sales" for op, _ in map(tuple, result["ran"]))


def test_cluster_script_stop_is_idempotent_and_by_pid(tmp_path):
    assert cluster_script.stop(str(tmp_path)) == []
    assert cluster_script.connect_stop(str(tmp_path)) is None
    polite = subprocess.Popen([sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    stubborn = subprocess.Popen(  # ignores SIGTERM: stop must escalate to SIGKILL after the grace period
        [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                               "print('ready', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert polite.stdout.readline().strip() == stubborn.stdout.readline().strip() == "ready"
    (tmp_path / "cluster.json").write_text(json.dumps({"pids": [polite.pid, stubborn.pid]}))
    started = time.monotonic()
    assert sorted(cluster_script.stop(str(tmp_path), grace=2)) == sorted([polite.pid, stubborn.pid])
    assert time.monotonic() - started < 15  # not the sleepers' 60 s
    assert not cluster_script.alive(polite.pid) and not cluster_script.alive(stubborn.pid)
    assert not (tmp_path / "cluster.json").exists() and cluster_script.stop(str(tmp_path)) == []
    for proc in (polite, stubborn):
        proc.wait(timeout=10)  # already reaped by stop(): nothing left running
