"""Two-input keyed operators (connect/KeyedCoProcessFunction, interval_join): the three modes against
the reference model (co_reference), the per-input watermark rule, the graph, a restart, bad input."""

from __future__ import annotations

import itertools
import json
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fw_magics as fw
from fw_magics.errors import ResumeError
from fw_magics.runtime.streaming.savepoints.files import SavepointError
from tests.streaming import functions
from tests.streaming.co_reference import CoModel, interval_join
from tests.streaming.files import TRIGGER, _plain, record
from tests.streaming.test_rescale import forge

pytestmark = [pytest.mark.spark]

SECOND = "key long, w long, ts timestamp"
SECOND_NAMES = ("key", "w", "ts")
EXAMPLES = itertools.count()  # hypothesis runs several examples in one test's folder: each its own jobs


def _streams(area, name, delays=(0, 0)):
    first = fw.from_files(area.source(f"{name}-a"), "parquet", functions.SCHEMA, event_time="ts",
                          watermark_delay=f"{delays[0]} milliseconds")
    second = fw.from_files(area.source(f"{name}-b"), "parquet", SECOND, event_time="ts",
                           watermark_delay=f"{delays[1]} milliseconds")
    return first, second


def _write(area, name, side, rows):
    area.write(rows, f"{name}-{'ab'[side - 1]}", names=None if side == 1 else SECOND_NAMES)


def ledger(first, second):
    return first.connect(second).key_by("k", "key").process(functions.Ledger())


def run(area, operator, mode, name, backlog, fresh, delays=(0, 0), after_each=None):
    """``backlog``: (rows of input 1, rows of input 2), written before the start; ``fresh``: (input, rows),
    each written once the job has processed what came before (one micro-batch each)."""
    for side, rows in enumerate(backlog, start=1):
        if rows:
            _write(area, name, side, rows)
    job = operator(*_streams(area, name, delays)).start(job_dir=area.jobs, job_name=name, mode=mode,
                                                          trigger=TRIGGER)
    try:
        job.process_all_available()
        for side, rows in fresh:
            _write(area, name, side, rows)
            job.process_all_available()
            if after_each is not None:
                after_each(job)
        return job, job.changelog()
    finally:
        job.stop()


def _model(backlog, fresh, delays):
    m = CoModel(functions.Ledger(), delays)
    m.backlog([record(r) for r in backlog[0]], [record(r, SECOND_NAMES) for r in backlog[1]])
    for i, (side, rows) in enumerate(fresh):
        m.fresh(i, side, [record(r, SECOND_NAMES if side == 2 else ("k", "v", "ts")) for r in rows])
    return m


def _expected(m) -> tuple[dict, set]:
    latest = {key: key + tuple(row) for key, row in m.latest().items()}
    return latest, {(key, row[3]) for key, row in m.fired()}


def _got(job) -> tuple[dict, set]:
    pdf = job.latest()
    latest = {(int(r.k),): tuple(_plain(v) for v in r) for r in pdf.itertuples(index=False)}
    log = job.changelog()
    timers = log[log["what"] == "timer"]
    return latest, {((int(k),), int(at)) for k, at in zip(timers["k"], timers["at"])}


# -- the modes agree with the model ---------------------------------------------------------------------

rows = st.tuples(st.integers(0, 3), st.integers(0, 9), st.integers(0, 20))
files = st.lists(rows, min_size=1, max_size=5)


@pytest.mark.extended
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(backlog=st.tuples(st.lists(rows, max_size=6), st.lists(rows, max_size=6)),
       fresh=st.lists(st.tuples(st.sampled_from([1, 2]), files), max_size=3),
       delays=st.tuples(st.sampled_from([0, 3000]), st.sampled_from([0, 5000])))
def test_a_co_process_function_gives_the_model_s_results_in_every_mode(area, backlog, fresh, delays):
    full, bounded = _expected(_model(backlog, fresh, delays)), _expected(_model(backlog, [], delays))
    tag = next(EXAMPLES)
    mixed, _ = run(area, ledger, "mixed", f"mixed-{tag}", backlog, fresh, delays)
    got_mixed = _got(mixed)
    stream, _ = run(area, ledger, "stream", f"stream-{tag}", backlog, fresh, delays)
    batch, _ = run(area, ledger, "batch", f"batch-{tag}", backlog, [], delays)
    assert got_mixed == _got(stream) == full
    assert _got(batch) == bounded


