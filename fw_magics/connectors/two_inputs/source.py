"""Two sources read as one: the tagged rows of a two-input operator (``fw_magics.api.co_process``).

``ConnectedSource`` answers what the runtime asks of a source (``connectors.base``) for a pair of
them, a ``Composite`` of their own sources, each in its own folder of the job directory
(``source/input1``, ``source/input2``: its own manifest or table position, fixed at the first
start). Every frame it gives (the backlog, the fresh stream, the stream of mode "stream") is the
union of both inputs' frames, each projected to the tagged row: the key under the first input's
column name(s), ``__fw_input`` (1 or 2), ``__fw_time`` (the input's event time) and each input's
record as a struct.

**Watermarks, FLIP-327's two-input rule for time.** Each input's stream gets its own
``withWatermark(delay)`` before the union, so Spark keeps one watermark per input and the
query's is the smaller (``spark.sql.streaming.multipleWatermarkPolicy=min``, the default), as a
Flink two-input operator's watermark is the minimum of its inputs'. The backlog's W is the same
rule over the backlogs: the smaller of each input's greatest event time less its delay. An
input without records holds the other back (no watermark until it has one), in the backlog as in
the stream: Spark's ``min`` counts a watermark that has seen no row, as Flink does an input's. A mixed job's fresh stream is a new Spark query, whose per-input
watermarks would start from the fresh records alone; each input's is first moved to its greatest
backlog event time by one carrier row (``carrier``, tag 0, dropped before the operator),
so that the modes agree on when timers fire and what is late.

A savepoint keeps each input's position (``{"inputs": [position 1, position 2]}``, each as its source
saves one) and each input's greatest event time read (``tops``); a restore lays each input out in
its folder and carries those times into its stream as a mixed job's backlog does.
"""

from __future__ import annotations

import json
import os

from pyspark.sql import functions as F

from ...errors import FullWindowError
from ...operators.spec import INPUT, SIDES, TIME
from ..base import Composite
from .carrier import carrier


def carried_tops(root: str) -> dict[int, int]:
    """Each input's greatest event time before the job's stream (epoch ms): its backlog's, as the backlog
    recorded it with W, or a restored job's savepoint's; {} without (and for a job of one input)."""
    from ...recovery.filesystem import Storage, UnsafeFile
    from ...recovery.paths import WATERMARK

    storage = Storage(root)
    if not storage.present_inside(WATERMARK):
        return {}
    try:
        with storage.open_inside(WATERMARK, 4096) as f:
            tops = json.loads(f.read()).get("tops")
    except (UnsafeFile, ValueError, UnicodeDecodeError, AttributeError):
        tops = None  # Backlog.watermark() reads it back checked: a damaged one fails the job there
    if not isinstance(tops, dict):
        return {}
    return {int(k): v for k, v in tops.items() if k in ("1", "2") and type(v) is int}


def _quoted(name: str):
    return F.col("`" + name.replace("`", "``") + "`")


class _Positions:
    """Both inputs' recorded positions (manifests or table positions): a restart reads both back checked."""

    def __init__(self, positions):
        self._positions = positions

    def exists(self) -> bool:
        return any(p.exists() for p in self._positions)

    def read(self) -> list:
        return [p.read() for p in self._positions if p.exists()]


