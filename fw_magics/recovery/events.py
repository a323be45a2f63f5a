"""The job events of FLIP-383, as plain JSON-serialisable dicts, and the schema they are read back with.

Each has a ``type`` and a wall-clock ``time``. Replay reads nothing else from disk: no
pickles, no code. A job directory is untrusted input, so every record read back is checked
against ``SCHEMA``: one entry per event type, mapping each field to the type it accepts
(``Optional(...)`` fields may be missing or null, ``Omittable(...)`` ones missing; fields not listed are ignored, so a newer
writer may add some). ``problem(event)`` says in one phrase what does not fit; the reader
skips such a record with a warning, as it skips a torn one. To add an event type, add its
name below, its constructor and one ``SCHEMA`` entry.
"""

from __future__ import annotations

import math
import re
import time as _time

from .paths import result_file

# -- the event types ----------------------------------------------------------------------------
# Each event's ``type``, named once here: every other module compares an event's type with these
# names, never with a string of its own (tests/recovery/test_event_types.py greps for one).

#: ``execute()``'s job and every job's start: the graph, its fingerprint, the content it depends on.
JOB_SUBMITTED = "job_submitted"
VERTEX_INITIALIZED = "vertex_initialized"
SUBTASK_FINISHED = "subtask_finished"
SUBTASK_RESET = "subtask_reset"
REGION_FAILED = "region_failed"
REGION_RESTARTED = "region_restarted"
JOB_FINISHED = "job_finished"
JOB_FAILED = "job_failed"
JOB_CANCELLED = "job_cancelled"
#: A streaming job's own (``fw_magics.runtime.streaming``).
STREAM_STARTED = "stream_started"
BACKLOG_RECORDED = "backlog_recorded"
PHASE_CHANGED = "phase_changed"
SWITCH = "switch"
MICRO_BATCH = "micro_batch"
FILE_SKIPPED = "file_skipped"
FILE_RELISTED = "file_relisted"
QUERY_RETRIED = "query_retried"

#: A run's last word (``JobLog.end``): one of these ends it.
LAST_WORDS = (JOB_FINISHED, JOB_FAILED, JOB_CANCELLED)

# -- field types ------------------------------------------------------------------------------


class Field:
    """A field's accepted values; ``problem(value)`` is None when ``value`` fits, else why not."""

    what = "a value"

    def problem(self, value) -> str | None:
        raise NotImplementedError


class Text(Field):
    def __init__(self, limit: int = 1 << 20, pattern: str | None = None, what: str | None = None):
        self.limit = limit
        self.pattern = re.compile(pattern) if pattern else None
        self.what = what or f"a string of at most {limit} characters"

    def problem(self, value):
        if not isinstance(value, str) or len(value) > self.limit:
            return self.what
        if self.pattern is not None and not self.pattern.fullmatch(value):
            return self.what
        return None


class Integer(Field):
    def __init__(self, low: int, high: int):
        self.low, self.high = low, high
        self.what = f"an integer {low}..{high}"

    def problem(self, value):
        if isinstance(value, bool) or not isinstance(value, int) or not self.low <= value <= self.high:
            return self.what
        return None


class Number(Field):
    def __init__(self, low: float, high: float):
        self.low, self.high = low, high
        self.what = f"a number {low:g}..{high:g}"

    def problem(self, value):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return self.what
        if not (math.isfinite(value) and self.low <= value <= self.high):
            return self.what
        return None


class Optional(Field):
    """Missing, null, or what ``inner`` accepts."""

    def __init__(self, inner: Field):
        self.inner = inner
        self.what = f"null or {inner.what}"

    def problem(self, value):
        return None if value is None else self.inner.problem(value)


class Omittable(Optional):
    """Missing, or what ``inner`` accepts (not null)."""

    def __init__(self, inner: Field):
        super().__init__(inner)
        self.what = inner.what

    def problem(self, value):
        return self.inner.problem(value)


