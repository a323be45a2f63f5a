"""A savepoint written from tables (Flink's State Processor API, writing): ``fw.write_savepoint(stream, path, ...)``.

``keyed_state`` is a DataFrame shaped as ``reader.keyed_state()`` returns for ``stream`` (the keyed stream
``.start()`` is called on): its key columns, then one typed column per declared state (a reduce's or an
aggregate's running value as its columns). ``operator_state={name: df}``: each operator's operator state as
``reader.operator_state(name)`` returns it, replacing that operator's (``operator_tables``, checked and
converted before anything else is written); a non-keyed ``process(fn)`` is written from it alone
(``keyed_state=None``: its savepoint's keyed-state file is empty, as ``job.savepoint()`` writes it).
Checked on the driver before anything is written, each refusal one line: the stream keyed (or a
``process(fn)`` without ``keyed_state``), the path new, the parallelism, the columns and their types (what
``keyed_state()`` would have, found by asking the reader for the schema of an empty frame), then in one Spark
aggregation (``precheck``) no key twice, no null in a key column the stream's schema says is never null, a JSON
state's text JSON, a date or time within what a state holds. Then Spark tasks, one per state partition (Spark's
hash of the key at ``parallelism``, as the job's state is partitioned), turn each row into the per-key core's
JSON with the codecs the runtime stores it with, and one task writes the keyed-state file a savepoint holds; no
key passes through the driver. A task that still fails leaves no ``.tmp-`` folder behind (``files``).

With ``from_savepoint`` (a path or a reader of one, taken of this stream), what the tables do not replace
is kept from it: each input's position and splits, the other operators' state, the watermark, the batch,
and each written key's pending timers (a key the table drops loses its timers with its state). Without it
the inputs are at their beginning (``positions="beginning"``: every file or row present is read by the
restored stream) or read (``positions="now"``: every file present now, a table's rows through its greatest
``order_by`` now, count as read; a table's changes: a replication slot made at the write, which the savepoint
keeps as a job's savepoint keeps its copy, so its restore reads only the changes committed after the write), W
is unset; only a source that can say so (``Source.position_at``: a folder, a PostgreSQL table or its changes, each
input of two) is accepted. What ``position_at`` made on a server is dropped when anything after it fails
(``Source.discarding``: a refused frame, a failed task), so a savepoint not written leaves no slot behind. The
operator state ``operator_state`` leaves out is empty, as Flink's State Processor API leaves an operator it
writes nothing for (a broadcast input's state too: with "beginning" its records are read again and fill it).
The savepoint has no base files and no output rows (a restored job's latest results start empty); the files and
``savepoint.json`` are those ``job.savepoint()`` writes, loaded and checked by a restore as any other.
"""

from __future__ import annotations

import functools
import json
import os

import pyarrow as pa
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ....api.state import StateKind
from ....connectors.registry import source_change, source_of
from ....datastream.physical.arrow_calls import map_in_arrow
from ....errors import FullWindowError
from ....graph import JobGraph
from ....operators.spec import StateType, codec_for
from ....state import operator_state_document
from ....values.schema import arrow_schema
from ..driver.plan import check_parallelism
from ..keyed.changelog import STATE, changelog_schema
from . import declared as states_field
from . import graph_at
from .files import Savepoint, SavepointError, load_savepoint
from .files import write_savepoint as write_files
from .operator_tables import operator_snapshots
from .precheck import precheck
from .reader import SavepointReader

POSITIONS = ("beginning", "now")
_TIMERS = "__fw_timers"
#: Fields of a savepoint's document that describe its files, not its job: written anew.
_FILE_FIELDS = ("format", "version", "files", "keyed_schema", "base", "base_partitions")