@pytest.mark.extended  # 21 s: make test keeps the interval join's modes and the operator's model
def test_each_input_keeps_its_watermark_across_the_switch(area):
    """W is the smaller input's; a fresh record of the input that is ahead does not move the operator's
    watermark past the other input's (in mixed mode too: its backlog's time is carried into the stream),
    and a fresh record of the one behind does."""
    backlog = ([(1, 5, 20), (1, 1, 100)], [(1, 2, 10)])  # input 1 at 100 s, input 2 at 10 s: W = 10 s
    fresh = [(1, [(1, 3, 50)]), (2, [(1, 1, 60)])]
    m = _model(backlog, fresh, (0, 0))
    fired: dict = {}

    def seen(job):
        fired.setdefault(job.job_name, []).append(_got(job)[1])

    for mode in ("mixed", "stream"):
        job, _ = run(area, ledger, mode, f"carry-{mode}", backlog, fresh, after_each=seen)
        assert _got(job) == _expected(m), mode
        if mode == "mixed":
            assert job.watermark == record((0, 0, 10)).ts.timestamp() * 1000
    t = record((0, 0, 0)).ts.timestamp() * 1000
    # after input 1's fresh record at 50 s the operator is still at input 2's 10 s: the timer at 24 s waits
    assert fired["carry-mixed"][0] == fired["carry-stream"][0] == set()
    # input 2's record at 60 s moves it to 60 s: the timers at 24 s and 54 s fire, 104 s waits
    assert fired["carry-mixed"][1] == fired["carry-stream"][1] == {((1,), t + 24_000), ((1,), t + 54_000)}


@pytest.mark.core
def test_an_interval_join_joins_every_pair_in_its_interval_in_every_mode(area):
    backlog = ([(1, 1, 10), (1, 2, 14), (2, 3, 10), (3, 4, 30)], [(1, 10, 8), (1, 20, 13), (2, 30, 20), (3, 40, 29)])
    fresh = [(1, [(1, 5, 40), (2, 6, 41)]), (2, [(1, 50, 42), (2, 60, 38), (3, 70, 43)])]
    lower, upper = -3_000, 2_000

    def joined(first, second):
        return first.key_by("k").interval_join(second.key_by("key")).between(lower, upper).process(functions.Pair())

    def pairs(changelog):
        return sorted((int(r.k), int(r.v), int(r.w), int(r.left_at), int(r.right_at))
                      for r in changelog.itertuples(index=False))

    def model(fresh_files):
        first = [record(r) for r in backlog[0]] + [record(r) for s, f in fresh_files if s == 1 for r in f]
        second = [record(r, SECOND_NAMES) for r in backlog[1]] + [
            record(r, SECOND_NAMES) for s, f in fresh_files if s == 2 for r in f]
        t = int(record((0, 0, 0)).ts.timestamp() * 1000)
        return [(k, v, w, a - t, b - t) for k, v, w, a, b in interval_join(first, second, lower, upper)]

    def relative(found):
        t = int(record((0, 0, 0)).ts.timestamp() * 1000)
        return [(k, v, w, a - t, b - t) for k, v, w, a, b in found]

    got = {}
    for mode in ("mixed", "stream", "batch"):
        job, log = run(area, joined, mode, f"join-{mode}", backlog, fresh if mode != "batch" else [],
                       delays=(5_000, 5_000))
        got[mode] = relative(pairs(log))
        if mode == "mixed":
            graph = job.job_graph()
            sources = [op for op in graph.operators if op.kind == "source"]
            assert [s.name for s in sources] == ["files(join-mixed-a)", "files(join-mixed-b)"]
            assert [graph.annotations(s.name)["backlog_files"] for s in sources] == ["1", "1"]
    assert got["mixed"] == got["stream"] == model(fresh)
    assert got["batch"] == model([])
    assert (1, 1, 10, 10_000, 8_000) in got["batch"] and (1, 2, 20, 14_000, 13_000) in got["batch"]