class ListOf(Field):
    def __init__(self, item: Field, limit: int = 1 << 16):
        self.item, self.limit = item, limit
        self.what = f"a list of at most {limit} items, each {item.what}"

    def problem(self, value):
        if not isinstance(value, list) or len(value) > self.limit:
            return self.what
        for k, item in enumerate(value):
            why = self.item.problem(item)
            if why is not None:
                return f"a list whose item {k} is {why}"
        return None


class MapOf(Field):
    def __init__(self, key: Field, value: Field, limit: int = 1 << 16):
        self.key, self.value, self.limit = key, value, limit
        self.what = f"an object of at most {limit} entries, {key.what} -> {value.what}"

    def problem(self, value):
        if not isinstance(value, dict) or len(value) > self.limit:
            return self.what
        for k, v in value.items():
            if self.key.problem(k) is not None or self.value.problem(v) is not None:
                return f"an object whose entry {k!r:.40} is not {self.key.what} -> {self.value.what}"
        return None


class Record(Field):
    """An object with exactly these required fields (others ignored)."""

    def __init__(self, fields: dict, what: str):
        self.fields, self.what = fields, what

    def problem(self, value):
        if not isinstance(value, dict):
            return self.what
        for name, field in self.fields.items():
            why = field.problem(value.get(name))
            if why is not None:
                return f"{self.what} whose {name!r} is not {why}"
        return None


class Either(Field):
    """A value one of ``fields`` accepts."""

    def __init__(self, *fields: Field):
        self.fields = fields
        self.what = " or ".join(f.what for f in fields)

    def problem(self, value):
        return None if any(f.problem(value) is None for f in self.fields) else self.what


class Scalar(Field):
    """A JSON scalar: null, a bool, a finite number or a string of at most ``limit`` characters."""

    def __init__(self, limit: int = 4096):
        self.limit = limit
        self.what = f"null, a bool, a finite number or a string of at most {limit} characters"

    def problem(self, value):
        if value is None or isinstance(value, bool) or (isinstance(value, int)):
            return None
        if isinstance(value, float):
            return None if math.isfinite(value) else self.what
        if isinstance(value, str) and len(value) <= self.limit:
            return None
        return self.what


#: Subtask indexes and counts; parallelism is bounded where the graph bounds it.
INDEX = Integer(0, 2**31 - 1)
COUNT = Integer(0, 2**63 - 1)
NAME = Text(200)
TEXT = Text(1 << 20)
TIME = Number(0, 253402300799)  # up to the year 9999: anything later is no wall-clock time
SECONDS = Number(0, 1e9)
MILLIS = Integer(-(2**63), 2**63 - 1)  # an event time or watermark in epoch milliseconds
FILE = Record({"path": Text(1024), "size": COUNT, "sha256": Text(128)}, "a file record")
#: The content fingerprint of a job (``fw_magics.datastream.content``): operator -> piece -> digest.
#: A source as a streaming job describes it: its settings, or (two inputs) each input's and their keys.
ONE_SOURCE = MapOf(Text(64), Scalar(), limit=64)
SOURCE = Either(ONE_SOURCE, Record({"kind": Text(16), "inputs": ListOf(ONE_SOURCE, 2),
                                    "keys": ListOf(ListOf(Text(1000), 64), 2)}, "two inputs' sources"))
#: A backlog's size as its source recorded it (files and bytes, rows).
POSITION = MapOf(Text(64), COUNT, limit=64)
CONTENT = MapOf(Text(1000), MapOf(Text(40), Text(200), limit=64), limit=1 << 12)
RATE = Number(0, 1e15)  # rows per second
#: Keys held by each state partition (a job's parallelism is at most 2**16 partitions).
PER_PARTITION = ListOf(COUNT, limit=1 << 16)

#: Every field every event has.
COMMON = {"type": Text(64), "time": Omittable(TIME)}