def write_savepoint(stream, path, keyed_state=None, parallelism=None, from_savepoint=None, positions=None,
                    operator_state=None) -> str:
    """Write a savepoint of ``stream`` at the new ``path`` from ``keyed_state`` and ``operator_state``; returns its
    path (see the module)."""
    spec = getattr(stream, "spec", None)
    keyed = getattr(getattr(spec, "kind", None), "keyed", None)
    if keyed is None:
        raise FullWindowError(f"write_savepoint's stream is {type(stream).__name__}; accepted: a keyed stream (the "
                              "object .start() is called on: key_by(...).process(fn), .reduce(fn), .aggregate(fn)) or "
                              "a stream's process(fn)")
    if keyed and keyed_state is None:
        raise FullWindowError(f"write_savepoint of {spec.label} without keyed_state; accepted: a DataFrame as "
                              "reader.keyed_state() returns (fw.read_savepoint(p).keyed_state() keeps every key)")
    if not keyed and keyed_state is not None:
        raise FullWindowError(f"write_savepoint's keyed_state: {spec.label} is not keyed, it keeps no keyed state; "
                              "accepted: keyed_state=None, its state as operator_state={name: DataFrame}")
    target = _new_path(path)
    parallelism = check_parallelism(parallelism)
    base = _existing(from_savepoint)
    if base is not None and positions is not None:
        raise FullWindowError(f"write_savepoint(positions={positions!r:.30}) with from_savepoint: the positions are "
                              "the savepoint's; accepted: one of the two")
    if base is None and positions not in (None, *POSITIONS):
        raise FullWindowError(f"write_savepoint(positions={positions!r:.30}); accepted: 'beginning' (the default) or "
                              "'now'")
    declared = spec.kind.declared_states(spec) if keyed else None
    if keyed and declared is None:
        raise FullWindowError(f"{spec.label} declares no keyed state to write")
    parallelism = parallelism or (base.parallelism if base is not None else stream.parallelism)
    graph, source = graph_at(stream.job_graph(), parallelism), source_of(stream)
    if base is not None:
        _check_same_job(base, stream, graph, source)
    replaced = operator_snapshots(stream, operator_state, parallelism, base)
    # asked before the keyed state's Spark jobs: a source that cannot say, or a server down, is one line before them;
    # what it made on a server (a table's changes' slot at "now") is dropped if anything after fails
    position = source.position_at(positions == "now") if base is None else None
    with source.discarding(position):
        if keyed:
            typed = {name: (kind, StateType(ddl=None) if t is None else t) for name, (kind, t) in declared.items()}
            frame = _checked_frame(keyed_state, stream.spark, spec, typed, _required_keys(stream))
            states = _encoded(frame, spec, typed, base, parallelism, stream.spark)
        document, operators, manifest = _document(stream, spec, graph, source, base, position, parallelism, replaced)
        if not keyed:
            return write_files(os.path.dirname(target), document, operators, manifest, pa.table({}), final=target)
        document[states_field.FIELD] = states_field.record(declared)
        from ..keyed.state_files import write_parquet

        return write_files(os.path.dirname(target), document, operators, manifest,
                           functools.partial(write_parquet, states), _empty_latest(stream), (), final=target)


def _required_keys(stream) -> tuple:
    """The key columns the stream's input schema says are never null (a table's primary key, say)."""
    schema = getattr(getattr(stream, "source", None), "schema", None)
    fields = {f.name: f for f in schema.fields} if schema is not None else {}
    return tuple(k for k in stream.spec.key_names if k in fields and fields[k].nullable is False)


def _new_path(path) -> str:
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise FullWindowError(f"write_savepoint's path {path!r:.80}; accepted: a folder path that does not exist yet")
    target = os.path.abspath(os.fspath(path))
    if os.path.lexists(target):
        raise FullWindowError(f"write_savepoint's path {target} exists; accepted: a path that does not (a savepoint "
                              "is never written over)")
    return target


def _existing(from_savepoint) -> Savepoint | None:
    if from_savepoint is None:
        return None
    if isinstance(from_savepoint, SavepointReader):
        if from_savepoint.path is None:
            raise FullWindowError("write_savepoint's from_savepoint is a running job's state(); accepted: a "
                                  "savepoint's path or fw.read_savepoint(path)")
        from_savepoint = from_savepoint.path
    return load_savepoint(from_savepoint)


