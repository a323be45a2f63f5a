"""A small pure-Python reference model of a keyed stream over a backlog and fresh files.

It is written without fw-magics' per-key core, from the rules the modes must agree on:

* the backlog (all files present at the start) is processed with no watermark: per key, its
  records in event-time order (stable), then the key's timers up to W = max(event time) - delay,
  earliest first (FLIP-327's switch; the plain stream gets there with its first micro-batch and
  the no-data batch after it);
* each fresh file is one micro-batch: records with ts <= watermark are dropped (Spark's late
  rule), each key's records are applied in event-time order, then timers <= watermark fire;
  the watermark becomes max(watermark, max event time of the file - delay) and a no-data batch
  fires the timers up to it.

State lives in plain Python objects. The result is the changelog: (batch, key, kind, row) in
emission order, batch -1 for the backlog.
"""

from __future__ import annotations

import datetime as dt

from fw_magics.values.records import make_record

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
MIN_WM = -(2**63)


def ms(value: dt.datetime) -> int:
    return (value - EPOCH) // dt.timedelta(milliseconds=1)


def us(value: dt.datetime) -> int:
    return (value - EPOCH) // dt.timedelta(microseconds=1)


class _Timers:
    def __init__(self):
        self.by_key: dict = {}


class _Ctx:
    """The context a model process function sees (same methods as fw-magics')."""

    def __init__(self, model, key):
        self.model, self.key, self.ts = model, key, None
        self.timer_service = self

    def __call__(self):
        return self

    def timestamp(self):
        return self.ts

    def get_current_key(self):
        return self.key[0] if len(self.key) == 1 else self.key

    def register_event_time_timer(self, t):
        self.model.timers.setdefault(self.key, set()).add(t)

    def delete_event_time_timer(self, t):
        self.model.timers.get(self.key, set()).discard(t)

    def current_watermark(self):
        return self.model.watermark


class _Value:
    def __init__(self, model, name):
        self.model, self.name = model, name

    def value(self):
        return self.model.values.get((self.model.key, self.name))

    def update(self, v):
        if v is None:
            self.clear()
        else:
            self.model.values[(self.model.key, self.name)] = v

    def clear(self):
        self.model.values.pop((self.model.key, self.name), None)


class _List:
    def __init__(self, model, name):
        self.model, self.name = model, name

    def get(self):
        return list(self.model.lists.get((self.model.key, self.name), []))

    def add(self, v):
        self.model.lists.setdefault((self.model.key, self.name), []).append(v)

    def add_all(self, vs):
        for v in vs:
            self.add(v)

    def update(self, vs):
        self.model.lists[(self.model.key, self.name)] = list(vs)

    def clear(self):
        self.model.lists.pop((self.model.key, self.name), None)


class _OpenCtx:
    def __init__(self, model):
        self.model = model

    def get_state(self, d):
        return _Value(self.model, d.name)

    def get_list_state(self, d):
        return _List(self.model, d.name)


def _rows(result):
    if result is None:
        return []
    if isinstance(result, (tuple, dict, str, int, float)):
        return [result]
    return list(result)


class Model:
    """``kind``: reduce (fn(a, b)), aggregate (an AggregateFunction) or process (a KeyedProcessFunction)."""

    def __init__(self, kind, fn, key_columns, ts_column, delay_ms):
        self.kind, self.fn, self.keys, self.ts_col, self.delay = kind, fn, key_columns, ts_column, delay_ms
        self.running: dict = {}
        self.values: dict = {}
        self.lists: dict = {}
        self.timers: dict = {}
        self.watermark = MIN_WM
        self.key = None
        self.changelog: list = []
        self.batch = -1
        if kind == "process":
            fn.open(_OpenCtx(self))

    def _key(self, record):
        return tuple(getattr(record, c) for c in self.keys)

    def _emit(self, kind, value):
        self.changelog.append((self.batch, self.key, kind, value))

    def _apply(self, key, records):
        self.key = key
        records = sorted(records, key=lambda r: us(getattr(r, self.ts_col)))
        if self.kind == "process":
            ctx = _Ctx(self, key)
            for r in records:
                ctx.ts = ms(getattr(r, self.ts_col))
                for row in _rows(self.fn.process_element(r, ctx)):
                    self._emit("element", row)
            return
        acc = self.running.get(key)
        for r in records:
            if self.kind == "reduce":
                acc = r if acc is None else make_record(r._fields, self.fn(acc, r))
            else:
                acc = self.fn.add(r, self.fn.create_accumulator() if acc is None else acc)
        self.running[key] = acc
        self._emit("element", tuple(acc) if self.kind == "reduce" else self.fn.get_result(acc))

    def _fire(self, watermark):
        if self.kind != "process":
            return
        for key in sorted(self.timers, key=repr):
            self.key = key
            ctx = _Ctx(self, key)
            while True:
                due = [t for t in self.timers.get(key, ()) if t <= watermark]
                if not due:
                    break
                t = min(due)
                self.timers[key].discard(t)
                ctx.ts = t
                saved, self.watermark = self.watermark, max(self.watermark, watermark)
                for row in _rows(self.fn.on_timer(t, ctx)):
                    self._emit("timer", row)
                self.watermark = saved

    def _by_key(self, records):
        groups: dict = {}
        for r in records:
            groups.setdefault(self._key(r), []).append(r)
        return groups

    def backlog(self, records):
        """All backlog records; returns W (None when there are none)."""
        self.batch, self.watermark = -1, MIN_WM
        for key, rs in sorted(self._by_key(records).items(), key=lambda kv: repr(kv[0])):
            self._apply(key, rs)
        if not records:
            return None
        w = max(ms(getattr(r, self.ts_col)) for r in records) - self.delay
        self._fire(w)
        self.watermark = w
        return w

    def fresh(self, batch_id, records):
        """One fresh file as one micro-batch, then the no-data batch its watermark move brings."""
        self.batch = batch_id
        wm = self.watermark
        kept = [r for r in records if wm == MIN_WM or us(getattr(r, self.ts_col)) > wm * 1000]
        for key, rs in sorted(self._by_key(kept).items(), key=lambda kv: repr(kv[0])):
            self._apply(key, rs)
        self._fire(wm)
        if records:
            self.watermark = max(wm, max(ms(getattr(r, self.ts_col)) for r in records) - self.delay)
        self._fire(self.watermark)

    # -- answers -----------------------------------------------------------------------------

    def latest(self) -> dict:
        """key -> the last output row of that key."""
        out = {}
        for _, key, _, row in self.changelog:
            out[key] = row
        return out

    def fired(self) -> set:
        """(key, timer time) of every timer that fired: the rows a test function emits for them."""
        return {(key, row) for _, key, kind, row in self.changelog if kind == "timer"}