@pytest.mark.extended  # make test keeps the modes' and the watermark's cases
def test_a_two_input_job_continues_after_a_restart(area):
    backlog = ([(1, 1, 1), (2, 2, 2)], [(1, 1, 3)])
    fresh = [(2, [(2, 4, 30)]), (1, [(1, 3, 31)])]
    name = "restart"
    for side, rows_ in enumerate(backlog, start=1):
        _write(area, name, side, rows_)
    with ledger(*_streams(area, name)).start(job_dir=area.jobs, job_name=name, trigger=TRIGGER) as job:
        job.process_all_available()
        _write(area, name, *fresh[0])
        job.process_all_available()
    _write(area, name, *fresh[1])  # while it is stopped
    with ledger(*_streams(area, name)).start(job_dir=area.jobs, job_name=name, trigger=TRIGGER) as job:
        job.process_all_available()
        assert job.phase == "stream"
        got = _got(job)
    # the model stops between the two files too: each input's watermark starts again from the job's
    m = _model(backlog, fresh[:1], (0, 0))
    m.restart()
    m.fresh(1, 1, [record(r) for r in fresh[1][1]])
    assert got == _expected(m)


def _restored_matches(got, expected, fired_before) -> None:
    """A restored job's latest rows (``got``: ``_got(job)``) are the never-rescaled job's; its changelog's
    timers are those fired after the savepoint, and of those before only what its restored latest rows hold."""
    latest, fired = got
    assert latest == expected[0]
    assert expected[1] - fired_before <= fired <= expected[1]


@pytest.mark.extended
def test_a_two_input_savepoint_restores_at_another_parallelism_as_the_job_that_never_rescaled(area):
    """FLIP-8 for two inputs (issue 32): a savepoint keeps each input's position (a restore reads neither
    input's records again) and each input's time, so each input's watermark goes on from its own: input 1
    is far ahead (100 s), input 2 behind (20 s), and input 2's fresh records after the restore move W to
    them and fire the timers before, as in the job that never rescaled. Taken in mode mixed and stream,
    restored in either, at 1, 2 and 3; a restored job's own savepoint restores again."""
    backlog = ([(1, 5, 20), (1, 1, 100), (2, 2, 30)], [(1, 2, 10), (2, 1, 15)])
    before = [(1, [(1, 3, 50), (2, 4, 60)]), (2, [(2, 1, 20)])]
    after, later = [(2, [(1, 1, 70), (2, 2, 80)])], [(1, [(2, 6, 110)]), (2, [(1, 2, 104)])]
    expected = _expected(_model(backlog, before + after, (0, 0)))
    fired_before = _expected(_model(backlog, before, (0, 0)))[1]
    assert expected[1] - fired_before  # timers the restored job must fire, with input 1's watermark carried
    paths = {}
    for mode in ("mixed", "stream"):
        name = f"sp-{mode}"
        for side, rows_ in enumerate(backlog, start=1):
            _write(area, name, side, rows_)
        with ledger(*_streams(area, name)).start(job_dir=area.jobs, job_name=name, mode=mode, trigger=TRIGGER) as job:
            job.process_all_available()
            for side, rows_ in before:
                _write(area, name, side, rows_)
                job.process_all_available()
            paths[mode] = job.savepoint()
            for side, rows_ in after:
                _write(area, name, side, rows_)
                job.process_all_available()
            assert _got(job) == expected, mode
    saved = fw.load_savepoint(paths["mixed"])
    assert saved.document["tops"] == {"1": 1704067300000, "2": 1704067220000}  # 100 s and 20 s past BASE
    assert "2 of 2 files read; 2 of 2 files read" in repr(saved)
    # refused in one line: a forged position of one input; the savepoint restored over other folders
    forged = str(area.base / "forged")
    shutil.copytree(paths["mixed"], forged)
    forge(forged, "source-manifest.json", json.dumps(saved.manifest["inputs"][0]).encode())
    with pytest.raises(SavepointError, match="is not one of 2 inputs' positions") as caught:
        fw.load_savepoint(forged)
    assert "\n" not in str(caught.value)
    with pytest.raises(ResumeError, match="sp-stream-a") as caught:
        ledger(*_streams(area, "sp-stream")).start(job_dir=area.jobs, job_name="sp-other", from_savepoint=paths["mixed"])
    assert "\n" not in str(caught.value) and not (area.base / "jobs" / "sp-other" / "events").exists()
    second = None
    for (mode, n, restore_mode) in (("mixed", 1, "mixed"), ("mixed", 3, "stream"), ("stream", 2, "mixed")):
        name = f"sp-{mode}"
        with ledger(*_streams(area, name)).start(job_dir=area.jobs, job_name=f"{name}-{n}", trigger=TRIGGER,
                                                 mode=restore_mode, from_savepoint=paths[mode], parallelism=n) as job:
            job.process_all_available()  # what was written after the savepoint
            assert job.parallelism == n and job.phase == "stream"
            _restored_matches(_got(job), expected, fired_before)
            if n == 3:  # it goes on, and its own savepoint (its inputs' times as its restore carried them) restores at 2
                for side, rows_ in later[:1]:
                    _write(area, name, side, rows_)
                    job.process_all_available()
                second = job.savepoint()
    name = "sp-mixed"
    for side, rows_ in later[1:]:
        _write(area, name, side, rows_)
    with ledger(*_streams(area, name)).start(job_dir=area.jobs, job_name=f"{name}-3-2", trigger=TRIGGER,
                                             from_savepoint=second, parallelism=2) as job:
        job.process_all_available()
        _restored_matches(_got(job), _expected(_model(backlog, before + after + later, (0, 0))),
                          _expected(_model(backlog, before + after + later[:1], (0, 0)))[1])


