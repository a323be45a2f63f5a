"""Running keyed operators on a stream: Flink's keyed reduce, aggregate and process functions.

``key_by(...).reduce(fn)``, ``.aggregate(agg)`` and ``.process(fn)`` (no full window) give a
:class:`StatefulStream`: the operator is checked and described here, before anything runs
(its state types parsed, its output schema known), and ``start()`` runs it as a job of
``fw_magics.runtime.streaming`` (a documented late import: the runtime sits above this layer), in
mixed, stream or batch mode. Its output is a changelog per key: a reduce emits the reduced record, an
aggregate and a process function emit the key column(s) followed by their result columns.
"""

from __future__ import annotations

import copy

from pyspark.sql import types as T

from ..api.function import check_function
from ..api.functions import AggregateFunction, as_aggregate_function
from ..api.keyed_process import KeyedProcessFunction
from ..errors import FullWindowError
from ..operators import AGGREGATE, MIRROR, PROCESS, REDUCE
from ..operators.spec import DescriptorProbe, KeyedOperatorSpec, StateType, is_field_list
from ..values.changes import CHANGE_COLUMNS
from ..values.schema import arrow_schema, nullable, parse_schema
from .arguments import check_callable, function_name, result_schema
from .lineage import Step


def struct_state_type(struct: T.StructType, ddl: str) -> StateType:
    """A record type from a Spark schema (every field nullable: Python code may give None)."""
    struct = nullable(struct)
    return StateType(ddl=ddl, arrow_schema=arrow_schema(struct), spark_types=tuple(f.dataType for f in struct.fields),
                     record=True)


def parse_state_type(spark, ddl: str, name: str, what: str) -> StateType:
    """A declared state type: a DDL field list ("total double, n long") or one type ("long")."""
    if is_field_list(ddl):
        return struct_state_type(parse_schema(ddl, spark, what=what), ddl)
    quoted = "`" + name.replace("`", "``") + "`"
    struct = nullable(parse_schema(f"{quoted} {ddl}", spark, what=what))
    return StateType(ddl=ddl, arrow_schema=arrow_schema(struct), spark_types=(struct.fields[0].dataType,),
                     record=False)


class StatefulStream:
    """A running keyed operator over a stream; ``start()`` runs it, ``job_graph()`` draws it.

    ``schema``: the changelog's columns (``latest()`` of the running job has one row per key
    with them). Nothing runs on Spark until ``start()``.
    """

    def __init__(self, keyed, spec: KeyedOperatorSpec, schema: T.StructType):
        self.keyed = keyed
        self.spec = spec
        self.schema = schema
        source = keyed.stream.step
        self.step = Step(
            name=spec.kind.step_name(spec), kind=spec.kind.graph_kind, parallelism=keyed.parallelism, parent=source,
            keyed_by=tuple(keyed.names),
            # what a job's content fingerprint covers (streams.content): its function's code and closure
            detail={"schema": schema, "streaming": True, "identity": {"function": spec.function}},
        )

    @property
    def source(self):
        """The DataStream it reads (a ``fw.from_files`` stream for start())."""
        return self.keyed.stream

    @property
    def name(self) -> str:
        return self.step.name

    @property
    def spark(self):
        return self.keyed.stream.spark

    @property
    def parallelism(self) -> int:
        return self.keyed.parallelism

    @property
    def key_names(self) -> tuple[str, ...]:
        return tuple(self.keyed.names)

    @property
    def columns(self) -> list[str]:
        return list(self.schema.names)

    def job_graph(self):
        """The streaming job graph: source -> keyed operator (all-to-all) -> changelog sink."""
        from .job_graph import build_streaming_graph

        return build_streaming_graph(self)

    def start(self, job_dir=None, job_name=None, mode="mixed", sink=None, trigger=None, max_files_per_trigger=None,
              from_savepoint=None, parallelism=None, reset=False, restart=None, resume="auto",
              allow_non_restored_state=False):
        """Run as a streaming job in ``job_dir/job_name`` (default ``.fw-jobs/<name>``); see fw_magics.runtime.streaming.

        ``mode``: "mixed" (the backlog as a batch job, then the stream), "stream" (Spark's
        file stream from the first file) or "batch" (the backlog only). ``sink``: a Parquet
        table directory or ``fn(df, batch_id)``, besides the job's own changelog. ``trigger``:
        a processing-time interval ("1 second") or "available_now" (process what is there,
        then stop). Starting again with the same job directory and name continues the job, if
        it is still the same job: a changed function, key, schema, source or mode is refused in
        one line; ``reset=True`` discards what the job recorded (not its savepoints) and starts
        afresh. ``from_savepoint``: a path ``job.savepoint()`` returned: a new job (new job
        name) starts from its state and source positions, at ``parallelism`` (1 to 1024;
        default the savepoint's), in mode "mixed" or "stream" (a savepoint of either; the
        same run: what it had read is not read again); the function may have changed since: its states are
        matched by name, a new one starts empty, a widened type (int -> long, float -> double, a struct with
        more fields) is carried, another change is refused in one line (``fw.check_savepoint(path, stream)``
        shows the verdict), and so is a state it no longer declares unless ``allow_non_restored_state=True``
        drops it (Flink's flag). ``restart``: what a failure does, as in ``execute()`` (default
        ``FixedDelayRestart()``: one restart after 1 s, the backlog's committed subtasks and the
        query's checkpoint kept). ``resume``: as in ``execute()``, "auto" (continue the job, or start it),
        "never" (start afresh: what ``reset=True`` asks) or "require" (refuse when nothing was recorded).
        See docs/streaming.md and docs/state.md.
        """
        from ..runtime.streaming.driver.start import start  # the runtime, above: a documented late import

        return start(self, job_dir=job_dir, job_name=job_name, mode=mode, sink=sink,
                     trigger=trigger, max_files_per_trigger=max_files_per_trigger,
                     from_savepoint=from_savepoint, parallelism=parallelism, reset=reset,
                     restart=restart, resume=resume, allow_non_restored_state=allow_non_restored_state)

    def __repr__(self) -> str:
        fields = ", ".join(f"{f.name}: {f.dataType.simpleString()}" for f in self.schema.fields)
        return (f"StatefulStream {self.name!r} keyed by {', '.join(self.key_names)} over "
                f"{self.source.name!r} [{fields}]; .start() runs it")


