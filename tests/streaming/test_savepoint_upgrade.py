"""Issue 50, item 3, on Spark: a savepoint restored into changed code (``start(from_savepoint=...)``).

The job (``upgrade_fns.before.Visits``: a count as int, the latest value as a record, a JSON note) reads a
backlog and fresh files, is savepointed and stopped; ``upgrade_fns.after.Visits`` (count widened to long, the
record gains ``prev``, a new ``total``, the note gone) restores it with ``allow_non_restored_state=True`` at
another parallelism, reads more, and must give the model's results, and a savepoint of it the model's state
(the key only the backlog held was rewritten too). The refusals are one line each and start nothing; the
verdict's logic itself is tested without Spark in test_savepoint_upgrade_pure.py.
"""

from __future__ import annotations

import datetime as dt

import pandas as pd
import pyarrow as pa
import pytest
from IPython.core.error import UsageError

import fw_magics as fw
from fw_magics.errors import FullWindowError, ResumeError
from fw_magics.runtime.streaming.savepoints.files import SavepointError
from tests.magics.conftest import run, shell  # noqa: F401 -- shell: the session's IPython shell (a fixture)
from tests.streaming.files import BASE, TRIGGER, Area
from tests.streaming.upgrade_fns import after, before, refused

pytestmark = [pytest.mark.spark, pytest.mark.extended]  # make test-extended (CI): a job, a savepoint, a restore

#: (k, v, seconds): event times increasing. Key 3 is only in the backlog; key 1 comes twice after the restore.
BACKLOG = [[(1, 3, 1), (2, 5, 2), (3, 1, 3)], [(1, 4, 4)]]
FRESH = [(2, 7, 5), (4, 9, 6)]
LATER = [(1, 2, 7), (4, 1, 8), (1, 6, 9), (5, 8, 10)]


def _table(rows) -> pa.Table:
    return pa.table({"k": pa.array([r[0] for r in rows], pa.int64()), "v": pa.array([r[1] for r in rows], pa.int64()),
                     "ts": pa.array([BASE + dt.timedelta(seconds=r[2]) for r in rows], pa.timestamp("us", tz="UTC"))})


def _model():
    """(k -> its latest output (n, total, prev)), (k -> its state after: count, (v, prev), total), as the two
    versions of Visits keep them: the first over BACKLOG and FRESH, the second over LATER from there."""
    state, out = {}, {}
    for k, v, _ in [r for f in BACKLOG for r in f] + FRESH:
        count = state.get(k, (0,))[0] + 1
        state[k], out[k] = (count, (v, None), None), (count, 0, None)
    for k, v, _ in LATER:
        count, last, total = state.get(k, (0, None, None))
        state[k] = (count + 1, (v, None if last is None else last[0]), (total or 0) + v)
        out[k] = (count + 1, state[k][2], None if last is None else last[1])
    return out, state


def _stream(area, fn):
    source = fw.from_files(area.source("visits"), "parquet", before.SCHEMA, event_time="ts",
                           watermark_delay="0 milliseconds")
    return source.key_by("k").process(fn)


@pytest.fixture(scope="module")
def taken(spark, tmp_path_factory):
    """(the area, the savepoint of before.Visits over BACKLOG then FRESH)."""
    previous = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    area = Area(tmp_path_factory.mktemp("upgrade"))
    try:
        for rows in BACKLOG:
            area.write(_table(rows), "visits")
        job = _stream(area, before.Visits()).start(job_dir=area.jobs, job_name="visits", trigger=TRIGGER)
        try:
            job.process_all_available()
            area.write(_table(FRESH), "visits")
            job.process_all_available()
            path = job.savepoint()
        finally:
            job.stop()
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", previous)
    return area, path


def test_check_savepoint_tells_each_states_verdict_without_starting_anything(taken):
    area, path = taken
    table = fw.check_savepoint(path, _stream(area, after.Visits()))
    assert [tuple(r) for r in table[["state", "recorded", "now", "verdict"]].itertuples(index=False)] == [
        ("count", "value int", "value bigint", "widened"),
        ("last", "value struct<v:bigint>", "value struct<v:bigint,prev:bigint>", "widened"),
        ("notes", "value JSON", "", "refused"),
        ("total", "", "value bigint", "new")]
    allowed = fw.check_savepoint(path, _stream(area, after.Visits()), allow_non_restored_state=True)
    assert list(allowed["verdict"]) == ["widened", "widened", "dropped", "new"]
    assert "<table" in table._repr_html_()
    with pytest.raises(SavepointError, match=r"^check_savepoint's stream is DataStream; accepted: the stream a restore would start"):
        fw.check_savepoint(path, fw.from_files(area.source("visits"), "parquet", before.SCHEMA))