@pytest.mark.extended  # make test keeps the modes' and the watermark's cases
def test_an_input_without_a_backlog_makes_the_operator_a_stream_from_the_start(area):
    """FLIP-327's two-input rule: a source made with backlog=False makes a mixed job run as a stream, and
    the job and its graph say why; mode batch is refused in one line; a restart asks the same."""
    backlog = ([(1, 5, 20), (2, 1, 22)], [(1, 2, 10)])
    fresh = [(2, [(1, 1, 30)])]
    name = "rule"
    for side, rows_ in enumerate(backlog, start=1):
        _write(area, name, side, rows_)

    def streams():
        first, _ = _streams(area, name)
        second = fw.from_files(area.source(f"{name}-b"), "parquet", SECOND, event_time="ts", backlog=False)
        return first, second

    with pytest.raises(fw.FullWindowError, match=r"mode 'batch' runs the backlog, and 'rule-b' was made with "
                                                 r"backlog=False") as caught:
        ledger(*streams()).start(job_dir=area.jobs, job_name=name, mode="batch")
    assert "\n" not in str(caught.value) and not (area.base / "jobs" / name / "events").exists()
    with ledger(*streams()).start(job_dir=area.jobs, job_name=name, trigger=TRIGGER) as job:
        assert job.mode == "stream" and "has no backlog (backlog=False)" in job.mode_reason
        job.process_all_available()
        assert job.backlog_state_writes == 0 and job.phase == "stream"
        notes = job.job_graph().annotations(job.stateful.step.name)
        assert notes["mode"] == "stream" and "FLIP-327" in notes["why"]
        assert "no backlog" in repr(job)
    _write(area, name, *fresh[0])
    with ledger(*streams()).start(job_dir=area.jobs, job_name=name, trigger=TRIGGER) as job:  # mode "mixed" again
        job.process_all_available()
        got = _got(job)
    m = _model(backlog, [], (0, 0))
    m.restart()
    m.fresh(1, 2, [record(r, SECOND_NAMES) for r in fresh[0][1]])
    assert got == _expected(m)


# -- bad input: one line, nothing runs ------------------------------------------------------------------


