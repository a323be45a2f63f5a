"""A pure-Python reference model of a two-input keyed operator over two backlogs and fresh files.

Written from the rules the modes must agree on, without fw-magics' core:

* the backlogs (every file of both inputs present at the start) are one batch with no watermark: per
  key, the records of both inputs in event-time order, the first input's first on a tie; then the
  key's timers up to W = the smaller of each input's greatest event time less its delay (an input
  without records left out), earliest first;
* each fresh file (of one input) is one micro-batch: records at or before the watermark are dropped,
  each key's records applied in event-time order, timers up to the watermark fire; then that input's
  watermark becomes its greatest event time so far less its delay, the operator's the smaller of the
  two (none while an input has seen no record; never going back), and a no-data batch fires the timers
  up to it; a restart starts each input's watermark from the operator's (what Spark's checkpoint keeps).

The co-process function is called as fw-magics calls it (process_element1/2, on_timer); the interval
join is written here from Flink's definition, not from fw-magics' operator.
"""

from __future__ import annotations

from tests.streaming.reference import MIN_WM, Model, _Ctx, _rows, ms, us


class CoModel(Model):
    """``fn``: a KeyedCoProcessFunction; ``delays``: each input's watermark delay (ms)."""

    def __init__(self, fn, delays):
        super().__init__("process", fn, ["k"], "ts", 0)
        self.delays = delays
        self.tops: dict = {}  # input -> its greatest event time so far (ms)

    def _apply_tagged(self, key, tagged):
        self.key = key
        ctx = _Ctx(self, key)
        for side, r in sorted(tagged, key=lambda t: (us(t[1].ts), t[0])):
            ctx.ts = ms(r.ts)
            method = self.fn.process_element1 if side == 1 else self.fn.process_element2
            for row in _rows(method(r, ctx)):
                self._emit("element", row)

    def _run(self, tagged):
        groups: dict = {}
        for side, r in tagged:
            groups.setdefault((r[0],), []).append((side, r))  # the key is each input's first column
        for key, rs in sorted(groups.items(), key=lambda kv: repr(kv[0])):
            self._apply_tagged(key, rs)

    def _move(self, records: dict):
        """Each input's watermark after ``records`` (input -> its records of one batch), then the operator's."""
        for side, rs in records.items():
            if rs:
                self.tops[side] = max(self.tops.get(side, MIN_WM), max(ms(r.ts) for r in rs))
        if len(self.tops) == 2:  # an input that has seen no record holds the other back
            candidate = min(t - self.delays[s - 1] for s, t in self.tops.items())
            self.watermark = candidate if self.watermark == MIN_WM else max(self.watermark, candidate)

    def restart(self):
        """A restart: Spark's checkpoint keeps the operator's watermark, and each input's starts from it."""
        self.tops = {} if self.watermark == MIN_WM else {s: self.watermark + self.delays[s - 1] for s in (1, 2)}

    def backlog(self, first, second):
        self.batch, self.watermark = -1, MIN_WM
        self._run([(1, r) for r in first] + [(2, r) for r in second])
        self._move({1: first, 2: second})
        if self.watermark != MIN_WM:
            self._fire(self.watermark)
        return None if self.watermark == MIN_WM else self.watermark

    def fresh(self, batch_id, side, records):
        self.batch = batch_id
        wm = self.watermark
        kept = [r for r in records if wm == MIN_WM or us(r.ts) > wm * 1000]
        self._run([(side, r) for r in kept])
        self._fire(wm)
        self._move({side: records})
        self._fire(self.watermark)


def interval_join(first, second, lower, upper, exclusive=(False, False)):
    """Flink's interval join of every pair, ignoring lateness: (k, l.v, r.w, l.ts ms, r.ts ms) as a sorted list.
    ``exclusive``: whether the lower and the upper bound are left out of the interval."""
    above = (lambda a, b: a < b) if exclusive[0] else (lambda a, b: a <= b)
    below = (lambda a, b: a < b) if exclusive[1] else (lambda a, b: a <= b)
    out = []
    for left in first:
        for right in second:
            if left[0] == right[0] and above(ms(left.ts) + lower, ms(right.ts)) and below(ms(right.ts), ms(left.ts) + upper):
                out.append((left[0], left.v, right.w, ms(left.ts), ms(right.ts)))
    return sorted(out)
