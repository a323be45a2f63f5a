"""Writing a test's source files atomically, and running a job over them as a test would."""

from __future__ import annotations

import datetime as dt
import json
import os
import threading

import pyarrow as pa
import pyarrow.parquet as pq

from tests.streaming import functions
from tests.streaming.reference import Model

BASE = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
TRIGGER = "100 milliseconds"
RECORD_NAMES = ("k", "v", "ts")


def table(rows, names=RECORD_NAMES) -> pa.Table:
    """rows: (k, v, seconds after 2024-01-01[, microseconds]); ``names``: the three columns' names."""
    times = [BASE + dt.timedelta(seconds=r[2], microseconds=r[3] if len(r) > 3 else 0) for r in rows]
    return pa.table({names[0]: pa.array([r[0] for r in rows], pa.int64()),
                     names[1]: pa.array([r[1] for r in rows], pa.int64()),
                     names[2]: pa.array(times, pa.timestamp("us", tz="UTC"))})


class Area:
    """One test's source directory (files written under a hidden name, then renamed) and job directory."""

    def __init__(self, base):
        self.base = base
        self.count = 0
        self.sources: dict[str, str] = {}

    def source(self, name: str = "src") -> str:
        path = str(self.base / name)
        os.makedirs(path, exist_ok=True)
        return path

    @property
    def jobs(self) -> str:
        return str(self.base / "jobs")

    def write(self, rows, name: str = "src", fmt: str = "parquet", names=None) -> str:
        directory = self.source(name)
        self.count += 1
        final = os.path.join(directory, f"part-{self.count:04d}.{fmt}")
        hidden = os.path.join(directory, f".part-{self.count:04d}.tmp")
        data = rows if isinstance(rows, pa.Table) else table(rows, names or RECORD_NAMES)
        if fmt == "parquet":
            pq.write_table(data, hidden)
        elif fmt == "json":
            with open(hidden, "w") as f:
                for row in data.to_pylist():
                    f.write(json.dumps({"k": row["k"], "v": row["v"], "ts": row["ts"].isoformat()}) + "\n")
        else:
            with open(hidden, "w") as f:
                f.write("k,v,ts\n")
                for row in data.to_pylist():
                    f.write(f"{row['k']},{row['v']},{row['ts'].isoformat()}\n")
        stamp = 1_700_000_000 + self.count  # discovery order = write order, whatever the clock says
        os.utime(hidden, (stamp, stamp))
        os.replace(hidden, final)
        return final


def operator(kind: str, stream):
    keyed = stream.key_by("k")
    if kind == "reduce":
        return keyed.reduce(functions.add)
    if kind == "aggregate":
        return keyed.aggregate(functions.CountSum())
    if kind == "typed":
        return keyed.aggregate(functions.TypedMean())
    return keyed.process(functions.Sessions())


def record(row, names=RECORD_NAMES):
    """A test row (k, v, seconds[, microseconds]) as the record the functions see."""
    from fw_magics.values.records import make_record

    micros = row[3] if len(row) > 3 else 0
    return make_record(names, (row[0], row[1], BASE + dt.timedelta(seconds=row[2], microseconds=micros)))


def model(kind: str, delay_ms: int, backlog, fresh) -> Model:
    """The reference model after the backlog and every fresh file (each its own micro-batch)."""
    fn = {"reduce": functions.add, "aggregate": functions.CountSum(), "process": functions.Sessions()}[kind]
    m = Model(kind, fn, ["k"], "ts", delay_ms)
    m.backlog([record(r) for f in backlog for r in f])
    for i, f in enumerate(fresh):
        m.fresh(i, [record(r) for r in f])
    return m


def latest_rows(job) -> dict:
    """latest() as {key: row tuple}, timestamps as aware UTC datetimes (as the model has them)."""
    pdf = job.latest()
    out = {}
    for row in pdf.itertuples(index=False):
        values = tuple(_plain(v) for v in row)
        out[(values[0],)] = values
    return out


def _plain(value):
    import pandas as pd

    if isinstance(value, pd.Timestamp):
        stamp = value.to_pydatetime()
        return stamp.replace(tzinfo=dt.timezone.utc) if stamp.tzinfo is None else stamp.astimezone(dt.timezone.utc)
    if hasattr(value, "item"):
        return value.item()
    return value


def expected_latest(m: Model, kind: str) -> dict:
    out = {}
    for key, row in m.latest().items():
        values = tuple(row)
        out[key] = values if kind == "reduce" else key + values
    return out


def model_timers(m: Model) -> set:
    return {(key, row[2]) for key, row in m.fired()}


def fired_timers(job) -> set:
    """(key, timer time) of every timer output in the job's changelog (Sessions emits them)."""
    pdf = job.changelog()
    timers = pdf[pdf["what"] == "timer"]
    return {((int(k),), int(at)) for k, at in zip(timers["k"], timers["at"])}


class HoldBatch:
    """A sink (classic: foreachBatch runs in this process) that holds one micro-batch until released."""

    def __init__(self, batch: int):
        self.batch = batch
        self.reached, self.released = threading.Event(), threading.Event()

    def __call__(self, df, batch_id):
        if batch_id == self.batch:
            self.reached.set()
            assert self.released.wait(300), "the test never released the held micro-batch"
