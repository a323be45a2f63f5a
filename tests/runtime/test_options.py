"""execute()'s options: a valid default job name, and every option checked at the call (issue 16, items 3-4)."""

import os
import re

import pytest

import fw_magics as fw
from fw_magics import hooks
from fw_magics.failover import FixedDelayRestart
from tests.runtime import jobs

pytestmark = [pytest.mark.spark]


def rows(result):
    return sorted(tuple(r) for r in result.collect())


def source():
    return fw.from_records(jobs.RECORDS, jobs.SCHEMA, partitions=2, name="sales")


def summarize(records):
    rows = list(records)
    yield (len(rows), sum(r.v for r in rows))


@pytest.mark.parametrize("make, slug", [
    (lambda: source().full_window_partition().map_partition(summarize, "n long, total double"),
     "map_partition-summarize"),
    (lambda: source().full_window_partition().sort_partition("v"), "sort_partition-v-asc"),
    (lambda: source().full_window_partition().reduce(lambda a, b: a), "reduce-lambda"),
])
def test_the_default_job_name_is_a_slug_of_the_last_operator_and_a_short_hash(spark, tmp_path, make, slug):
    stream = make()
    result = stream.execute(job_dir=str(tmp_path))
    assert re.fullmatch(re.escape(slug) + r"-[0-9a-f]{8}", result.job_name)
    assert result.job_name == f"{slug}-{stream.job_graph().fingerprint()[:8]}"
    assert os.path.isdir(tmp_path / result.job_name) and repr(result).startswith(f"JobResult({result.job_name!r}:")
    assert make().execute(job_dir=str(tmp_path)).ran == frozenset()  # the same pipeline finds its job again


class Strategy:
    """A restart strategy of the user's own: any object with the Protocol's members will do."""

    def __init__(self):
        self.failures = 0

    def notify_failure(self):
        self.failures += 1
        return True

    def can_restart(self):
        return False

    backoff = 0.0


@pytest.mark.parametrize("options, message", [
    ({"restart": "x"}, "restart='x' (str) is not a restart strategy: it has no notify_failure, can_restart, backoff; "
                       "accepted: FixedDelayRestart(...)"),
    ({"restart": FixedDelayRestart}, "restart=FixedDelayRestart is a class; accepted:"),
    ({"restart": object()}, "(object) is not a restart strategy"),
    ({"job_dir": 123}, "job_dir 123 (int); accepted: a path (str or os.PathLike) or a URI"),
    ({"job_dir": b"/tmp/x"}, "job_dir b'/tmp/x' (bytes); accepted:"),
    ({"job_dir": "file://elsewhere/p"}, "names host 'elsewhere'"),
    ({"failover": "regoin"}, "unknown failover 'regoin'; did you mean 'region'?; accepted: region, full"),
    ({"failover": None}, "unknown failover None; accepted: region, full"),
    ({"resume": "yes"}, "unknown resume 'yes'; accepted: auto, never, require, repair"),
    ({"resume": ["auto"]}, "unknown resume ['auto']; accepted:"),
])
def test_a_bad_option_is_one_line_before_anything_runs(spark, tmp_path, monkeypatch, options, message):
    monkeypatch.chdir(tmp_path)
    stream = source().full_window_partition().sort_partition("v")
    options = {"job_dir": str(tmp_path / "jobs"), **options}
    with pytest.raises(fw.FullWindowError) as caught:
        stream.execute(job_name="sales", **options)
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert os.listdir(tmp_path) == []  # nothing was created: no ./123/, no job folder


def test_a_restart_strategy_of_ones_own_is_accepted_and_a_failure_keeps_the_users_error(spark, tmp_path):
    from fw_magics.teaching import testing

    strategy = Strategy()
    failing = testing.fail_on_attempts(summarize, subtask=0, attempts={1}, state_dir=str(tmp_path / "state"))
    stream = source().full_window_partition().map_partition(failing, "n long, total double")
    with pytest.raises(Exception, match="injected failure in summarize subtask 0") as caught:
        stream.execute(job_dir=str(tmp_path / "jobs"), job_name="own", restart=strategy)
    assert not isinstance(caught.value, AttributeError) and strategy.failures == 1


@pytest.mark.parametrize("form", ["file:{}", "file://{}", "file://localhost{}", "{}"])
def test_every_file_uri_form_puts_the_lock_and_the_files_in_the_same_folder(spark, tmp_path, monkeypatch, form):
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "jobs"
    seen = []

    def look(vertex, subtasks, attempt):
        seen.append(os.path.isfile(target / "sales" / "LOCK"))

    with hooks.register("vertex_started", look):
        result = source().full_window_partition().sort_partition("v").execute(
            job_dir=form.format(target), job_name="sales")
    assert seen and all(seen)  # the lock covers the folder the results go to
    assert result.job_dir == str(target / "sales") and os.path.isdir(target / "sales" / "results")
    assert sorted(os.listdir(tmp_path)) == ["jobs"]  # no relative 'file:' folder anywhere
    assert not os.path.exists(target / "sales" / "LOCK")  # released
