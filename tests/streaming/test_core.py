"""The per-key core against the reference model, on random backlogs and fresh batches (no Spark session)."""

from __future__ import annotations

import datetime as dt
import decimal
import json

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import types as T

import fw_magics as fw
from fw_magics.datastream.stateful import struct_state_type
from fw_magics.operators.spec import StateType
from fw_magics.runtime.streaming.keyed.core import KeyedCore
from fw_magics.runtime.streaming.keyed.timers import TimerQueue
from fw_magics.values.codecs import JsonCodec, TypedCodec
from fw_magics.values.event_time import MIN_WATERMARK
from tests.streaming import functions
from tests.streaming.pure import CoreDriver, record, spec
from tests.streaming.reference import Model

# Whole seconds, so that timers and records often sit exactly on a watermark (the boundaries
# ts <= W and timer <= W), and now and then a sub-millisecond offset (microseconds decide lateness).
records = st.builds(record, st.integers(0, 3), st.integers(-5, 20), st.integers(0, 30).map(lambda s: s * 1000),
                    st.sampled_from([0, 0, 0, 0, 250, 999]))
files = st.lists(records, min_size=0, max_size=12)
KINDS = ("reduce", "aggregate", "process")


def fresh_function(kind):
    return {"reduce": functions.add, "aggregate": functions.CountSum(), "process": functions.Sessions()}[kind]


def as_tuples(latest):
    return {key: tuple(row) for key, row in latest.items()}


@settings(max_examples=150, deadline=None)
@given(kind=st.sampled_from(KINDS), backlog=st.lists(files, max_size=3), fresh=st.lists(files, max_size=4),
       delay=st.sampled_from([0, 1000, 5000]))
def test_core_matches_the_reference_model(kind, backlog, fresh, delay):
    model = Model(kind, fresh_function(kind), ["k"], "ts", delay)
    driver = CoreDriver(spec(kind, fresh_function(kind)), delay)
    flat = [r for f in backlog for r in f]
    assert driver.backlog(flat) == model.backlog(flat)
    for batch, rows in enumerate(fresh):
        model.fresh(batch, rows)
        driver.fresh(batch, rows)
    assert as_tuples(driver.latest()) == as_tuples(model.latest())
    assert per_key(driver.changelog) == per_key(model.changelog)


def per_key(changelog):
    """Each key's changelog in order (the order across keys is not defined in any mode)."""
    out: dict = {}
    for batch, key, kind, row in changelog:
        out.setdefault(key, []).append((batch, kind, tuple(row)))
    return out


@settings(max_examples=100, deadline=None)
@given(kind=st.sampled_from(KINDS), rows=st.lists(records, min_size=1, max_size=20), cuts=st.lists(st.integers(0, 20)))
def test_one_run_per_key_equals_many_runs_through_json_state(kind, rows, cuts):
    """The backlog applies a key's records in one run (one state write); a stream applies them
    over many batches, the state going through JSON each time: same final result and state."""
    rows = sorted([record(0, r.v, 0)._fields and r.__class__((0, r.v, r.ts)) for r in rows], key=lambda r: r.ts)
    whole = KeyedCore(spec(kind))
    whole.begin((0,), None)
    for r in rows:
        whole.element(r, functions_ms(r))
    one = whole.end()
    split = KeyedCore(spec(kind))
    state, outputs, bounds = None, [], sorted({min(c, len(rows)) for c in cuts} | {0, len(rows)})
    for lo, hi in zip(bounds, bounds[1:]):
        split.begin((0,), state)
        for r in rows[lo:hi]:
            split.element(r, functions_ms(r))
        result = split.end()
        state, outputs = result.state, outputs + result.outputs
    assert json.loads(state or "{}") == json.loads(one.state or "{}")
    if kind == "process":
        assert [tuple(v) for _, _, v in outputs] == [tuple(v) for _, _, v in one.outputs]
    else:
        assert tuple(outputs[-1][2]) == tuple(one.outputs[-1][2])


def functions_ms(r):
    from tests.streaming.reference import ms

    return ms(r.ts)


def test_timers_fire_in_order_including_ones_registered_while_firing():
    class Chain(fw.KeyedProcessFunction):
        schema = "at long"

        def process_element(self, record, ctx):
            ctx.timer_service.register_event_time_timer(30)
            ctx.timer_service.register_event_time_timer(10)
            ctx.timer_service.register_event_time_timer(10)  # one timer per time

        def on_timer(self, timestamp, ctx):
            if timestamp == 10:
                ctx.timer_service.register_event_time_timer(20)   # due too: fires before 30
                ctx.timer_service.register_event_time_timer(99)   # not due
            yield (timestamp,)

    core = KeyedCore(spec("process", Chain()))
    core.begin((1,), None)
    core.element(record(1, 1, 0), 0)
    core.fire(50)
    result = core.end()
    assert [v for _, _, v in result.outputs] == [(10,), (20,), (30,)]
    assert json.loads(result.state) == {"t": [99]} and result.timers_added == [99] and result.timers_fired == 3


