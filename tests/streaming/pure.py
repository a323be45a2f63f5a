"""Helpers for the pure tests: operator specs built without a Spark session, and a driver that
runs the per-key core on the schedule the engines use (the backlog per key, then micro-batches),
with every key's state going through its JSON text between calls, as it does in Spark."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
from pyspark.sql import types as T

from fw_magics.datastream.stateful import struct_state_type
from fw_magics.operators import AGGREGATE, PROCESS, REDUCE
from fw_magics.operators.spec import StateType
from fw_magics.runtime.streaming.keyed.core import KeyedCore
from fw_magics.values.event_time import MIN_WATERMARK
from fw_magics.values.records import make_record
from tests.streaming import functions
from tests.streaming.reference import ms, us

RECORD = T.StructType([T.StructField("k", T.LongType()), T.StructField("v", T.LongType()),
                       T.StructField("ts", T.TimestampType())])
KEY = T.StructType([RECORD.fields[0]])
BASE = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
NAMES = ("k", "v", "ts")


def record(k, v, offset_ms, micros=0):
    return make_record(NAMES, (k, v, BASE + dt.timedelta(milliseconds=offset_ms, microseconds=micros)))


def long_state(name):
    return StateType("long", pa.schema([pa.field(name, pa.int64())]), (T.LongType(),), False)


def spec(kind, fn=None):
    record_type = struct_state_type(RECORD, "record")
    key = struct_state_type(KEY, "key")
    if kind == "reduce":
        return REDUCE.spec(function=fn or functions.add, label="add", record=record_type, key=key, event_time="ts")
    if kind == "aggregate":
        agg = fn or functions.CountSum()
        result = struct_state_type(T.StructType([T.StructField("n", T.LongType()),
                                                 T.StructField("total", T.LongType())]), "result")
        return AGGREGATE.spec(function=agg, label=type(agg).__name__, record=record_type, key=key, event_time="ts",
                              result=result)
    result = struct_state_type(T.StructType([T.StructField("what", T.StringType()), T.StructField("n", T.LongType()),
                                             T.StructField("at", T.LongType())]), "result")
    states = {"count": ("value", long_state("count")), "total": ("value", StateType(None)),
              "seen": ("list", StateType(None))}
    return PROCESS.spec(function=fn or functions.Sessions(), label="Sessions", record=record_type, key=key,
                        event_time="ts", result=result, states=states)


class CoreDriver:
    """Runs a KeyedCore as the engines do; the changelog is (batch, key, kind, row), as the model's."""

    def __init__(self, operator_spec, delay_ms):
        self.core = KeyedCore(operator_spec)
        self.delay = delay_ms
        self.state: dict = {}
        self.timers: dict = {}  # key -> set of registered timers (what Spark's timer store would hold)
        self.changelog: list = []
        self.watermark = MIN_WATERMARK
        self.writes = 0

    def _run(self, batch, key, records, watermark, fire):
        self.core.begin(key, self.state.get(key), watermark)
        for r in sorted(records, key=lambda r: us(r.ts)):
            self.core.element(r, ms(r.ts))
        if fire is not None:
            self.core.fire(fire)
        result = self.core.end()
        if result.state is None:
            self.state.pop(key, None)
        else:
            self.state[key] = result.state
        if result.changed:
            self.writes += 1
        timers = self.timers.setdefault(key, set())
        timers |= set(result.timers_added)
        timers -= set(result.timers_removed)
        self.changelog.extend((batch, key, kind, value) for kind, key, value in result.outputs)

    def backlog(self, records):
        by_key: dict = {}
        for r in records:
            by_key.setdefault((r.k,), []).append(r)
        w = max(ms(r.ts) for r in records) - self.delay if records else None
        for key in sorted(by_key):
            self._run(-1, key, by_key[key], MIN_WATERMARK, w)
        if w is not None:
            self.watermark = w
        return w

    def _fire_due(self, batch, watermark):
        for key in sorted(k for k, ts in self.timers.items() if any(t <= watermark for t in ts)):
            self._run(batch, key, [], self.watermark, watermark)

    def fresh(self, batch, records):
        wm = self.watermark
        kept = [r for r in records if wm == MIN_WATERMARK or us(r.ts) > wm * 1000]
        by_key: dict = {}
        for r in kept:
            by_key.setdefault((r.k,), []).append(r)
        for key in sorted(by_key):
            self._run(batch, key, by_key[key], wm, None)
        self._fire_due(batch, wm)
        if records:
            self.watermark = max(wm, max(ms(r.ts) for r in records) - self.delay)
        self._fire_due(batch, self.watermark)

    def latest(self):
        out = {}
        for _, key, _, row in self.changelog:
            out[key] = tuple(row)
        return out