def test_bad_two_input_definitions_are_refused_in_one_line(area):
    first, second = _streams(area, "bad")
    other_key = fw.from_files(area.source("bad-c"), "parquet", "key string, w long, ts timestamp", event_time="ts")
    untimed = fw.from_files(area.source("bad-d"), "parquet", SECOND)
    cases = [
        (lambda: first.connect(other_key).key_by("k", "key"), "keys differ in type: k bigint .* key string"),
        (lambda: first.connect(untimed).key_by("k", "key"), "has an event time and 'files\\(bad-d\\)' has none"),
        (lambda: first.connect(second).key_by("k", "nope"), "nope"),
        (lambda: first.connect(second).key_by("k", "key").process(functions.Sessions()),
         "takes an fw.KeyedCoProcessFunction"),
        (lambda: first.connect("x"), "connect takes a DataStream"),
        (lambda: fw.from_files(area.source("bad-a"), "parquet", functions.SCHEMA, backlog="no"), "backlog 'no'"),
        (lambda: first.key_by("k").interval_join(second), "takes the other stream keyed"),
        (lambda: first.key_by("k").interval_join(second.key_by("key")).between(5, 1), "lower bound is above"),
        (lambda: first.key_by("k").interval_join(second.key_by("key")).between("1 s", 1), "accepted: milliseconds"),
        (lambda: first.key_by("k").interval_join(second.key_by("key")).between(10**30, 10**31),
         "lower bound 1000000000000000000000000000000 reaches beyond Spark's timestamps; accepted: from -315_537"),
        (lambda: fw.from_files(area.source("bad-a"), "parquet", functions.SCHEMA, event_time="ts",
                               watermark_delay=f"{10**30} seconds"), "longer than Spark's timestamps reach"),
        (lambda: first.key_by("k").interval_join(second.key_by("key")).between(0, 1).process(3),
         "takes an fw.ProcessJoinFunction"),
        (lambda: first.key_by("k").interval_join(second.key_by("key")).between(0, 1).process(lambda a, b: a),
         "unknown schema"),
    ]

    class OnlyOne(fw.KeyedCoProcessFunction):
        schema = "n long"

        def process_element1(self, record, ctx):
            return None

    cases.append((lambda: first.connect(second).key_by("k", "key").process(OnlyOne()),
                  "must define process_element2"))
    for make, message in cases:
        with pytest.raises(fw.FullWindowError, match=message) as caught:
            make()
        assert "\n" not in str(caught.value)


# -- a folder and a PostgreSQL table --------------------------------------------------------------------


@pytest.mark.extended
@pytest.mark.core
def test_a_folder_joined_with_a_table_s_history_and_new_rows_in_mixed_mode_then_a_restart(postgres, area):
    """The canonical FLIP-327 job: a folder of files and a database table's snapshot then its new rows,
    rows inserted during the backlog, after the switch and while the job is stopped; its savepoint,
    taken before the stop, restored at 3 reads the table from where it had."""
    import datetime as dt
    import uuid

    from tests.streaming.files import BASE

    name = f"updates_{uuid.uuid4().hex[:8]}"
    postgres.sql(f"CREATE TABLE {name} (id bigserial PRIMARY KEY, key bigint, w bigint, ts timestamptz)")

    def insert(rows):
        postgres.sql(f"INSERT INTO {name} (key, w, ts) VALUES (%s, %s, %s)",
                     [(k, w, BASE + dt.timedelta(seconds=s)) for k, w, s in rows])

    def streams():
        first = fw.from_files(area.source("db-a"), "parquet", functions.SCHEMA, event_time="ts",
                              watermark_delay="1 second")
        return first, fw.from_table(postgres.url, name, SECOND, event_time="ts")

    backlog = ([(1, 5, 20), (2, 1, 22), (3, 4, 5)], [(1, 2, 10), (3, 1, 12)])
    during, after, stopped = (2, [(1, 1, 24), (2, 2, 25)]), (1, [(1, 3, 30)]), (2, [(3, 7, 40)])
    try:
        _write(area, "db", 1, backlog[0])
        insert(backlog[1])
        job = ledger(*streams()).start(job_dir=area.jobs, job_name="db", trigger=TRIGGER)
        try:
            insert(during[1])  # fresh, whether the backlog still runs or not
            job.process_all_available()
            _write(area, "db", *after)
            job.process_all_available()
            graph = job.job_graph()
            assert [graph.annotations(op.name).get("backlog_rows") or graph.annotations(op.name).get("backlog_files")
                    for op in graph.operators if op.kind == "source"] == ["1", "2"]
            path = job.savepoint()
        finally:
            job.stop()
        insert(stopped[1])
        with ledger(*streams()).start(job_dir=area.jobs, job_name="db", trigger=TRIGGER) as again:
            assert again.phase == "stream"  # no second backlog
            again.process_all_available()
            got = _got(again)
        # the savepoint taken before the stop, restored at 3: the table's rows after its position are read
        with ledger(*streams()).start(job_dir=area.jobs, job_name="db-3", trigger=TRIGGER, from_savepoint=path,
                                      parallelism=3) as restored:
            restored.process_all_available()
            rescaled = _got(restored)
    finally:
        postgres.sql(f"DROP TABLE {name}")
    m = _model(backlog, [during, after], (1000, 0))
    fired_before = _expected(m)[1]
    m.restart()
    m.fresh(2, 2, [record(r, SECOND_NAMES) for r in stopped[1]])
    assert got == _expected(m)
    _restored_matches(rescaled, _expected(_model(backlog, [during, after, stopped], (1000, 0))), fired_before)