#: One entry per event type: field -> the values it accepts.
SCHEMA: dict[str, dict[str, Field]] = {
    JOB_SUBMITTED: {"job": NAME, "graph": TEXT, "fingerprint": Text(128), "cell": Optional(TEXT),
                    "content": Optional(CONTENT)},
    VERTEX_INITIALIZED: {"vertex": NAME, "parallelism": Integer(1, 2**31 - 1), "inputs": ListOf(NAME)},
    SUBTASK_FINISHED: {"vertex": NAME, "subtask": INDEX, "attempt": INDEX, "records_in": Optional(COUNT),
                       "records_out": Optional(COUNT), "bytes": Optional(COUNT), "duration": Optional(SECONDS),
                       "files": ListOf(FILE, limit=64)},
    SUBTASK_RESET: {"vertex": NAME, "subtask": INDEX, "reason": TEXT},
    REGION_FAILED: {"region": NAME, "vertices": ListOf(Text(300)), "cause": TEXT, "attempt": INDEX},
    REGION_RESTARTED: {"region": NAME, "vertices": ListOf(Text(300)), "attempt": INDEX},
    JOB_FINISHED: {},
    JOB_FAILED: {"cause": TEXT},
    JOB_CANCELLED: {"cause": TEXT},
    # streaming jobs (fw_magics.runtime.streaming): each start, the recorded backlog, phases, the switch, micro-batches
    STREAM_STARTED: {"mode": Text(16, r"mixed|stream|batch", "mixed, stream or batch"), "run": Integer(1, 2**31 - 1),
                     "source": Optional(SOURCE),
                     "parallelism": Optional(Integer(1, 2**31 - 1))},
    BACKLOG_RECORDED: {"position": MapOf(Text(64), Either(COUNT, ListOf(POSITION, 2)), limit=64)},
    PHASE_CHANGED: {"phase": Text(16, r"backlog|switching|stream|finished|stopped|failed", "a streaming phase"),
                    "watermark": Optional(MILLIS), "cause": Optional(TEXT)},
    SWITCH: {"watermark": Optional(MILLIS), "state_writes": Optional(COUNT), "records": Optional(COUNT),
             "keys": Optional(COUNT), "restored_from": Optional(Text(4096)), "undated": Optional(COUNT),
             "state_rows_per_partition": Optional(PER_PARTITION)},
    # the fields after "undated" came with job.metrics(): a log written before has none of them
    MICRO_BATCH: {"batch": COUNT, "input_rows": COUNT, "state_rows_updated": COUNT, "watermark": Optional(MILLIS),
                  "dropped_by_watermark": Optional(COUNT), "duration_ms": Optional(COUNT),
                  "late": Optional(COUNT), "undated": Optional(COUNT), "started": Optional(MILLIS),
                  "input_rows_per_second": Optional(RATE), "processed_rows_per_second": Optional(RATE),
                  "state_rows": Optional(COUNT), "state_rows_per_partition": Optional(PER_PARTITION),
                  "files_behind": Optional(COUNT), "rows_behind": Optional(COUNT)},
    FILE_SKIPPED: {"file": Text(1024), "reason": TEXT},
    FILE_RELISTED: {"file": Text(1024), "size": COUNT},
    QUERY_RETRIED: {"cause": TEXT, "attempt": Integer(1, 2**31 - 1)},
}

#: The fields each event type must have (the rest are optional).
REQUIRED = {kind: tuple(n for n, f in fields.items() if not isinstance(f, Optional)) for kind, fields in SCHEMA.items()}

# -- the events -----------------------------------------------------------------------------------


def _event(kind: str, **fields) -> dict:
    return {"type": kind, "time": round(_time.time(), 6), **fields}


def job_submitted(job, graph_json, fingerprint, cell=None, content=None):
    """``cell``: the notebook cell that submitted the job, if any (the recovery panel quotes it);
    ``content``: what the results depend on, per operator (``fw_magics.datastream.content``)."""
    extra = {} if cell is None else {"cell": cell}
    if content is not None:
        extra["content"] = content
    return _event(JOB_SUBMITTED, job=job, graph=graph_json, fingerprint=fingerprint, **extra)


def vertex_initialized(vertex, parallelism, inputs):
    return _event(VERTEX_INITIALIZED, vertex=vertex, parallelism=parallelism, inputs=list(inputs))


