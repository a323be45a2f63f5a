"""What a cluster changes, checked on whatever backend this run uses: user modules travel with the
job, relative job directories mean the driver's folder, a job directory the executors do not
share is refused. The normal run checks them on the embedded session; ``test_cluster.py`` runs
this file again against the standalone cluster and the separate Spark Connect server."""

from __future__ import annotations

import functools
import os
import random
import sys

import pytest

import fw_magics as fw
from fw_magics.runtime.batch import shared_dir
from tests.cluster import usermodule

# make test-extended runs them on the embedded Spark and under Connect, make test-cluster on the cluster
pytestmark = [pytest.mark.spark, pytest.mark.core, pytest.mark.extended]


def records(seed: int, n: int = 40) -> list[tuple]:
    rng = random.Random(seed)
    return [(rng.randrange(4), float(rng.randrange(-50, 50))) for _ in range(n)]


def test_a_function_and_an_aggregate_from_a_module_only_the_driver_can_import(spark, tmp_path):
    module = usermodule.write_and_import(tmp_path)
    # The module really is out of the workers' reach: their Python cannot import it by name.
    def importable_in_task(name, batches):  # nested: pickled by value, needs no import itself
        import importlib

        import pyarrow as pa

        for _ in batches:
            pass
        try:
            importlib.import_module(name)
            ok = True
        except ImportError:
            ok = False
        yield pa.RecordBatch.from_pylist([{"ok": ok}], schema=pa.schema([("ok", pa.bool_())]))

    ask = functools.partial(importable_in_task, module.__name__)
    assert spark.range(0, 1, 1, 1).mapInArrow(ask, "ok boolean").collect()[0].ok is False
    for seed in (1,):
        data = records(seed)
        stream = fw.from_records(data, "k long, v double", partitions=3)
        scaled = stream.full_window_partition().map_partition(module.scaled, "k long, v double")
        assert sorted(tuple(r) for r in scaled.collect()) == sorted((k, v * 10) for k, v in data)
        totals = stream.key_by("k").full_window_partition().aggregate(module.Total)
        expected: dict = {}
        for k, v in data:
            n, t = expected.get(k, (0, 0.0))
            expected[k] = (n + 1, t + v * 10)
        assert sorted(tuple(r)[-2:] for r in totals.collect()) == sorted(expected.values())


def test_a_module_that_cannot_be_shipped_is_refused_in_one_line(spark, tmp_path):
    module = usermodule.write_and_import(tmp_path)
    del sys.modules[module.__name__]  # gone (as after a failed reload): neither importable nor shippable
    stream = fw.from_records(records(3), "k long, v double", partitions=2)
    with pytest.raises(fw.FullWindowError) as info:
        stream.full_window_partition().map_partition(module.scaled, "k long, v double").collect()
    message = str(info.value)
    assert module.__name__ in message and "cannot be shipped" in message and "\n" not in message


def test_a_relative_job_dir_is_the_drivers_folder(spark, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data = records(4)
    stream = fw.from_records(data, "k long, v double", partitions=2).key_by("k").full_window_partition().aggregate(_Count())
    result = fw.execute(stream, job_dir="jobs", job_name="rel")
    assert os.path.isdir(tmp_path / "jobs" / "rel" / "results")
    assert len(result.collect()) == len({k for k, _ in data})


class _Count(fw.AggregateFunction):
    schema = "n long"

    def create_accumulator(self):
        return 0

    def add(self, record, acc):
        return acc + 1

    def merge(self, a, b):
        return a + b

    def get_result(self, acc):
        return acc


def test_a_job_dir_the_executors_do_not_share_is_refused_in_one_line(spark):
    private = os.environ.get("FW_TEST_PRIVATE_DIR")
    if not private:
        pytest.skip("needs the standalone cluster's workers, whose view of FW_TEST_PRIVATE_DIR differs")
    job_dir = os.path.join(private, f"jobs-{os.getpid()}")
    stream = fw.from_records(records(5), "k long, v double", partitions=2).full_window_partition().map_partition(
        lambda rs: rs, "k long, v double")
    with pytest.raises(fw.JobDirNotSharedError) as info:
        fw.execute(stream, job_dir=job_dir, job_name="nope")
    message = str(info.value)
    assert "\n" not in message and "not shared" in message and job_dir in message
    root = os.path.join(job_dir, "nope")
    assert not os.path.exists(os.path.join(root, "events")) and not os.path.exists(os.path.join(root, "results"))
    assert not os.path.exists(os.path.join(root, shared_dir.PROBE_DIR))


def test_a_shared_job_dir_is_probed_once_per_session_and_folder(spark, tmp_path):
    stream = fw.from_records(records(6), "k long, v double", partitions=2).full_window_partition().map_partition(
        lambda rs: rs, "k long, v double")
    first = fw.execute(stream, job_dir=str(tmp_path), job_name="probed")
    probed = shared_dir.probed(spark, first.job_dir)
    again = fw.execute(stream, job_dir=str(tmp_path), job_name="probed")
    assert sorted(again.collect()) == sorted(first.collect())
    assert not os.path.exists(os.path.join(first.job_dir, shared_dir.PROBE_DIR))  # the probe's files are removed
    # a local master shares by construction (no probe); anywhere else the answer is cached
    assert probed == (not shared_dir.local_master(spark))
    if probed:  # and every executor was asked, not one: the cluster's tests say how many there are
        where, executors = shared_dir.reached(spark, first.job_dir), os.environ.get("FW_TEST_EXECUTORS")
        assert len(where) == int(executors) if executors else len(where) >= 1, where