# -- building the three operators -------------------------------------------------------------------


def key_type(keyed) -> StateType:
    if keyed.selector is not None:
        raise FullWindowError(
            "a running keyed operator needs key columns, not a key-selector function: key_by('column', ...) "
            "(add the key as a column to the data first)"
        )
    schema = keyed.stream.schema
    nested = [n for n, c in zip(keyed.names, keyed.columns) if n not in schema.names]
    if nested:
        raise FullWindowError(
            f"a running keyed operator takes top-level key columns; {nested[0]!r} is a nested field "
            f"(top-level columns: {', '.join(schema.names)})"
        )
    return struct_state_type(T.StructType(keyed.key_fields), "key")


def _event_time(keyed) -> str | None:
    return keyed.stream.step.lineage()[0].detail.get("event_time")


def _sequence(keyed) -> tuple:
    """The columns its source orders records by (a table's changes: their commit order), or ()."""
    return tuple(keyed.stream.step.lineage()[0].detail.get("sequence", ()))


def _record_type(keyed) -> StateType:
    return struct_state_type(keyed.stream.schema, "record")


def _output(key: StateType, keyed, result: T.StructType, what: str) -> T.StructType:
    clash = [n for n in result.names if n in key.names]
    if clash:
        raise FullWindowError(
            f"{what} has a result column {clash[0]!r}, which is also a key column; the key column(s) come "
            f"first in every output on their own: rename the result column"
        )
    return nullable(T.StructType(list(keyed.key_fields) + list(result.fields)))


def reduce(keyed, fn) -> StatefulStream:
    check_callable(fn, "reduce")
    key = key_type(keyed)
    spec = REDUCE.spec(function=fn, label=function_name(fn), record=_record_type(keyed), key=key,
                       event_time=_event_time(keyed), sequence=_sequence(keyed))
    return StatefulStream(keyed, spec, nullable(keyed.stream.schema))