class ConnectedSource(Composite):
    """Two sources with a backlog as one source of tagged rows (see the module docstring)."""

    kind = "connected"
    PARTS_IN_WORDS = "two inputs' ('inputs')"

    def __init__(self, detail: dict, schema, inputs: list):
        self.schema = schema
        self.inputs = inputs  # each input's source (``registry.source_for``)
        self.keys = [list(k) for _, _, k in detail[self.PARTS]]
        self.key_names = self.keys[0]
        self.event_time = detail["event_time"]
        self.delay_ms = None  # its frames carry their watermarks: each input's, applied before the union
        self.delays = {i + 1: s.delay_ms for i, s in enumerate(self.inputs)}
        self.on_late = "fail" if any(s.on_late == "fail" for s in self.inputs) else "drop"
        self.broadcast = bool(detail.get("broadcast"))  # input 2 is broadcast: each row to every state partition

    @staticmethod
    def input_root(root: str, index: int) -> str:
        return os.path.join(root, "source", f"input{index + 1}")

    def _each(self, root: str):
        return [(i, s, self.input_root(root, i)) for i, s in enumerate(self.inputs)]

    @classmethod
    def detail_of(cls, inputs: list[tuple], event_time: str | None, labels: list[str], input_names: list[str],
                  schema, broadcast: bool = False) -> dict:
        """The detail of a two-input step: ``inputs``, each input's (step detail, schema, key columns)."""
        detail = {"source": cls.kind, "streaming": True, "event_time": event_time, "label": "+".join(labels),
                  "input_names": input_names, "schema": schema, cls.PARTS: inputs}
        if broadcast:  # the second input's rows go to every subtask (partition_probes)
            detail["broadcast"] = True
        return detail

    def describe(self) -> dict:
        return {"kind": self.kind, self.PARTS: [s.describe() for s in self.inputs], "keys": self.keys}

    def manifest(self, root: str) -> _Positions:
        return _Positions([s.manifest(r) for _, s, r in self._each(root)])

    def record(self, root: str, backlog: bool) -> tuple[dict, list[dict]]:
        summaries, skipped = [], []
        for _, source, sub in self._each(root):
            summary, bad = source.record(sub, backlog)
            summaries.append(summary)
            skipped += bad
        total = {k: sum(s.get(k, 0) for s in summaries) for k in ("files", "rows", "bytes")
                 if any(k in s for s in summaries)}
        return {**total, "inputs": summaries}, skipped

    def relist(self, root: str) -> list[dict]:
        return [entry for _, source, sub in self._each(root) for entry in source.relist(sub)]

    # -- its position in a savepoint: each input's, in its folder ------------------------------------

    def inputs_at(self, root: str, position: dict | None = None) -> list[tuple]:
        """Each input as (its source, its folder in the job's, its part of ``position``)."""
        return [(s, sub, None if position is None else position[self.PARTS][i]) for i, s, sub in self._each(root)]

    # -- frames: each input's, tagged, then the union ------------------------------------------------

    def _tagged(self, index: int, frame, watermark: bool, carried: int | None = None,
                parallelism: int | None = None):
        """Input ``index``'s frame as tagged rows; with ``watermark``, under its own watermark, which
        ``carried`` (the input's greatest backlog event time, a carrier row) moves first. A broadcast
        input's rows are copied once per state partition, keyed by a value Spark hashes there."""
        source = self.inputs[index]
        record = F.struct(*[_quoted(n) for n in source.schema.names])
        keys = [_quoted(k) for k in self.keys[index]]
        if self.broadcast and index == 1:
            probes = partition_probes(frame.sparkSession, self.schema.fields[:len(self.key_names)], parallelism)
            frame = frame.crossJoin(F.broadcast(probes))
            keys = [_quoted(PROBE + k) for k in self.key_names]
        tagged = frame.select(*self._row(keys, index + 1, _quoted(source.event_time) if self.event_time else None,
                                         {index: record}))
        if carried is not None:
            tagged = tagged.union(carrier(frame.sparkSession, carried).select(
                *self._row([None] * len(self.key_names), 0, F.col("t"), {})))
        if watermark and self.event_time is not None:
            tagged = tagged.withWatermark(TIME, f"{source.delay_ms} milliseconds")
        return tagged

    def _row(self, keys: list, tag: int, time, records: dict) -> list:
        """The tagged row's columns: ``keys`` (None: null), ``tag``, ``time``, each input's record (else null)."""
        key_types = [f.dataType for f in self.schema.fields[:len(self.key_names)]]
        columns = [(F.lit(None).cast(t) if k is None else k).alias(n) for k, t, n in zip(keys, key_types, self.key_names)]
        columns.append(F.lit(tag).alias(INPUT))
        if self.event_time is not None:
            columns.append(time.alias(TIME))
        columns += [records.get(i, F.lit(None).cast(s.schema)).alias(side)
                    for i, (s, side) in enumerate(zip(self.inputs, SIDES))]
        return columns

    def _union(self, frames, watermark: bool, carried: dict | None = None, parallelism: int | None = None):
        first, second = (self._tagged(i, f, watermark, (carried or {}).get(i + 1), parallelism)
                         for i, f in enumerate(frames))
        return first.union(second)

    def backlog_frame(self, spark, root: str):
        return self._union([s.backlog_frame(spark, r) for _, s, r in self._each(root)], watermark=False)

    def fresh_stream(self, spark, root: str, max_files: int | None, parallelism: int | None = None,
                     hold: str | None = None):
        """The fresh records of both inputs, each input's watermark carried from its backlog (carrier_source)."""
        return self._union([s.fresh_stream(spark, r, max_files, parallelism, hold) for _, s, r in self._each(root)],
                           watermark=True, carried=carried_tops(root), parallelism=parallelism)

    def stream(self, spark, root: str, max_files: int | None, parallelism: int | None = None):
        return self._union([s.stream(spark, r, max_files) for _, s, r in self._each(root)], watermark=True,
                           parallelism=parallelism)


#: The prefix of a probe frame's key columns (``partition_probes``), apart from any input's own.
PROBE = "__fw_probe_"
#: How many candidate values per state partition ``partition_probes`` tries.
CANDIDATES = 64


def partition_probes(spark, key_fields, parallelism: int | None):
    """One row per state partition of ``parallelism``: key values (columns ``PROBE + name``) that Spark's hash
    partitioning (``pmod(hash(keys), n)``, the state exchange's) puts in that partition, cast from the smallest
    integers that land there. A broadcast row joined with it reaches every partition once."""
    if parallelism is None:
        raise FullWindowError("a broadcast input needs the job's parallelism to reach every state partition")
    ids = spark.range(0, CANDIDATES * parallelism)
    cast = ids.select(F.col("id"), *[F.col("id").cast(f.dataType).alias(PROBE + f.name) for f in key_fields])
    hashed = ", ".join("`" + (PROBE + f.name).replace("`", "``") + "`" for f in key_fields)
    chosen = [row["id"] for row in cast.groupBy(F.expr(f"pmod(hash({hashed}), {parallelism})"))
              .agg(F.min("id").alias("id")).collect()]
    if len(chosen) != parallelism:
        types = ", ".join(f.dataType.simpleString() for f in key_fields)
        raise FullWindowError(f"a broadcast input cannot reach every one of the {parallelism} state partitions "
                              f"with keys of type {types}; accepted: integer, decimal, floating-point or string keys")
    return cast.where(F.col("id").isin(chosen)).drop("id")