def subtask_finished(vertex, subtask, attempt, records_in, records_out, bytes, duration, files):
    return _event(SUBTASK_FINISHED, vertex=vertex, subtask=subtask, attempt=attempt, records_in=records_in,
                  records_out=records_out, bytes=bytes, duration=duration, files=list(files))


def subtask_reset(vertex, subtask, reason):
    return _event(SUBTASK_RESET, vertex=vertex, subtask=subtask, reason=reason)


def region_failed(region, vertices, cause, attempt):
    return _event(REGION_FAILED, region=region, vertices=list(vertices), cause=cause, attempt=attempt)


def region_restarted(region, vertices, attempt):
    return _event(REGION_RESTARTED, region=region, vertices=list(vertices), attempt=attempt)


def job_finished():
    return _event(JOB_FINISHED)


def job_failed(cause):
    return _event(JOB_FAILED, cause=cause)


def job_cancelled(cause):
    """The user stopped the run (Kernel > Interrupt, a Stop button): Flink's CANCELED. It resumes."""
    return _event(JOB_CANCELLED, cause=cause)


def stream_started(mode, run, source=None, parallelism=None):
    """A streaming job (re)started in ``mode`` ("mixed", "stream", "batch"); ``run`` counts starts from 1."""
    return _event(STREAM_STARTED, mode=mode, run=run, source=source, parallelism=parallelism)


def backlog_recorded(position):
    """The backlog a streaming job's source recorded at its first start (JSON: files and bytes)."""
    return _event(BACKLOG_RECORDED, position=position)


def phase_changed(phase, **detail):
    """A streaming job entered ``phase`` (backlog, switching, stream, finished, stopped, failed)."""
    return _event(PHASE_CHANGED, phase=phase, **detail)


def switch(watermark, **detail):
    """FLIP-327's switch: the backlog's greatest watermark W (epoch ms, None without event time)."""
    return _event(SWITCH, watermark=watermark, **detail)


def micro_batch(batch, input_rows, state_rows_updated, watermark, **detail):
    """One committed micro-batch of a streaming job's query (``watermark``: epoch ms, None if none)."""
    return _event(MICRO_BATCH, batch=batch, input_rows=input_rows, state_rows_updated=state_rows_updated,
                  watermark=watermark, **detail)


def file_skipped(file, reason):
    """A source file the job does not read (``on_bad_file="skip"``, or gone when it started again)."""
    return _event(FILE_SKIPPED, file=file, reason=reason)


def file_relisted(file, size):
    """A source file that changed since it was listed, listed anew at a restart (read as it is now)."""
    return _event(FILE_RELISTED, file=file, size=size)


def query_retried(cause, attempt):
    """A streaming job's query did not start (Spark's Python worker did not connect back in time) and was started
    again at once, outside the restart strategy: ``attempt`` counts such starts in a row."""
    return _event(QUERY_RETRIED, cause=cause, attempt=attempt)


# -- checking a record read back -------------------------------------------------------------------


def problem(event) -> str | None:
    """Why an event read back cannot be used (one phrase), or None when it fits ``SCHEMA``."""
    if not isinstance(event, dict):
        return f"a JSON {type(event).__name__}, not an event object"
    kind = event.get("type")
    if not isinstance(kind, str) or kind not in SCHEMA:
        return f"unknown event type {kind!r:.60}"
    for name, field in {**COMMON, **SCHEMA[kind]}.items():
        if name not in event:
            if isinstance(field, Optional):
                continue
            return f"{kind} event without {name!r}"
        why = field.problem(event.get(name))
        if why is not None:
            return f"{kind} event whose {name!r} is {event.get(name)!r:.40}, not {why}"
    if kind == SUBTASK_FINISHED:
        own = result_file(event["vertex"], event["subtask"])
        for record in event["files"]:
            if record["path"] != own:
                return (f"subtask_finished event of {event['vertex']}[{event['subtask']}] naming the file "
                        f"{record['path']!r:.80}, not its result file {own!r}")
    return None
