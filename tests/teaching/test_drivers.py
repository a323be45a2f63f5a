"""run_and_kill_driver: the second driver dies at the moment named, and what it recorded stays."""

import os
import pathlib

import pytest

from fw_magics.recovery import events as E
from fw_magics.recovery.job_log import JobLog
from fw_magics.teaching import recorded_events, run_and_kill_driver


def write_three_finishes(job_dir: str) -> None:
    """A driver's work without Spark: a job log with three subtask_finished events."""
    log = JobLog(job_dir, "three")
    log.acquire()
    log.read()
    log.begin()
    for subtask in range(3):
        log.emit(E.subtask_finished("v0", subtask, 1, 10, 10, 100, 0.1, []))
    log.flush()


def test_the_driver_dies_once_the_event_is_durable(tmp_path):
    def run():
        write_three_finishes(str(tmp_path / "three"))

    died = run_and_kill_driver(run, event="subtask_finished", subtask=1)
    assert died.exit_code == -9 and "once a subtask_finished event (subtask=1) was recorded" in repr(died)
    recorded = recorded_events(str(tmp_path), "three")
    assert [e["subtask"] for e in recorded if e["type"] == "subtask_finished"] == [0, 1]  # 2 never came


def test_a_driver_that_is_not_killed_is_one_line_with_its_exit_code(tmp_path):
    def run():
        print("finished without dying")

    with pytest.raises(RuntimeError, match=r"was not killed as job vertex v9 started: it ended with exit code 0; "
                                           r"its last words: finished without dying"):
        run_and_kill_driver(run, vertex="v9")


def test_the_moment_is_one_of_vertex_or_event():
    with pytest.raises(ValueError, match=r"exactly one of vertex= .* or event="):
        run_and_kill_driver(print)
    with pytest.raises(ValueError, match=r"exactly one of"):
        run_and_kill_driver(print, vertex="v1", event="switch")
    with pytest.raises(ValueError, match=r"vertex=...\) takes no subtask="):
        run_and_kill_driver(print, vertex="v1", subtask=0)


def orders_job():
    import fw_magics as fw

    rows = [(i, f"c{i % 4}", float(i)) for i in range(40)]
    orders = fw.from_records(rows, "id long, customer string, amount double", partitions=2, name="orders")
    biggest = orders.key_by("customer").full_window_partition().reduce(lambda a, b: a if a.amount >= b.amount else b)
    return biggest.full_window_partition().sort_partition("amount")


@pytest.mark.slow
@pytest.mark.extended  # a second driver with its own Spark: ~20 s (the tutorials' run uses it too)
@pytest.mark.spark
def test_a_job_killed_as_a_vertex_starts_resumes_here_keeping_what_finished(spark, tmp_path, monkeypatch):
    import fw_magics as fw

    monkeypatch.chdir(tmp_path)
    job_dir = str(pathlib.Path(tmp_path) / "jobs")

    def run():
        fw.execute(orders_job(), job_dir=job_dir, job_name="orders")

    run_and_kill_driver(run, vertex="v1", spark_conf={"spark.sql.shuffle.partitions": "2"})
    finished = {(e["vertex"], e["subtask"]) for e in recorded_events(job_dir, "orders") if e["type"] == "subtask_finished"}
    assert finished and all(vertex == "v0" for vertex, _ in finished)
    result = fw.execute(orders_job(), job_dir=job_dir, job_name="orders")  # the same job: it resumes
    assert {v for v, _ in result.recovered} and result.ran  # kept what the dead driver finished, ran the rest
    assert sorted(r.amount for r in result.collect()) == [36.0, 37.0, 38.0, 39.0]
    assert os.path.isdir(job_dir)