# -- the interval join operator on the per-key core, without Spark ------------------------------------------

times = st.lists(st.tuples(st.sampled_from([1, 2]), st.integers(0, 3), st.integers(0, 60)), max_size=40)


@pytest.fixture(scope="module")
def empty_streams(tmp_path_factory):
    """Two streams over an empty folder: what builds an interval join's spec (nothing is read)."""
    base = str(tmp_path_factory.mktemp("two-empty"))
    return (fw.from_files(base, "parquet", functions.SCHEMA, event_time="ts"),
            fw.from_files(base, "parquet", SECOND, event_time="ts"))


def core_pairs(joined, records, split):
    """The pairs an interval join's per-key core emits for ``records`` ((side, key, event time s) each, run
    in event-time order in two runs with the watermark moved to just before the second between them, as a
    micro-batch boundary is): (key, left's v, right's w) each; and the records, tagged."""
    from fw_magics.runtime.streaming.keyed.core import KeyedCore
    from fw_magics.values.records import make_record

    spec = joined.process(functions.Pair()).spec
    names = spec.record.names
    rows = sorted(((side, k, i, s) for i, (side, k, s) in enumerate(records)), key=lambda r: (r[3], r[0]))
    tagged = [(k, side, record((k, i, s), ("k", "v", "ts") if side == 1 else SECOND_NAMES)) for side, k, i, s in rows]
    core = KeyedCore(spec)
    got, states = [], {}
    boundary = record((0, 0, split)).ts
    wm = int(boundary.timestamp() * 1000) - 1  # the watermark between the runs: no record of the second is late
    for run_watermark, part in ((-(2**63), [t for t in tagged if t[2].ts < boundary]),
                                (wm, [t for t in tagged if t[2].ts >= boundary])):
        by_key: dict = {}
        for k, side, r in part:
            by_key.setdefault(k, []).append((side, r))
        for k in sorted(set(by_key) | set(states)):
            core.begin((k,), states.get(k), watermark=run_watermark)
            for side, r in by_key.get(k, ()):
                values = {"k": k, "__fw_input": side, "__fw_time": r.ts, "__fw_in1": r if side == 1 else None,
                          "__fw_in2": r if side == 2 else None}
                core.element(make_record(names, tuple(values[n] for n in names)), int(r.ts.timestamp() * 1000))
            core.fire(wm)  # the first run ends at the watermark the second starts with
            result = core.end()
            states[k] = result.state
            got += [(key[0],) + tuple(value)[:2] for _, key, value in result.outputs]
    return got, tagged


@settings(max_examples=60, deadline=None)
@given(records=times, lower=st.integers(-20, 10), width=st.integers(0, 20), split=st.integers(0, 60),
       exclusive=st.tuples(st.booleans(), st.booleans()))