def aggregate(keyed, agg, schema=None) -> StatefulStream:
    from pyspark.sql import Column

    if isinstance(agg, Column) or (isinstance(agg, (list, tuple)) and agg and isinstance(agg[0], Column)):
        raise FullWindowError(
            "a running aggregate takes an fw.AggregateFunction; Spark aggregate Columns (F.sum(...)) aggregate "
            "a bounded window: key_by(...).full_window_partition().aggregate(...)"
        )
    agg = as_aggregate_function(agg)
    name = type(agg).__name__
    if type(agg).add is AggregateFunction.add:
        raise FullWindowError(f"{name} must define add(value, accumulator) for a running aggregate (add_batch "
                              "alone serves full windows)")
    spark = keyed.stream.spark
    key = key_type(keyed)
    result = nullable(result_schema(agg, schema, spark))
    out = _output(key, keyed, result, name)
    accumulator = None
    if agg.accumulator_schema is not None:
        if not isinstance(agg.accumulator_schema, str):
            raise FullWindowError(f"{name}.accumulator_schema must be a DDL string or None; "
                                  f"got {agg.accumulator_schema!r:.60}")
        accumulator = parse_state_type(spark, agg.accumulator_schema, "accumulator",
                                       f"{name}.accumulator_schema")
    spec = AGGREGATE.spec(function=agg, label=name, record=_record_type(keyed), key=key, event_time=_event_time(keyed),
                          result=struct_state_type(result, "result"), accumulator=accumulator,
                          sequence=_sequence(keyed))
    return StatefulStream(keyed, spec, out)


def process(keyed, fn, schema=None) -> StatefulStream:
    fn, name = check_function(fn, KeyedProcessFunction, "process takes an fw.KeyedProcessFunction "
                              "(process_element(record, ctx), on_timer(ts, ctx))")
    result, out, states = function_parts(keyed, fn, name, schema)
    spec = PROCESS.spec(function=fn, label=name, record=_record_type(keyed), key=key_type(keyed),
                        event_time=_event_time(keyed), result=result, states=states, sequence=_sequence(keyed))
    return StatefulStream(keyed, spec, out)


def mirror(keyed) -> StatefulStream:
    """A table's mirror over its change records (``values.changes``): one row per key, the row as it is now."""
    schema = keyed.stream.schema
    missing = [c for c in CHANGE_COLUMNS if c not in schema.names]
    if missing:
        raise FullWindowError(
            f"mirror() keeps a table's rows from its changes: it reads change records, with the columns "
            f"{', '.join(CHANGE_COLUMNS)} (fw.from_table(url, table, schema, changes=True)); "
            f"{keyed.stream.name!r} has no {missing[0]!r}")
    key = key_type(keyed)
    row = T.StructType([f for f in schema.fields if f.name not in CHANGE_COLUMNS])
    changes = [n for n in key.names if n in CHANGE_COLUMNS]
    if changes:
        raise FullWindowError(f"mirror() is keyed by the table's primary key; {changes[0]!r} is a change record's "
                              f"own column (columns of the row: {', '.join(row.names)})")
    spec = MIRROR.spec(function=None, label="mirror", record=_record_type(keyed), key=key,
                       event_time=_event_time(keyed), result=struct_state_type(row, "row"), sequence=_sequence(keyed))
    return StatefulStream(keyed, spec, nullable(row))


def function_parts(keyed, fn, name: str, schema, learn_states: bool = True) -> tuple:
    """A (co-)process function's result type, output schema (the key, then the result) and declared
    states (name -> (kind, StateType), from its ``open()``; {} without ``learn_states``)."""
    spark = keyed.stream.spark
    declared = schema if schema is not None else getattr(fn, "schema", None)
    if declared is None:
        raise FullWindowError(
            f"{name} emits rows of an unknown schema: set {name}.schema = '...' (a DDL string of the output "
            "columns after the key) or pass schema='...' to process"
        )
    result = nullable(parse_schema(declared, spark, what=f"{name}.schema"))
    out = _output(key_type(keyed), keyed, result, name)
    states = {}
    for state, (kind, ddl) in (_declared_states(fn).items() if learn_states else ()):
        label = f"{kind} state {state!r} of {name}"
        states[state] = (kind, StateType(ddl=None) if ddl is None else parse_state_type(spark, ddl, state, label))
    return struct_state_type(result, "result"), out, states


def _declared_states(fn) -> dict:
    """The state ``fn.open()`` asks for, learned on a copy (the user's object is left untouched)."""
    try:
        probe_fn = copy.deepcopy(fn)
    except Exception:  # an attribute that does not copy: probe the object itself
        probe_fn = fn
    probe = DescriptorProbe()
    probe_fn.open(probe)
    return probe.found