def test_an_incompatible_or_vanished_state_is_refused_in_one_line_and_nothing_starts(taken):
    area, path = taken
    with pytest.raises(ResumeError) as narrowed:
        _stream(area, refused.Visits()).start(job_dir=area.jobs, job_name="v-refused", from_savepoint=path)
    assert str(narrowed.value) == (
        f"savepoint {path} holds state 'count' recorded as value int, which process(Visits) declares as value string "
        "(another type; carried are int -> long, float -> double and a struct gaining a field); "
        "fw.check_savepoint(path, stream) shows every state's verdict")
    with pytest.raises(ResumeError) as vanished:
        _stream(area, after.Visits()).start(job_dir=area.jobs, job_name="v-vanished", from_savepoint=path)
    assert str(vanished.value) == (
        f"savepoint {path} holds state 'notes' recorded as value JSON, which process(Visits) no longer declares "
        "(allow_non_restored_state=True drops it); fw.check_savepoint(path, stream) shows every state's verdict")
    with pytest.raises(ResumeError, match="^job 'visits'.*"):  # a plain restart with changed code: as before
        _stream(area, after.Visits()).start(job_dir=area.jobs, job_name="visits", allow_non_restored_state=False)
    with pytest.raises(FullWindowError, match=r"allow_non_restored_state=True drops .* accepted only with "
                                              r"from_savepoint=$"):
        _stream(area, after.Visits()).start(job_dir=area.jobs, job_name="visits", allow_non_restored_state=True)


def test_a_restore_into_the_changed_function_carries_widens_and_drops_as_the_model_says(taken):
    area, path = taken
    want_out, want_state = _model()
    job = _stream(area, after.Visits()).start(job_dir=area.jobs, job_name="visits-after", trigger=TRIGGER,
                                                 from_savepoint=path, allow_non_restored_state=True, parallelism=3)
    try:
        job.process_all_available()
        area.write(_table(LATER), "visits")
        job.process_all_available()
        latest = {r.k: (r.n, None if r.total != r.total else r.total, None if r.prev != r.prev else r.prev)
                  for r in job.latest().itertuples()}
        switch = [e for e in job.events() if e["type"] == "switch"][-1]
        again = job.savepoint()
    finally:
        job.stop()
    assert {k: tuple(None if v is None else int(v) for v in row) for k, row in latest.items()} == want_out
    assert (switch["states_dropped"], switch["states_widened"], switch["states_new"]) == \
        (["notes"], ["count", "last"], ["total"])
    frame = fw.read_savepoint(again).keyed_state()
    assert frame.columns == ["k", "count", "last", "total"]
    assert {r["k"]: (r["count"], (r["last"]["v"], r["last"]["prev"]), r["total"]) for r in frame.collect()} == \
        want_state



def test_the_magics_refused_restore_shows_the_verdict_above_its_one_line(taken, shell, capsys):  # noqa: F811
    area, path = taken
    shell.user_ns.update(VISITS_DIR=area.source("visits"), VISITS_SAVED=path)
    run(shell, "from tests.streaming.upgrade_fns import after\nvisits = fw.from_files(VISITS_DIR, 'parquet', "
               "'k long, v long, ts timestamp', event_time='ts')")
    capsys.readouterr()
    with pd.option_context("display.width", 400, "display.max_columns", 10, "display.max_colwidth", 200):
        result = run(shell, f'%fwstream process fn=after.Visits key=k --in visits --job v-magic --job-dir '
                            f'"{area.jobs}" --from-savepoint VISITS_SAVED --no-wait')
    assert isinstance(result.error_in_exec, UsageError)
    assert str(result.error_in_exec).startswith(f"savepoint {path} holds state 'notes' recorded as value JSON")
    shown = {line.split()[1]: line.split() for line in capsys.readouterr().out.split("\n") if len(line.split()) > 3}
    assert shown["notes"][2:5] == ["value", "JSON", "refused"] and shown["total"][2:5] == ["value", "bigint", "new"]
    assert shown["count"][2:7] == ["value", "int", "value", "bigint", "widened"]