def _check_same_job(base: Savepoint, stream, graph, source) -> None:
    """One line when ``base`` was taken of another job than ``stream``'s (graph, source, key)."""
    where = f"from_savepoint {base.path}"
    changes = graph_at(JobGraph.from_json(base.document["graph"]), graph.operators[0].parallelism).diff(graph)
    if changes:
        raise SavepointError(f"{where} was taken of a different graph ({'; '.join(changes)})")
    change = source_change(base.document["source"], source.describe())
    if change is not None:
        raise SavepointError(f"{where} was taken of another source: {change}")
    if list(base.document["key_names"]) != list(stream.spec.key_names):
        raise SavepointError(f"{where} is keyed by {base.document['key_names']!r:.100}, the stream by "
                             f"{list(stream.spec.key_names)}")


def _layout(spark, spec, typed: dict):
    """(what ``keyed_state()`` returns for this stream: its schema, the schema before a running value is
    flattened into its columns): asked of a reader over an empty frame, so the two never disagree."""
    keys = [T.StructField(n, t) for n, t in zip(spec.key_names, spec.key.spark_types)]
    empty = spark.createDataFrame([], T.StructType(keys + [T.StructField(STATE, T.StringType())]))
    reader = SavepointReader({"kind": spec.kind.name, "key_names": list(spec.key_names), "job": spec.label}, {}, {},
                             typed, lambda: empty, "", [], spark)
    return reader.keyed_state().schema


def _checked_frame(frame, spark, spec, typed: dict, required: tuple = ()):
    """``frame`` as the typed layout (keys, one column per state), after one line for a column that is not
    what ``keyed_state()`` has, or a row ``_precheck`` refuses."""
    from pyspark.sql import DataFrame

    want = _layout(spark, spec, typed)
    expected = ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in want.fields)
    if not isinstance(frame, DataFrame) and type(frame).__name__ != "DataFrame":
        raise FullWindowError(f"write_savepoint's keyed_state is {type(frame).__name__}; accepted: a Spark DataFrame "
                              f"of {expected} (as reader.keyed_state() returns)")
    got = {f.name: f.dataType for f in frame.schema.fields}
    wanted = {f.name: f.dataType for f in want.fields}
    extra, missing = [n for n in got if n not in wanted], [n for n in wanted if n not in got]
    wrong = [n for n in wanted if n in got and got[n].simpleString() != wanted[n].simpleString()]  # nulls aside
    if extra or missing or wrong:
        named = ", ".join([f"column {n!r} is not a state of {spec.label}" for n in extra[:3]]
                          + [f"column {n!r} is missing" for n in missing[:3]]
                          + [f"column {n!r} is {got[n].simpleString()}" for n in wrong[:3]])
        raise FullWindowError(f"write_savepoint's keyed_state: {named}; accepted: {expected} (as reader.keyed_state() "
                              "returns)")
    keys = list(spec.key_names)
    precheck(frame, keys, [n for n, (_, t) in sorted(typed.items()) if t.ddl is None and n in got],
             [f.name for f in want.fields if f.name not in keys], required)
    frame = frame.select(*[F.col(f"`{f.name}`") for f in want.fields])
    columns = [name for name in sorted(typed)]
    if set(columns) <= set(frame.columns):
        return frame.select(*[F.col(f"`{k}`") for k in keys], *[F.col(f"`{c}`") for c in columns])
    (name,) = columns  # a running value flattened into its fields (a reduce's key fields are the key's)
    _, state_type = typed[name]
    return frame.select(*[F.col(f"`{k}`") for k in keys],
                        F.struct(*[F.col(f"`{n}`") for n in state_type.names]).alias(name))