def test_the_interval_join_operator_finds_every_pair_the_model_does(empty_streams, records, lower, width, split,
                                                                    exclusive):
    """The cleanup timers drop nothing a later record could still meet, every pair in the interval is
    emitted once, with each bound in or out of it (PyFlink's lower_bound_exclusive, upper_bound_exclusive)."""
    upper = lower + width
    first, second = empty_streams
    joined = first.key_by("k").interval_join(second.key_by("key")).between(lower * 1000, upper * 1000)
    joined = joined.lower_bound_exclusive() if exclusive[0] else joined
    joined = joined.upper_bound_exclusive() if exclusive[1] else joined
    got, tagged = core_pairs(joined, records, split)
    left = [r for _, _, r in tagged if "v" in r._fields]
    right = [r for _, _, r in tagged if "w" in r._fields]
    expected = [(k, v, w) for k, v, w, _, _ in interval_join(left, right, lower * 1000, upper * 1000, exclusive)]
    assert sorted(got) == sorted(expected)


def test_an_exclusive_bound_leaves_out_the_records_exactly_at_it(empty_streams):
    """A left record at 10 s; right records at 8, 9, 12 and 13 s; between(-2 s, 3 s) (issue 47, item 7)."""
    first, second = empty_streams
    joined = first.key_by("k").interval_join(second.key_by("key")).between(-2000, 3000)
    records = [(1, 0, 10), (2, 0, 8), (2, 0, 9), (2, 0, 12), (2, 0, 13)]  # v is the record's index: 1..4 on the right
    cases = {joined: [1, 2, 3, 4], joined.lower_bound_exclusive(): [2, 3, 4],
             joined.upper_bound_exclusive(): [1, 2, 3], joined.lower_bound_exclusive().upper_bound_exclusive(): [2, 3]}
    for option, want in cases.items():
        got, _ = core_pairs(option, records, 60)
        assert sorted(w for _, _, w in got) == want, option.exclusive
    labels = {o.process(functions.Pair()).spec.label for o in cases}  # the job graph shows it
    assert labels == {"interval_join[-2000, 3000](Pair)", "interval_join(-2000, 3000](Pair)",
                      "interval_join[-2000, 3000)(Pair)", "interval_join(-2000, 3000)(Pair)"}, labels


# -- an interval join's late records in a side output (issue 47, item 7) ---------------------------------------


def test_the_interval_join_operator_judges_lateness_itself_with_a_side_output(empty_streams):
    """On the per-key core, watermark 10 s: a record at or before it is late (its side's kind, its record; a side
    without a side output: no record), one a millisecond after is joined; without a side output nothing changes."""
    from fw_magics.runtime.streaming.keyed.core import KeyedCore
    from fw_magics.values.records import make_record

    first, second = empty_streams
    join = first.key_by("k").interval_join(second.key_by("key")).between(-3_000, 2_000)
    wm = int(record((0, 0, 10)).ts.timestamp() * 1000)
    got = {}
    for name, option in (("none", join), ("left", join.side_output_left_late_data()),
                         ("both", join.side_output_left_late_data().side_output_right_late_data())):
        spec = option.process(functions.Pair()).spec
        core = KeyedCore(spec)
        core.begin((1,), None, watermark=wm)
        for side, row in ((1, (1, 1, 9)), (1, (1, 2, 10)), (2, (1, 20, 10)), (1, (1, 3, 10, 1000)), (2, (1, 30, 11))):
            r = record(row, ("k", "v", "ts") if side == 1 else SECOND_NAMES)
            values = {"k": 1, "__fw_input": side, "__fw_time": r.ts, "__fw_in1": r if side == 1 else None,
                      "__fw_in2": r if side == 2 else None}
            core.element(make_record(spec.record.names, tuple(values[n] for n in spec.record.names)),
                         int(r.ts.timestamp() * 1000))
        got[name] = [(kind, None if value is None else tuple(value)[:2]) for kind, _, value in core.end().outputs]
    assert got["none"] == [("element", (2, 20)), ("element", (3, 20)), ("element", (2, 30)), ("element", (3, 30))]
    # without a side output, as today: Flink's rule in the operator (before W is late, at W joins)
    assert got["none"] != got["left"]
    assert got["left"] == [("left_late", (1, 1)), ("left_late", (1, 2)), ("right_late", None), ("element", (3, 30))]
    assert got["both"] == [("left_late", (1, 1)), ("left_late", (1, 2)), ("right_late", (1, 20)),
                           ("element", (3, 30))]