def test_watermark_seen_by_the_function():
    seen = []

    class Look(fw.KeyedProcessFunction):
        schema = "x long"

        def process_element(self, record, ctx):
            seen.append(("element", ctx.timer_service.current_watermark(), ctx.timestamp(), ctx.get_current_key()))
            ctx.timer_service.register_event_time_timer(ctx.timestamp() + 5)

        def on_timer(self, timestamp, ctx):
            seen.append(("timer", ctx.timer_service.current_watermark(), ctx.timestamp(), ctx.get_current_key()))

    core = KeyedCore(spec("process", Look()))
    core.begin((7,), None)  # the backlog: no watermark while a key's records are processed
    core.element(record(7, 1, 0), 100)
    core.fire(500)  # the switch: W = 500
    core.end()
    assert seen == [("element", MIN_WATERMARK, 100, 7), ("timer", 500, 105, 7)]


@pytest.mark.parametrize("bad, message", [
    (lambda s, r, c: s.count.update("x"), "expected bigint, got str"),
    (lambda s, r, c: s.total.update({1: 2}), "a dict key of type int"),
    (lambda s, r, c: s.total.update((1, 2)), "a value of type tuple"),
    (lambda s, r, c: s.seen.add(None), "cannot hold None"),
    (lambda s, r, c: c.timer_service.register_event_time_timer(1.5), "timer time 1.5"),
    (lambda s, r, c: c.timer_service.register_processing_time_timer(1), "processing-time timers"),
])
def test_state_and_timer_misuse_is_one_line(bad, message):
    class Bad(functions.Sessions):
        def process_element(self, record, ctx):
            bad(self, record, ctx)

    core = KeyedCore(spec("process", Bad()))
    core.begin((1,), None)
    with pytest.raises(fw.FullWindowError, match=message) as info:
        core.element(record(1, 1, 0), 0)
    assert "\n" not in str(info.value)


def test_state_values_are_copies():
    class Mutate(fw.KeyedProcessFunction):
        schema = "n long"

        def open(self, ctx):
            self.items = ctx.get_state(fw.ValueStateDescriptor("items"))

        def process_element(self, record, ctx):
            items = self.items.value() or []
            items.append(record.v)  # not written back: lost, in every mode
            if record.v == 0:
                self.items.update(items)
            yield (len(self.items.value() or []),)

    s = spec("process", Mutate())
    s = s.__class__(**{**s.__dict__, "states": {"items": ("value", StateType(None))}})
    core = KeyedCore(s)
    core.begin((1,), None)
    for v in (0, 5, 6):
        core.element(record(1, v, v), v)
    assert [v for _, _, v in core.end().outputs] == [(1,), (1,), (1,)]


# -- codecs ----------------------------------------------------------------------------------------

SPARK_VALUES = [
    (T.LongType(), st.integers(-(2**63), 2**63 - 1)),
    (T.DoubleType(), st.floats(allow_nan=False) | st.sampled_from([float("inf"), float("-inf")])),
    (T.StringType(), st.text(max_size=5)),
    (T.BinaryType(), st.binary(max_size=5)),
    (T.DecimalType(10, 2), st.decimals(min_value=-10**7, max_value=10**7, places=2, allow_nan=False)),
    (T.DateType(), st.dates()),
    (T.TimestampType(), st.datetimes(timezones=st.just(dt.timezone.utc))),
    (T.TimestampNTZType(), st.datetimes()),
    (T.ArrayType(T.LongType()), st.lists(st.integers(-5, 5) | st.none(), max_size=3)),
    (T.MapType(T.StringType(), T.LongType()), st.dictionaries(st.text(max_size=2), st.integers(0, 9), max_size=2)
     .map(lambda d: list(d.items()))),
]


@settings(max_examples=60, deadline=None)
@given(data=st.data(), which=st.integers(0, len(SPARK_VALUES) - 1))
def test_typed_codec_round_trips_through_json(data, which):
    spark_type, values = SPARK_VALUES[which]
    value = data.draw(values)
    struct = T.StructType([T.StructField("a", spark_type), T.StructField("b", T.LongType())])
    from fw_magics.values.schema import arrow_schema

    scalar = TypedCodec("state 'x'", arrow_schema(T.StructType([struct.fields[0]])), [spark_type], False)
    back = scalar.decode(json.loads(json.dumps(scalar.encode(value))))
    assert back == value or (isinstance(value, dt.datetime) and back == value.replace(tzinfo=back.tzinfo))
    record_codec = TypedCodec("state 'r'", arrow_schema(struct), [f.dataType for f in struct.fields], True)
    got = record_codec.decode(json.loads(json.dumps(record_codec.encode((value, 3)))))
    assert got.b == 3 and got._fields == ("a", "b")


