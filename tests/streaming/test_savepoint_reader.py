"""Issue 50, item 1: a savepoint read as tables (fw.read_savepoint), against a pure model of the job's state.

One job per module (a process function with typed, record, JSON and list state and timers, keyed by two
columns) takes the savepoint every test here reads; reduce and aggregate (one job each) are extended cases.
The decoding of the states' JSON into typed columns is tested without Spark in test_savepoint_reader_pure.py.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os

import pyarrow as pa
import pyarrow.parquet  # noqa: F401 -- pa.parquet
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F
from pyspark.sql import types as T

import fw_magics as fw
from fw_magics.errors import FullWindowError
from fw_magics.runtime.streaming.savepoints import batches
from fw_magics.runtime.streaming.savepoints.files import SavepointError, load_savepoint
from tests.streaming import functions, reader_functions
from tests.streaming.files import BASE, TRIGGER, Area, expected_latest, model, operator
from tests.streaming.test_savepoint_reader_pure import model_value, state_type

pytestmark = [pytest.mark.spark]

#: (k, g, v, seconds): event times strictly increasing, so each key's records apply in this order.
BACKLOG = [[(1, "a", 3, 1), (2, "b", 5, 2), (1, "b", 2, 3)], [(1, "a", 4, 4), (3, "a", 1, 5)]]
FRESH = [(2, "b", 7, 6), (4, "c", 9, 7), (1, "a", 1, 8)]
#: Read by the stream after the savepoint: one key changed, one added.
LATER = [(2, "b", 6, 9), (5, "d", 2, 10)]


def _table(rows) -> pa.Table:
    return pa.table({"k": pa.array([r[0] for r in rows], pa.int64()), "g": [r[1] for r in rows],
                     "v": pa.array([r[2] for r in rows], pa.int64()),
                     "ts": pa.array([BASE + dt.timedelta(seconds=r[3]) for r in rows], pa.timestamp("us", tz="UTC"))})


def _model(rows, state=None) -> dict:
    """(k, g) -> (count, last (v, at), notes JSON text, seen, pending timers), as Tally keeps them (from ``state``)."""
    state = dict(state or {})
    for k, g, v, seconds in sorted(rows, key=lambda r: r[3]):
        count, _, notes, seen, timers = state.get((k, g), (0, None, None, [], set()))
        at = BASE + dt.timedelta(seconds=seconds)
        timers = timers | {int(at.timestamp() * 1000) + reader_functions.GAP_MS}
        best = v if notes is None else max(v, json.loads(notes)["max"])
        state[(k, g)] = (count + 1, (v, at), json.dumps({"max": best}), seen + [v], timers)
    return state


def _stream(area):
    source = fw.from_files(area.source("tally"), "parquet", reader_functions.SCHEMA, event_time="ts",
                           watermark_delay="0 milliseconds")
    return source.key_by(["k", "g"]).process(reader_functions.Tally())


@pytest.fixture(scope="module")
def taken(spark, tmp_path_factory):
    """The savepoint of the Tally job over BACKLOG then FRESH, its stream, what job.state() read just before
    it was taken (info, keyed_state rows, timers rows), and the job's area (the job stopped, LATER written since)."""
    area = Area(tmp_path_factory.mktemp("reader"))
    with _two_partitions(spark):
        for rows in BACKLOG:
            area.write(_table(rows), "tally")
        stream = _stream(area)
        with stream.start(job_dir=area.jobs, job_name="tally", trigger=TRIGGER) as job:
            job.process_all_available()
            area.write(_table(FRESH), "tally")
            job.process_all_available()
            live = job.state()
            rows = (live.info, sorted(live.keyed_state().collect()), sorted(live.timers().collect()))
            path = job.savepoint()
    area.write(_table(LATER), "tally")  # after the savepoint's files: read by the job's next run and by a restore
    return path, stream, rows, area


@pytest.fixture(scope="module")
def history(spark, taken, request):
    """The job of ``taken`` started again, reading LATER: what job.state(batch=N) read at FRESH's batch (of the
    query's earlier run) and at LATER's, state_changes between them, and a refused batch (only the cases that
    ask for it pay for the second run: not the extended ones)."""
    _, stream, (info, *_), area = taken
    with _two_partitions(spark), stream.start(job_dir=area.jobs, job_name="tally", trigger=TRIGGER) as job:
        job.process_all_available()
        first, last = info["batch"], job.state().info["batch"]
        history = {"batches": (first, last), "changes": job.state_changes(first, last).collect(),
                   **{batch: _rows(job.state(batch=batch)) for batch in (first, last)}}
        with pytest.raises(FullWindowError) as refused:
            job.state(batch=last + 1000)
        history["refused"] = str(refused.value)
        # the inspector's reads cost seconds: only when its test runs (not in the Connect run, which leaves it out)
        if any(item.name == INSPECTOR_TEST for item in request.session.items):
            history["inspected"] = _inspect(job)
    return history