@pytest.mark.extended  # 100 s under load: make test keeps the operator's case above
def test_an_interval_join_keeps_each_side_s_late_records_in_its_side_output(area):
    """W is 10 s once both inputs have a record at 10 s; then a left record at 9 s and one at W itself are late
    (at or before W, the rule of every fw-magics operator), one a millisecond after W is not, and a right
    record at 9 s is late. A side output holds exactly those of its side, committed with their micro-batch;
    the joined pairs are the interval join of the records that were not late."""
    backlog = ([(1, 1, 10)], [(1, 10, 10)])
    fresh = [(1, [(1, 2, 9), (1, 3, 10), (1, 4, 11), (1, 5, 10, 1000)]), (2, [(1, 20, 9), (1, 30, 12)])]
    late = {"left": [(1, 2, 9), (1, 3, 10)], "right": [(1, 20, 9)]}
    on_time = ([r for r in backlog[0] + fresh[0][1] if r[2] > 10 or r[1] == 1 or len(r) > 3],
               [r for r in backlog[1] + fresh[1][1] if r[2] > 9])

    def pairs(changelog):
        return sorted((int(r.k), int(r.v), int(r.w)) for r in changelog.itertuples(index=False))

    def rows(pdf, names):
        return sorted(tuple(int(v) if n != "ts" else (v.to_pydatetime() - record((0, 0, 0)).ts.replace(tzinfo=None))
                            .total_seconds() for n, v in zip(names, r)) for r in pdf[list(names)].itertuples(index=False))

    want_pairs = sorted((k, v, w) for k, v, w, _, _ in interval_join(
        [record(r) for r in on_time[0]], [record(r, SECOND_NAMES) for r in on_time[1]], -3_000, 2_000))
    assert (1, 5, 30) in want_pairs and (1, 3, 30) not in want_pairs
    for mode, keep in (("stream", ("left", "right")), ("mixed", ("left",))):
        def joined(first, second, keep=keep):
            join = first.key_by("k").interval_join(second.key_by("key")).between(-3_000, 2_000)
            for side in keep:
                join = getattr(join, f"side_output_{side}_late_data")()
            return join.process(functions.Pair())

        job, log = run(area, joined, mode, f"late-{mode}", backlog if mode == "mixed" else ((), ()),
                       ([(1, backlog[0]), (2, backlog[1])] if mode == "stream" else []) + fresh)
        assert pairs(log) == want_pairs, mode
        assert set(log["kind"]) == {"element"}  # the changelog and latest() hold no late row
        for side in keep:
            got = job.late_records(side)
            names = ("k", "v", "ts") if side == "left" else SECOND_NAMES
            assert list(got.columns) == list(names) + ["batch"]
            assert rows(got, names) == [(k, v, float(s)) for k, v, s in late[side]], (mode, side)
            assert (got["batch"] >= 0).all()
        if mode == "mixed":
            with pytest.raises(fw.FullWindowError, match=r"keeps the late records of left only; got 'right'"):
                job.late_records("right")


def test_late_records_of_a_job_without_a_side_output_are_refused_in_one_line(empty_streams):
    """What job.late_records checks before it reads anything: the job's operator (a real spec, no job started)."""
    from types import SimpleNamespace

    from fw_magics.runtime.streaming.driver.results import JobResults

    first, second = empty_streams
    for stateful, pattern in ((ledger(first, second), r"keeps no late records: late_records is for an interval join"),
                              (first.key_by("k").interval_join(second.key_by("key")).between(0, 1)
                               .side_output_right_late_data().process(functions.Pair()),
                               r"keeps the late records of right only; got 'middle'; accepted: 'right'$")):
        job = SimpleNamespace(job_name="j", spec=stateful.spec)
        with pytest.raises(fw.FullWindowError, match=pattern) as caught:
            JobResults.late_records(job, "middle")
        assert "\n" not in str(caught.value)