def _encoded(frame, spec, typed: dict, base: Savepoint | None, parallelism: int, spark):
    """The key columns and ``__fw_state``, each row's JSON made by Spark tasks partitioned by the key's hash at
    ``parallelism``; a key's pending timers kept from ``base``; a key left with no state has no row."""
    keys = list(spec.key_names)
    if base is not None:
        old = spark.read.parquet(base.keyed_path) if not base.base else SavepointReader(
            base.document, {}, base.manifest, typed, lambda: spark.read.parquet(base.keyed_path), base.path,
            [p for p, _ in base.base], spark, base.path).states()
        timers = old.select(*[F.col(f"`{k}`").alias(f"__fw_k{i}") for i, k in enumerate(keys)],
                            F.from_json(F.col(STATE), "struct<t:array<bigint>>").getField("t").alias(_TIMERS))
        on = functools.reduce(lambda a, b: a & b, [frame[f"`{k}`"].eqNullSafe(timers[f"__fw_k{i}"])
                                                   for i, k in enumerate(keys)])
        frame = frame.join(timers, on, "left").drop(*[f"__fw_k{i}" for i in range(len(keys))])
    else:
        frame = frame.withColumn(_TIMERS, F.lit(None).cast("array<bigint>"))
    frame = frame.repartition(parallelism, *[F.col(f"`{k}`") for k in keys])
    key_fields = [f for f in frame.schema.fields if f.name in keys]
    out = T.StructType(key_fields + [T.StructField(STATE, T.StringType())])
    columns = [(name, kind, t) for name, (kind, t) in sorted(typed.items())]
    task = functools.partial(_state_batches, keys, columns, arrow_schema(out), spec.label)
    return map_in_arrow(frame, task, out).where(F.col(STATE).isNotNull())


def _document(stream, spec, graph, source, base: Savepoint | None, position: dict | None, parallelism: int,
              replaced: dict) -> tuple:
    """(savepoint.json's job fields, the operator-state document: ``replaced`` over what is kept, the source's
    position: ``base``'s, or without it ``position``)."""
    if base is not None:
        document = {k: v for k, v in base.document.items() if k not in _FILE_FIELDS}
        document.update(parallelism=parallelism, graph=graph.to_json(), kind=spec.kind.name,
                        key_names=list(spec.key_names))
        return document, operator_state_document({**base.operator_state, **replaced}), base.manifest
    names = graph.source_names()
    held = {name: one.position_snapshots(own, parallelism)
            for name, (one, _, own) in zip(names, source.inputs_at("", position), strict=True)}
    if not spec.kind.keyed:  # a restore of the operator needs its snapshots: restored empty unless replaced
        held[stream.step.name] = [{} for _ in range(parallelism)]
    from ..driver.start import default_name  # the job's name as start() gives it

    document = {"job": default_name(stream), "batch": 0, "parallelism": parallelism, "graph": graph.to_json(),
                "source": source.describe(), "watermark": None, "top": None, "key_names": list(spec.key_names),
                "kind": spec.kind.name, **source.position_fields(position)}
    return document, operator_state_document({**held, **replaced}), position


def _empty_latest(stream):
    schema = arrow_schema(changelog_schema(stream.schema))
    return pa.Table.from_batches([], schema=schema)


# -- inside the tasks ---------------------------------------------------------------------------------


def _state_batches(key_names: list, columns: list, schema, label: str, batches):
    """Each batch of (keys, typed state columns, timers) as the keys and ``__fw_state`` (the per-key core's JSON;
    null for a key with no state and no timer)."""
    import pyarrow as pa

    codecs = [(name, kind is StateKind.LIST, codec_for(t, f"{label}'s {kind} state {name!r}"))
              for name, kind, t in columns]
    for batch in batches:
        table = pa.Table.from_batches([batch])
        texts = []
        lists_of = {name: table.column(name).to_pylist() for name, *_ in codecs}
        timers = table.column(_TIMERS).to_pylist()
        for row in range(batch.num_rows):
            doc = {}
            for name, listed, codec in codecs:
                value = lists_of[name][row]
                if not codec.typed and value is not None:
                    value = [json.loads(v) for v in value] if listed else json.loads(value)
                if listed and value:
                    doc.setdefault("l", {})[name] = codec.encode_all(value)
                elif not listed and value is not None:
                    doc.setdefault("v", {})[name] = codec.encode(value)
            if timers[row]:
                doc["t"] = sorted(timers[row])
            texts.append(json.dumps(doc, separators=(",", ":"), allow_nan=False) if doc else None)
        arrays = [batch.column(batch.schema.get_field_index(k)) for k in key_names]
        yield pa.RecordBatch.from_arrays(arrays + [pa.array(texts, pa.string())], schema=schema)