@contextlib.contextmanager
def _two_partitions(spark):
    before = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    try:
        yield
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)


#: Keys the state inspector is asked for by hand: one LATER changed, one LATER added, one never seen (a comma in it);
#: all kept micro-batches are read for the first, for the others (and the keys drawn) the newest LIMITED (each
#: reading costs a Spark stage or three) and the savepoint.
INSPECTED = [(2, "b"), (5, "d"), (9, "never, seen")]
LIMITED = 2


def _inspect(job) -> dict:
    """What the state inspector read while the job ran: each key of INSPECTED and of two drawn by hypothesis (of the
    model's keys, or any) -> (the limit it was read with, its KeyHistory), (2, 'b') through show_graph(job)'s
    inspector as a person types it; each kept micro-batch -> the files read by its end; the keys offered; a bad
    key's line."""
    from fw_magics.runtime.streaming.savepoints.inspector import key_choices, key_history
    from fw_magics.state.key_history import DEFAULT_LIMIT
    from fw_magics.values.key_text import key_text
    from fw_magics.widgets import show_graph

    seen = sorted(_model([r for f in BACKLOG for r in f] + FRESH + LATER))
    drawn = []

    @settings(max_examples=2, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(st.sampled_from(seen) | st.tuples(st.integers(-(2 ** 63), 2 ** 63 - 1), st.text(max_size=6)))
    def draw(key):
        drawn.append(key)

    draw()
    view = show_graph(job)
    view.select(job.stateful.step.name)
    inspector = view.state_panel.children[0]
    found = {INSPECTED[0]: (DEFAULT_LIMIT, inspector.show("2, b"))}
    found.update({key: (LIMITED, key_history(job, key_text(key), limit=LIMITED)) for key in INSPECTED[1:] + drawn})
    with pytest.raises(FullWindowError) as bad:
        key_history(job, "two, b")
    return {"found": found, "table": inspector.table.value, "choices": key_choices(job, n=3), "bad": str(bad.value),
            "kept": {b: json.loads(ends[0])["files"] for b, ends in batches.kept(job).items()}}


def _rows(reader) -> dict:
    """(k, g) -> (count, (v, at), notes as JSON, seen, timers) of a reader, as _model keeps them."""
    timers = {}
    for r in reader.timers().collect():
        timers.setdefault((r["k"], r["g"]), set()).add(r["timestamp"])
    return {(r["k"], r["g"]): (r["count"], (r["last"]["v"], _utc(r["last"]["at"])), json.loads(r["notes"]),
                               list(r["seen"]), timers.get((r["k"], r["g"]), set()))
            for r in reader.keyed_state().collect()}


def _utc(stamp):
    return stamp.replace(tzinfo=dt.timezone.utc) if stamp.tzinfo is None else stamp.astimezone(dt.timezone.utc)


@pytest.mark.core  # tests/connect_cases.py runs it again under Spark Connect
def test_keyed_state_has_the_keys_and_one_typed_column_per_declared_state(taken):
    path, *_ = taken
    reader = fw.read_savepoint(path)
    frame = reader.keyed_state()
    assert [(f.name, f.dataType.simpleString()) for f in frame.schema.fields] == [
        ("k", "bigint"), ("g", "string"), ("count", "bigint"), ("last", "struct<v:bigint,at:timestamp>"),
        ("notes", "string"), ("seen", "array<bigint>")]
    got = {(r["k"], r["g"]): (r["count"], (r["last"]["v"], _utc(r["last"]["at"])), r["notes"], list(r["seen"]))
           for r in frame.collect()}
    want = {key: value[:4] for key, value in _model([r for f in BACKLOG for r in f] + FRESH).items()}
    assert {k: (c, last, json.loads(n), s) for k, (c, last, n, s) in got.items()} == \
        {k: (c, last, json.loads(n), s) for k, (c, last, n, s) in want.items()}


def test_the_base_holds_the_states_typed_and_its_table_is_the_one_read_from_their_json(taken):
    """Issue 50's 10,000,000 keys read near spark.read.parquet's speed: the backlog's files (the savepoint's base)
    hold each declared state as a column beside its JSON (keyed.typed_states), which keyed_state() selects; every
    key decoded from its JSON instead gives the same table."""
    from fw_magics.runtime.streaming.keyed.typed_states import PREFIX, TypedStates
    from fw_magics.runtime.streaming.savepoints.reader import typed_frame

    path, *_ = taken
    reader = fw.read_savepoint(path)
    saved = load_savepoint(path)
    assert saved.document["version"] == 5 and saved.base
    stored = TypedStates.of(reader.declared)
    for base, _ in saved.base:
        with pa.ipc.open_stream(pa.OSFile(base)) as stream:
            assert sorted(n for n in stream.schema.names if n.startswith(PREFIX)) == [
                PREFIX + name for name in ("count", "last", "notes", "seen")]
            assert all(stored.found(batch) is not None for batch in stream)  # what the reader selects, not parses
    columns = [(name, kind, t) for name, (kind, t) in sorted(reader.declared.items())]
    decoded = typed_frame(reader.states(), columns, python=True)
    assert sorted(reader.keyed_state().collect()) == sorted(decoded.collect()) and len(decoded.collect()) == 5


def test_timers_positions_operator_state_and_info(taken):
    path, *_ = taken
    reader = fw.read_savepoint(path)
    timers = {(r["k"], r["g"], r["timestamp"]) for r in reader.timers().collect()}
    assert timers == {(*key, t) for key, value in _model([r for f in BACKLOG for r in f] + FRESH).items()
                      for t in value[4]}
    info = reader.info
    assert (info["job"], info["parallelism"], info["key_names"], info["kind"]) == ("tally", 2, ["k", "g"], "process")
    assert info["watermark"] == int((BASE + dt.timedelta(seconds=8)).timestamp() * 1000)
    assert info["batch"] == load_savepoint(path).document["batch"]
    source = info["graph"].source_names()[0]
    positions = reader.positions().collect()
    assert [(r["source"], r["position"]) for r in positions] == [(source, "3 of 3 files read")]
    splits = reader.operator_state(source).collect()
    assert sorted(json.loads(r["element"])["file"] for r in splits) == ["part-0001.parquet", "part-0002.parquet",
                                                                         "part-0003.parquet"]
    with pytest.raises(SavepointError, match=r"holds no operator state of 'nope'.*accepted: 'files\(tally\)'$"):
        reader.operator_state("nope")


def test_a_savepoint_without_recorded_state_is_read_with_its_stream_and_refused_without(taken, tmp_path):
    """An older savepoint (no 'states' in its document): one line naming stream=; with the stream, the same rows."""
    import os
    import shutil

    path, stream, *_ = taken
    old = str(tmp_path / "old")
    shutil.copytree(path, old)
    document = os.path.join(old, "savepoint.json")
    os.chmod(document, 0o644)
    with open(document) as f:
        doc = json.load(f)
    del doc["states"]
    with open(document, "w") as f:
        json.dump(doc, f)
    with pytest.raises(SavepointError, match=r"does not record the state its function declared .*accepted: "
                                             r"read_savepoint\(path, stream="):
        fw.read_savepoint(old)
    assert sorted(fw.read_savepoint(old, stream=stream).keyed_state().collect()) == \
        sorted(fw.read_savepoint(path).keyed_state().collect())
    with pytest.raises(SavepointError, match=r"/old holds event-time timers, which CountSum does not keep$"):
        fw.read_savepoint(old, stream=operator("aggregate", fw.from_files(
            str(tmp_path), "parquet", functions.SCHEMA, event_time="ts")))


@pytest.mark.core  # tests/connect_cases.py runs it again under Spark Connect
def test_a_running_jobs_state_is_what_its_savepoint_holds(taken):
    """job.state(): the same reader over the job's latest committed micro-batch, nothing written."""
    path, _, (info, keyed, timers), _ = taken
    reader = fw.read_savepoint(path)
    assert keyed == sorted(reader.keyed_state().collect()) and len(keyed) == len(_model(
        [r for f in BACKLOG for r in f] + FRESH))
    assert timers == sorted(reader.timers().collect())
    assert {k: v for k, v in info.items() if k not in ("graph", "path")} == \
        {k: v for k, v in reader.info.items() if k not in ("graph", "path")}
    assert info["path"] is None and info["graph"] == reader.info["graph"]
    assert path.endswith("savepoint-000001")  # state() took no savepoint


def _as_model(state: dict) -> dict:
    return {key: (c, last, json.loads(notes), seen, timers) for key, (c, last, notes, seen, timers) in state.items()}


@pytest.mark.core  # tests/connect_cases.py runs it again under Spark Connect
def test_a_running_jobs_state_at_an_earlier_kept_batch_is_the_models_after_it(history):
    """job.state(batch=N): at FRESH's batch, read after the job was stopped, started again and LATER's batch ran,
    the state after FRESH; at LATER's, after it."""
    first, last = history["batches"]
    assert first < last
    records = [r for f in BACKLOG for r in f] + FRESH
    assert history[first] == _as_model(_model(records))
    assert history[last] == _as_model(_model(records + LATER))
    assert history[first] != history[last]


def _state_row(row) -> tuple:
    """A history row's state as _model keeps it (its timers left out: the inspector shows the state columns)."""
    return (row["count"], (row["last"]["v"], _utc(row["last"]["at"])), json.loads(row["notes"]), list(row["seen"]))


INSPECTOR_TEST = "test_the_inspector_shows_a_keys_state_at_each_kept_batch_and_savepoint_as_the_model"


def test_the_inspector_shows_a_keys_state_at_each_kept_batch_and_savepoint_as_the_model(history):
    """key_history: the key's state after FRESH's batch, after LATER's, and in the savepoint taken after FRESH's,
    each as the model's after that batch, or absent where the model has none; a key typed by hand, drawn, never seen."""
    first, last = history["batches"]
    inspected = history["inspected"]
    files = [*BACKLOG, FRESH, LATER]  # in the order written: a micro-batch's end offset counts the files read
    kept = inspected["kept"]
    assert first in kept and last in kept
    after = {b: _model([r for f in files[:read] for r in f]) for b, read in kept.items()}
    for key, (limit, found) in inspected["found"].items():
        read = sorted(kept)[-limit:]
        readings = sorted([("micro-batch", b, None) for b in read] + [("savepoint", first, "savepoint-000001")],
                          key=lambda r: (r[1], r[0] == "savepoint"))
        assert found.key == {"k": key[0], "g": key[1]}
        got = [(r["at"], r["batch"], r["savepoint"], r["found"], _state_row(r) if r["found"] == "present" else None)
               for r in found.rows]
        want = [(at, batch, name, "present" if key in after[batch] else "absent",
                 None if key not in after[batch] else (*after[batch][key][:2], json.loads(after[batch][key][2]),
                                                       after[batch][key][3]))
                for at, batch, name in readings]
        assert got == want, key
        left = sorted(kept)[:-limit]
        assert found.note == (f"micro-batches {batches.in_words(left)} not read (the newest {limit} are)" if left
                              else "")
    added = {(r["at"], r["batch"]): r["found"] for r in inspected["found"][(5, "d")][1].rows}  # LATER added it
    assert added[("savepoint", first)] == "absent" != added[("micro-batch", last)]
    assert "<td>savepoint-000001</td>" in inspected["table"] and "key k = 2, g = &#x27;b&#x27;" in inspected["table"]
    assert len(inspected["choices"]) == 3 and set(inspected["choices"]) <= {f"{k}, {g}" for k, g in after[last]}
    assert inspected["bad"] == ("key 'two, b': 'two' is not a bigint for key column 'k'; accepted: the values of "
                                "k (bigint), g (string), in this order, separated by commas (or a JSON list)")


def test_a_batch_no_longer_kept_is_one_line_naming_the_kept_ones(history):
    first, last = history["batches"]
    assert "\n" not in history["refused"]
    assert "keeps the state of micro-batches " in history["refused"]
    assert history["refused"].endswith(f"batch {last + 1000} is not among them")
    assert str(last) in history["refused"] and "minBatchesToRetain = 100" in history["refused"]


@pytest.mark.core  # tests/connect_cases.py runs it again under Spark Connect
def test_state_changes_between_two_batches_are_the_models_diff(history):
    """The keys LATER changed or added, before and after, as the model's states differ."""
    records = [r for f in BACKLOG for r in f] + FRESH
    old, new = _model(records), _model(records + LATER)
    want = {key: ("added" if key not in old else "changed", old.get(key), new[key]) for key in new
            if old.get(key, (None,))[:4] != new[key][:4]}
    got = {(r["k"], r["g"]): (r["change"], r["before"], r["after"]) for r in history["changes"]}
    assert set(got) == set(want) == {(2, "b"), (5, "d")}

    def values(struct):
        return None if struct is None else (struct["count"], (struct["last"]["v"], _utc(struct["last"]["at"])),
                                            json.loads(struct["notes"]), list(struct["seen"]))

    def modelled(state):
        return None if state is None else (state[0], state[1], json.loads(state[2]), state[3])

    assert {k: (c, values(b), values(a)) for k, (c, b, a) in got.items()} == \
        {k: (c, modelled(b), modelled(a)) for k, (c, b, a) in want.items()}


_KEYS = st.tuples(st.one_of(st.none(), st.integers(-3, 3)), st.sampled_from(["a", "b"]))
_STATES = st.dictionaries(_KEYS, st.tuples(st.one_of(st.none(), st.integers(-2, 2)), st.lists(st.integers(0, 2),
                                                                                              max_size=2)), max_size=6)


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(old=_STATES, new=_STATES)
def test_state_changes_of_any_two_readings_are_the_models_diff(spark, old, new):
    """No job needed: two readers over frames of stored states (null keys, a state set to null, keys added and
    removed) against a pure diff."""
    from fw_magics.api.state import StateKind
    from fw_magics.operators.spec import StateType
    from fw_magics.runtime.streaming.savepoints.changes import changes
    from fw_magics.runtime.streaming.savepoints.reader import SavepointReader
    from fw_magics.values.schema import arrow_schema

    long = StateType(ddl="bigint", arrow_schema=arrow_schema(T.StructType([T.StructField("count", T.LongType())])),
                     spark_types=(T.LongType(),), record=False)
    declared = {"count": (StateKind.VALUE, long), "seen": (StateKind.LIST, long)}

    def reader(states):
        rows = [(k, g, json.dumps({"v": {"count": c}, "l": {"seen": seen}})) for (k, g), (c, seen) in states.items()]
        frame = spark.createDataFrame(rows, "k long, g string, __fw_state string")
        return SavepointReader({"kind": "process", "key_names": ["k", "g"], "job": "j"}, {}, {}, declared,
                               lambda: frame, "", [], spark)

    got = {(r["k"], r["g"]): (r["change"], r["before"] and (r["before"]["count"], list(r["before"]["seen"])),
                              r["after"] and (r["after"]["count"], list(r["after"]["seen"])))
           for r in changes(reader(old), reader(new)).collect()}
    want = {key: ("added" if key not in old else "removed" if key not in new else "changed", old.get(key),
                  new.get(key)) for key in {*old, *new} if old.get(key) != new.get(key)}
    assert got == want


@pytest.mark.parametrize("kind, fields, stored, columns, row", [
    ("reduce", "v long, k long", [5, 1], ["k", "v"], (1, 5)),  # a reduce's record holds its key: the key's column
    ("aggregate", "total long, n long", [5, 2], ["k", "total", "n"], (1, 5, 2)),
    ("aggregate", "k long, n long", [5, 2], ["k", "running"], (1, (5, 2))),  # an accumulator's own k: not the key
])
def test_a_running_value_is_its_columns_unless_one_is_named_as_a_key(spark, kind, fields, stored, columns, row):
    """No job needed: the reader over a frame of states as a savepoint's keyed-state file holds them."""

    from fw_magics.api.state import StateKind
    from fw_magics.operators.spec import StateType
    from fw_magics.runtime.streaming.savepoints.reader import SavepointReader
    from fw_magics.values.schema import arrow_schema

    struct = T._parse_datatype_string(fields)
    record = StateType(ddl=fields, arrow_schema=arrow_schema(struct), spark_types=tuple(f.dataType for f in struct),
                       record=True)
    frame = spark.createDataFrame([(1, json.dumps({"v": {"running": stored}}))], "k long, __fw_state string")
    reader = SavepointReader({"kind": kind, "key_names": ["k"], "job": "j"}, {}, {},
                             {"running": (StateKind.VALUE, record)}, lambda: frame, "", [], spark)
    got = reader.keyed_state()
    assert got.columns == columns
    assert [tuple(tuple(v) if isinstance(v, T.Row) else v for v in r) for r in got.collect()] == [row]


@pytest.mark.parametrize("bad", ["/nonexistent/savepoint", __file__])
def test_a_path_that_is_not_a_savepoint_is_one_line(bad):
    with pytest.raises(SavepointError, match=r"is not a directory; accepted: the path job.savepoint\(\) returned"):
        fw.read_savepoint(bad)


@pytest.mark.extended
@pytest.mark.parametrize("kind", ["reduce", "typed", "aggregate"])
def test_a_reduce_or_aggregate_running_value_is_read_as_its_columns(kind, area):
    """A reduce's reduced record (its key column is the key's), a typed accumulator's fields, a JSON one as text."""
    from tests.streaming.files import table

    backlog, fresh = [[(1, 1, 1), (2, 5, 2), (3, 2, 3)], [(1, 4, 4)]], [(2, 7, 5), (4, 1, 6)]
    for rows in backlog:
        area.write(table(rows), kind)
    op = operator(kind, fw.from_files(area.source(kind), "parquet", functions.SCHEMA, event_time="ts",
                                      watermark_delay="0 milliseconds"))
    job = op.start(job_dir=area.jobs, job_name=kind, trigger=TRIGGER)
    try:
        job.process_all_available()
        area.write(table(fresh), kind)
        job.process_all_available()
        path = job.savepoint()
    finally:
        job.stop()
    frame = fw.read_savepoint(path).keyed_state()
    rows = {r[0]: tuple(r)[1:] for r in frame.collect()}
    records = [r for f in backlog for r in f] + fresh
    sums = {k: (sum(v for kk, v, _ in records if kk == k), sum(1 for kk, *_ in records if kk == k))
            for k, *_ in records}
    if kind == "reduce":
        assert frame.columns == ["k", "v", "ts"]
        latest = expected_latest(model("reduce", 0, backlog, [fresh]), "reduce")
        assert {k: (v, _utc(ts)) for k, (v, ts) in rows.items()} == {k[0]: row[1:] for k, row in latest.items()}
    elif kind == "typed":
        assert frame.columns == ["k", "total", "n"]
        assert rows == sums
    else:
        assert frame.columns == ["k", "running"]
        assert {k: json.loads(text) for k, (text,) in rows.items()} == {k: [n, total] for k, (total, n) in sums.items()}


# -- writing (issue 50, item 3): fw.write_savepoint ---------------------------------------------------------


def _modified(path):
    """The savepoint's keyed_state() with key (1, 'b') dropped and (2, 'b')'s count set to 100; the model's too."""
    from pyspark.sql import functions as F

    frame = fw.read_savepoint(path).keyed_state()
    frame = frame.where(~((F.col("k") == 1) & (F.col("g") == "b")))
    frame = frame.withColumn("count", F.when((F.col("k") == 2) & (F.col("g") == "b"), F.lit(100))
                             .otherwise(F.col("count")))
    state = _model([r for f in BACKLOG for r in f] + FRESH)
    del state[(1, "b")]
    state[(2, "b")] = (100, *state[(2, "b")][1:])
    return frame, state


@pytest.mark.core  # tests/connect_cases.py runs it again under Spark Connect
def test_a_modified_reader_written_back_is_a_savepoint_of_the_model(taken, tmp_path):
    """Drop a key, change one value: the written savepoint loads as a restore loads it (every check), at another
    parallelism, and reads back as the model (each key's timers kept from the savepoint it came from)."""
    path, stream, *_ = taken
    frame, state = _modified(path)
    written = fw.write_savepoint(stream, tmp_path / "fixed", keyed_state=frame, parallelism=3, from_savepoint=path)
    loaded, before = load_savepoint(written), load_savepoint(path)
    assert loaded.parallelism == 3 and loaded.document["watermark"] == before.document["watermark"]
    assert loaded.manifest == before.manifest and loaded.document["batch"] == before.document["batch"]
    assert _rows(fw.read_savepoint(written)) == _as_model(state)


@pytest.mark.parametrize("change, message", [
    (lambda f: f.withColumnRenamed("count", "counts"), r"column 'counts' is not a state of .*column 'count' is missing"
                                                       r".*; accepted: k bigint, g string, count bigint, "),
    (lambda f: f.withColumn("count", f["count"].cast("string")), r"column 'count' is string; accepted: "),
    (lambda f: f.unionByName(f.limit(1)), r"holds key k=\d+, g='\w' 2 times; accepted: one row per key$"),
    (lambda f: f.withColumn("notes", F.when(F.col("k") == 3, F.lit("{not json")).otherwise(F.col("notes"))),
     r"^write_savepoint's keyed_state holds key k=3, g='a' whose JSON state 'notes' holds '\{not json', which is "
     r"not JSON text; accepted: JSON text as json.dumps writes it"),
    (lambda f: f.withColumn("notes", F.lit("NaN")), r"whose JSON state 'notes' holds 'NaN', which is not JSON text"),
    (lambda f: f.withColumn("last", F.when(F.col("k") == 4, F.struct(
        F.col("last.v").alias("v"), F.make_timestamp(F.lit(10000), F.lit(1), F.lit(1), F.lit(0), F.lit(0), F.lit(0))
        .alias("at"))).otherwise(F.col("last"))),
     r"^write_savepoint's keyed_state holds key k=4, g='c' whose state column 'last' holds a date or time outside "
     r"years 1 to 9999; accepted: "),
])
def test_a_frame_that_is_not_the_streams_state_is_one_line_and_nothing_is_written(taken, tmp_path, change, message):
    path, stream, *_ = taken
    frame = change(fw.read_savepoint(path).keyed_state())
    with pytest.raises(FullWindowError, match=message) as refused:
        fw.write_savepoint(stream, tmp_path / "bad", keyed_state=frame, from_savepoint=path)
    assert "\n" not in str(refused.value) and not (tmp_path / "bad").exists() and not list(tmp_path.iterdir())


def test_a_null_key_where_the_streams_schema_allows_none_is_one_line_and_nothing_is_written(spark, tmp_path):
    """A key column the input's schema declares NOT NULL: a null in it is refused (nullable ones take a null key)."""
    source = tmp_path / "src"
    source.mkdir()
    pa.parquet.write_table(_table([(1, "a", 3, 1)]), str(source / "part-0001.parquet"))
    stream = fw.from_files(str(source), "parquet", "k long not null, g string, v long, ts timestamp", event_time="ts") \
        .key_by(["k", "g"]).process(reader_functions.Tally())
    frame = spark.createDataFrame([(None, "a", 1, None, None, [1]), (2, "b", 1, None, None, [])],
                                  "k long, g string, count long, last struct<v:long,at:timestamp>, notes string, "
                                  "seen array<long>")
    with pytest.raises(FullWindowError) as refused:
        fw.write_savepoint(stream, tmp_path / "out", keyed_state=frame)
    assert str(refused.value) == ("write_savepoint's keyed_state holds key k=None, g='a': key column 'k' is null, "
                                  "which the stream's schema does not allow; accepted: a k in every row")
    assert sorted(os.listdir(tmp_path)) == ["src"]


def test_a_parallelism_below_one_or_a_path_that_exists_is_one_line(taken, tmp_path):
    path, stream, *_ = taken
    frame = fw.read_savepoint(path).keyed_state()
    with pytest.raises(FullWindowError, match=r"^parallelism 0; accepted: None \(the job's\) or an integer from 1"):
        fw.write_savepoint(stream, tmp_path / "p", keyed_state=frame, parallelism=0, from_savepoint=path)
    with pytest.raises(FullWindowError, match=r"write_savepoint's path .* exists; accepted: a path that does not"):
        fw.write_savepoint(stream, tmp_path, keyed_state=frame, from_savepoint=path)
    with pytest.raises(FullWindowError, match=r"^write_savepoint's stream is str; accepted: a keyed stream"):
        fw.write_savepoint("tally", tmp_path / "p", keyed_state=frame)
    assert not (tmp_path / "p").exists()


@pytest.mark.extended
def test_a_written_savepoint_restores_at_three_as_the_model_goes_on(taken, tmp_path):
    """The modified savepoint restored at parallelism 3: the stream reads LATER (present after the savepoint's
    files) and each key's state is the modified model's with LATER applied."""
    path, stream, *_ = taken
    frame, state = _modified(path)
    written = fw.write_savepoint(stream, tmp_path / "fixed", keyed_state=frame, parallelism=3, from_savepoint=path)
    job = stream.start(job_dir=str(tmp_path / "jobs"), job_name="fixed", trigger=TRIGGER, from_savepoint=written,
                       parallelism=3)
    try:
        job.process_all_available()
        assert job.parallelism == 3
        assert _rows(job.state()) == _as_model(_model(LATER, state))
    finally:
        job.stop()


@pytest.mark.extended
@pytest.mark.parametrize("positions", ["now", "beginning"])
def test_a_savepoint_bootstrapped_from_a_table_restores_as_the_model(spark, area, positions):
    """Bootstrap: BACKLOG's per-key state as a table, no savepoint before it; restored, the stream reads FRESH
    (with 'beginning' the files present at the write too) over that state. No timers are bootstrapped, W unset."""
    for rows in BACKLOG:
        area.write(_table(rows), "tally")
    stream = _stream(area)
    table = {key: (c, last, notes, seen, set()) for key, (c, last, notes, seen, _) in
             _model([r for f in BACKLOG for r in f]).items()}
    frame = spark.createDataFrame([(k, g, c, last, notes, seen) for (k, g), (c, last, notes, seen, _) in table.items()],
                                  "k long, g string, count long, last struct<v:long,at:timestamp>, notes string, "
                                  "seen array<long>")
    written = fw.write_savepoint(stream, area.jobs + "/boot", keyed_state=frame, parallelism=2, positions=positions)
    assert load_savepoint(written).document["watermark"] is None
    area.write(_table(FRESH), "tally")
    job = stream.start(job_dir=area.jobs, job_name="boot", trigger=TRIGGER, from_savepoint=written, parallelism=1)
    try:
        job.process_all_available()
        read = FRESH if positions == "now" else [r for f in BACKLOG for r in f] + FRESH
        assert _rows(job.state()) == _as_model(_model(read, table))
    finally:
        job.stop()


# -- reading fast (issue 50, item 4): Spark's from_json where the declared types allow ---------------------


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_from_json_gives_what_the_codecs_give_on_random_types_and_values(spark, data):
    """Values the runtime's codec stored (a value state, a record state of two fields, a list state), read by
    Spark's expressions and by the Python decoding (tested against the value model in the pure tests): the
    same JSON of every row, -0.0, NaN and the infinities included."""
    from pyspark.sql import functions as F

    from fw_magics.api.state import StateKind
    from fw_magics.operators.spec import codec_for
    from fw_magics.runtime.streaming.keyed.typed_states import column_type
    from fw_magics.runtime.streaming.savepoints.reader import typed_frame
    from fw_magics.runtime.streaming.savepoints.typed_columns import expressions
    from tests import value_model as vm

    one, two = data.draw(vm.spark_types, "type"), data.draw(vm.spark_types, "second type")
    record = T.StructType([T.StructField("a", one), T.StructField("b", two)])
    columns = [("r", StateKind.VALUE, state_type(record, record=True)), ("v", StateKind.VALUE, state_type(one)),
               ("l", StateKind.LIST, state_type(one))]
    assume(expressions(columns, column_type) is not None)
    values = data.draw(st.lists(st.tuples(vm.good(one), vm.good(two)), min_size=1, max_size=4), "values")
    assume(all(model_value(a, one) is not None and model_value(b, two) is not None for a, b in values))
    records = codec_for(columns[0][2], "r").encode_all(values)
    singles = codec_for(columns[1][2], "v").encode_all([a for a, _ in values])
    docs = [{"v": {"r": r, "v": v}, "l": {"l": singles[: i + 1]}} for i, (r, v) in enumerate(zip(records, singles))]
    states = spark.createDataFrame([(i, json.dumps(d)) for i, d in enumerate(docs + [{}])], "k long, __fw_state string")

    def texts(frame):
        return sorted(r[0] for r in frame.select(F.to_json(F.struct(*frame.columns))).collect())

    fast, slow = typed_frame(states, columns), typed_frame(states, columns, python=True)
    assert fast.schema.simpleString() == slow.schema.simpleString()
    assert texts(fast) == texts(slow)


def test_states_parsed_as_their_own_type_keep_their_extremes(spark):
    """The integers, booleans, strings and timestamps Spark's JSON reader parses directly (a record of them as one
    array of that type, a record of mixed ones as text): the extremes, escapes and a record whose fields are a long
    and a timestamp (both parsed as longs) give what the Python decoding gives, parsed once per row."""
    from fw_magics.api.state import StateKind
    from fw_magics.operators.spec import codec_for
    from fw_magics.runtime.streaming.savepoints.reader import typed_frame

    pair = T.StructType([T.StructField("n", T.LongType()), T.StructField("at", T.TimestampType())])
    mixed = T.StructType([T.StructField("b", T.ByteType()), T.StructField("x", T.DoubleType())])
    columns = [("p", StateKind.VALUE, state_type(pair, record=True)), ("m", StateKind.VALUE, state_type(mixed, record=True)),
               ("b", StateKind.VALUE, state_type(T.ByteType())), ("s", StateKind.LIST, state_type(T.StringType())),
               ("f", StateKind.LIST, state_type(T.BooleanType()))]
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    rows = [((2**63 - 1, epoch - dt.timedelta(microseconds=1)), (-128, -0.0), 127, ['a"\\\n\u00e9\U0001F600', ""], [True]),
            ((-(2**63), dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=dt.timezone.utc)), (127, float("nan")), -128,
             [], [False, True])]
    codecs = {name: codec_for(t, name) for name, _, t in columns}
    docs = [{"v": {n: codecs[n].encode_all([v])[0] for n, v in zip("pmb", row[:3])},
             "l": {n: codecs[n].encode_all(v) if v else [] for n, v in zip("sf", row[3:])}} for row in rows]
    states = spark.createDataFrame([(i, json.dumps(d)) for i, d in enumerate(docs)], "k long, __fw_state string")
    fast, slow = typed_frame(states, columns), typed_frame(states, columns, python=True)
    assert "__fw_doc" in fast._jdf.queryExecution().optimizedPlan().toString()  # parsed in a projection of its own
    assert sorted(map(repr, fast.collect())) == sorted(map(repr, slow.collect()))
    assert fast.where("k = 0").first()["p"]["n"] == 2**63 - 1 and fast.where("k = 1").first()["b"] == -128