def test_typed_codec_refuses_values_that_do_not_fit():
    from fw_magics.values.schema import arrow_schema

    codec = TypedCodec("value state 'n'", arrow_schema(T.StructType([T.StructField("n", T.IntegerType())])),
                       [T.IntegerType()], False)
    for bad in (2**40, 1.5, "1"):
        with pytest.raises(fw.FullWindowError, match="value state 'n'"):
            codec.encode(bad)
    assert codec.encode(decimal.Decimal("3")) == 3


def test_json_codec_copies_and_refuses_non_json():
    codec = JsonCodec("value state 'x'")
    value = {"a": [1, 2]}
    stored = codec.encode(value)
    value["a"].append(3)
    assert codec.decode(stored) == {"a": [1, 2]}
    for bad in ({1, 2}, float("nan"), b"x", dt.date(2024, 1, 1)):
        with pytest.raises(fw.FullWindowError, match="value state 'x'"):
            codec.encode(bad)


def test_reduce_state_keeps_the_records_types():
    core = KeyedCore(spec("reduce"))
    core.begin((1,), None)
    core.element(record(1, 2, 5, 250), 5)
    core.element(record(1, 3, 9), 9)
    result = core.end()
    again = KeyedCore(spec("reduce"))
    again.begin((1,), result.state)
    again.element(record(1, 4, 1), 1)
    k, v, ts = again.end().outputs[-1][2]
    assert (k, v) == (1, 9) and ts == record(1, 0, 9).ts


# -- timers ------------------------------------------------------------------------------------------


@given(ops=st.lists(st.tuples(st.sampled_from(["add", "del"]), st.integers(0, 20)), max_size=40),
       watermark=st.integers(-1, 21))
def test_timer_queue_is_a_sorted_set(ops, watermark):
    queue, model = TimerQueue(), set()
    for op, t in ops:
        assert (queue.register(t) if op == "add" else queue.delete(t)) == ((t not in model) if op == "add" else t in model)
        (model.add if op == "add" else model.discard)(t)
    fired = []
    while (t := queue.pop_due(watermark)) is not None:
        fired.append(t)
    assert fired == sorted(t for t in model if t <= watermark)
    assert queue.times() == sorted(t for t in model if t > watermark)


def test_struct_state_type_is_nullable():
    st_ = struct_state_type(T.StructType([T.StructField("a", T.LongType(), False)]), "x")
    assert st_.arrow_schema.field(0).nullable and st_.record and st_.names == ("a",)
    assert isinstance(st_.arrow_schema, pa.Schema)


list_ops = st.lists(st.one_of(
    st.tuples(st.sampled_from(["add", "add_later"]), st.integers(-5, 5)),
    st.tuples(st.sampled_from(["add_all", "update"]), st.lists(st.integers(-5, 5), max_size=3)),
    st.tuples(st.sampled_from(["get", "clear"]), st.none()),
    st.tuples(st.sampled_from(["values_at", "keep_only"]), st.lists(st.integers(0, 30), max_size=3)),
), max_size=25)


@settings(max_examples=80, deadline=None)
@given(ops=list_ops, typed=st.booleans())
def test_list_state_with_values_added_later_is_the_list_of_every_operation_in_order(ops, typed):
    """``add_later`` (the interval join's: encoded in one batch when the list is next read or the key
    ends) interleaved with every other operation gives the list a plain Python list would hold."""
    from fw_magics.runtime.streaming.keyed.core import ListState
    from fw_magics.values.schema import arrow_schema

    codec = (TypedCodec("list state 'xs'", arrow_schema(T.StructType([T.StructField("x", T.LongType())])),
                        [T.LongType()], False) if typed else JsonCodec("list state 'xs'"))
    core = KeyedCore(spec("process", functions.Sessions()))
    core.begin((1,), None)
    state, model = ListState(core, "xs", codec), []
    for op, arg in ops:
        if op in ("add", "add_later"):
            getattr(state, op)(arg)
            model.append(arg)
        elif op == "add_all":
            state.add_all(arg)
            model += arg
        elif op == "update":
            state.update(arg)
            model = list(arg)
        elif op == "clear":
            state.clear()
            model = []
        elif op == "get":
            assert state.get() == model
        else:
            at = [i for i in arg if i < len(model)]
            if op == "values_at":
                assert state.values_at(at) == [model[i] for i in at]
            else:
                state.keep_only(at)
                model = [model[i] for i in at]
    stored = json.loads(core.end().state or "{}").get("l", {}).get("xs", [])
    assert [codec.decode(v) for v in stored] == model
    with pytest.raises(fw.FullWindowError, match="list state 'xs' cannot hold None"):
        core.begin((2,), None)
        state.add_later(None)
