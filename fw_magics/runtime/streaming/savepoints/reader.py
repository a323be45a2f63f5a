"""A savepoint read as tables (Flink's State Processor API, reading): ``fw.read_savepoint(path)``.

The savepoint is loaded and checked as a restore loads it (``files.load_savepoint``: nothing in it is
trusted, nothing unpickled or run). Its keyed state is then read by Spark, never collected: the
keyed-state file (``spark.read.parquet``) over its base files (Arrow streams read by Spark tasks), a
base key the file clears dropped, as a restore layers them; each key's ``__fw_state`` JSON turned into
typed columns by Spark's ``from_json`` where the types allow (``typed_columns``), else by Spark tasks
with the codecs the runtime stores them with, by what the job's function
declared -- recorded in the savepoint (``declared``), so the job's functions are not needed. A
savepoint written before it recorded them is read with ``stream=`` (the keyed stream ``.start()`` was
called on), whose declared state must be what the savepoint holds.

``keyed_state()``: the key columns, then one column per declared state: a value state as its declared
type (a record: a struct), a list state as an array of it, JSON values (no declared type) as JSON
text; a kind without timers (reduce, aggregate: one running value) has its running value's fields as
columns instead (a reduce's key fields are the key's). ``timers()``: key columns, ``timestamp`` (epoch
milliseconds). ``operator_state(name)``: subtask, state, mode, element (JSON text). ``positions()``:
each input's recorded position. ``info``: job, graph, parallelism, W, batch and the rest of the document.
"""

from __future__ import annotations

import functools
import json

from pyspark.sql import functions as F
from pyspark.sql import types as T

from ....api.state import StateKind
from ....connectors.base import Composite
from ....connectors.registry import position_in_words, source_class
from ....datastream.physical.arrow_calls import map_in_arrow
from ....errors import did_you_mean
from ....graph import JobGraph
from ....operators.spec import StateType, codec_for
from ....state.tables import SCHEMA, rows_of
from ....values.schema import arrow_schema
from ...batch.result_files import read_results
from ..keyed.changelog import ROW, STATE, STATE_ROW, TOMBSTONE
from ..keyed.seed import overlaid
from ..keyed.typed_states import TypedStates, column_type
from . import declared as states_field
from .checks import shape_problem
from .files import Savepoint, SavepointError, load_savepoint
from .typed_columns import expressions

#: The column of ``timers()`` holding a timer's time (epoch milliseconds, as timers are set).
TIMER = "timestamp"


def read_savepoint(path, stream=None) -> SavepointReader:
    """The savepoint at ``path`` (what ``job.savepoint()`` returned) as tables; ``stream``: the keyed
    stream it was taken of, for a savepoint that does not record its declared state (older ones)."""
    savepoint = load_savepoint(path)
    declared = _declared(savepoint, stream)
    spark = _spark()
    return SavepointReader(savepoint.document, savepoint.operator_state, savepoint.manifest, declared,
                           lambda: spark.read.parquet(savepoint.keyed_path), savepoint.path,
                           [p for p, _ in savepoint.base], spark, savepoint.path)


def state_of(job, batch: int | None = None) -> SavepointReader:
    """The running ``job``'s state at its latest committed micro-batch (or ``batch``, one still kept:
    ``batches``), read as a savepoint of it would be (``savepoints.contents``: nothing written): its store at
    that batch over the files its state was handed over in."""
    from ....state import parse_operator_state
    from . import KEYED, contents

    document, operators, position, snap = contents(job, batch)
    declared = _typed(job.spec.kind.declared_states(job.spec)) if job.state_kind is KEYED else None
    return SavepointReader(document, parse_operator_state(operators), position, declared, lambda: snap.states,
                           job.root, [p for p, _ in snap.base], job.spark)


def keyed_state_of(job, batch: int) -> SavepointReader:
    """The running keyed ``job``'s keyed state alone at ``batch`` (one still kept, ``batches.kept``): what
    ``state_of`` reads of it, without what a savepoint holds besides (positions, W, operator state: its
    ``info`` and ``positions()`` are not there). ``inspector.key_history`` reads one per kept batch."""
    from . import keyed_states

    states, base = keyed_states(job, batch)
    document = {"job": job.job_name, "batch": batch, "kind": job.spec.kind.name, "key_names": list(job.spec.key_names)}
    return SavepointReader(document, {}, {}, _typed(job.spec.kind.declared_states(job.spec)), lambda: states,
                           job.root, [p for p, _ in base], job.spark)


def _typed(declared: dict | None) -> dict | None:
    """Declared states (name -> (kind, StateType or None)) as a reader takes them: no type, JSON values."""
    if declared is None:
        return None
    return {name: (kind, StateType(ddl=None) if t is None else t) for name, (kind, t) in declared.items()}


def _spark():
    from ....spark.session import get_spark

    return get_spark()


def _declared(savepoint: Savepoint, stream):
    """What the savepoint's function declared (name -> (kind, StateType)), checked against what it holds;
    None for a savepoint without keyed state. One line when it cannot be known."""
    from ....operators import kind_named

    doc, where = savepoint.document, f"savepoint {savepoint.path}"
    kind = kind_named(doc["kind"]) if "kind" in doc else None
    if kind is not None and not kind.keyed:
        return None
    spec = getattr(stream, "spec", None)
    if stream is not None and (spec is None or not getattr(spec.kind, "keyed", False)):
        raise SavepointError(f"read_savepoint's stream= is {type(stream).__name__}; accepted: the keyed stream the "
                             "savepoint was taken of (the object .start() was called on: key_by(...).process(fn)...)")
    if spec is not None:
        declared, timed, operator = spec.kind.declared_states(spec), spec.timed, spec.label
    elif states_field.FIELD in doc:
        declared = states_field.parse(doc[states_field.FIELD])
        timed, operator = kind is None or kind.timed, f"the {doc.get('kind', 'keyed')} function it was taken of"
    else:
        raise SavepointError(f"{where} does not record the state its function declared (written before "
                             "fw-magics recorded it); accepted: read_savepoint(path, stream=the keyed stream it was "
                             "taken of)")
    if declared is None:
        raise SavepointError(f"{where}: the {doc.get('kind')} operator declares no keyed state to read")
    problem = shape_problem(savepoint.shape, declared, timed, operator) if savepoint.shape is not None else None
    if problem is not None:
        raise SavepointError(f"{where} {problem}")
    return _typed(declared)


class SavepointReader:
    """A savepoint's contents (or a running job's, ``state_of``) and what its function declared; each method a
    Spark DataFrame over its files. ``over()``: the keyed states written over the base (key columns,
    ``__fw_state``, tombstones kept); ``base``: the base files (absolute paths inside ``root``)."""

    def __init__(self, document: dict, operator_state: dict, manifest: dict, declared: dict | None, over, root: str,
                 base: list, spark, path: str | None = None):
        self.document, self.held, self.manifest, self.declared = document, operator_state, manifest, declared
        self._over, self.root, self.base, self.spark, self.path = over, root, list(base), spark, path

    @property
    def info(self) -> dict:
        """The job, its graph (a ``JobGraph``), parallelism, watermark (W, epoch ms or None), the micro-batch it
        was taken after, the operator kind, the key columns, the savepoint's path (None: a running job's)."""
        doc = self.document
        return {"job": doc["job"], "graph": JobGraph.from_json(doc["graph"]), "parallelism": doc["parallelism"],
                "watermark": doc["watermark"], "batch": doc.get("batch"), "kind": doc.get("kind"),
                "key_names": list(doc["key_names"]), "path": self.path}

    @property
    def key_names(self) -> list:
        return list(self.document["key_names"])

    # -- keyed state -----------------------------------------------------------------------------------

    def _where(self) -> str:
        return f"savepoint {self.path}" if self.path else f"job {self.document['job']!r}"

    def states(self):
        """Every key's state as stored: the key columns and ``__fw_state`` (the per-key core's JSON), the keys
        written over the base over the base's others, cleared keys dropped."""
        if self.declared is None:
            raise SavepointError(f"{self._where()} holds no keyed state (its operator is "
                                 f"{self.document.get('kind')!r}); read its operator_state(name)")
        over = self._over()
        if self.base:
            over = overlaid(over, self._base_states(over.schema), self.key_names)
        return over.where(F.col(STATE) != F.lit(TOMBSTONE))

    def _base_states(self, state_schema: T.StructType):
        """The base files' state rows as ``state_schema`` (key columns, ``__fw_state``): chosen and cast by Arrow in
        the tasks that read them, so their output rows and columns never reach the JVM."""
        import os

        names = [os.path.relpath(path, self.root) for path in self.base]
        return read_results(self.spark, self.root, names, state_schema,
                            each=functools.partial(_state_rows, arrow_schema(state_schema)))

    def keyed_state(self, where=None):
        """The key columns, then one typed column per declared state (see the module docstring); ``where``: a
        condition on the key columns, applied before the states are typed (one key's, read without decoding
        the others')."""
        columns = [(name, kind, state_type) for name, (kind, state_type) in sorted(self.declared.items())]
        stored = TypedStates.of(self.declared)
        if not self.base or stored is None:
            states = self.states()
            typed = typed_frame(states if where is None else states.where(where), columns)
        else:  # the keys written over the base typed from their JSON, the base's others as stored typed
            over = self._over()
            live = over.where(F.col(STATE) != F.lit(TOMBSTONE))
            base = self._base_typed(over.schema, stored, columns)
            if where is not None:
                live, base = live.where(where), base.where(where)
            on = [base[k].eqNullSafe(over[k]) for k in self.key_names]
            typed = typed_frame(live, columns).unionByName(base.join(over, on, "left_anti"))
        return _flattened(typed, self.key_names, columns, self.document.get("kind"))

    def _base_typed(self, state_schema: T.StructType, stored: TypedStates, columns: list):
        """The base files' state rows as the key columns of ``state_schema`` and the typed states of ``columns``:
        the files' typed columns where they hold them (``typed_states``), else decoded from their JSON, in the
        tasks that read them."""
        import os

        keys = [f for f in state_schema.fields if f.name != STATE]
        out = T.StructType(keys + [T.StructField(name, column_type(kind, t)) for name, kind, t in columns])
        names = [os.path.relpath(path, self.root) for path in self.base]
        each = _BaseTyped([f.name for f in keys], stored, columns, arrow_schema(out))
        return read_results(self.spark, self.root, names, out, each=each)

    def timers(self):
        """Each pending event-time timer: the key columns and ``timestamp`` (epoch milliseconds)."""
        states = self.states()
        keys = [F.col(f"`{k}`") for k in self.key_names]
        times = F.from_json(F.col(STATE), "struct<t:array<bigint>>").getField("t")
        return states.select(*keys, F.explode(times).alias(TIMER))

    # -- operator state and positions -------------------------------------------------------------------

    def operator_state(self, name: str):
        """Operator ``name``'s state: one row per element of each subtask's state (subtask, state, mode, element
        as JSON text), a list, union or broadcast state alike (``state.tables``; ``fw.write_savepoint``'s
        ``operator_state`` takes it back)."""
        held = self.held
        if name not in held:
            raise SavepointError(f"{self._where()} holds no operator state of {name!r:.80}"
                                 f"{did_you_mean(name, list(held))}; accepted: {', '.join(map(repr, held)) or 'none'}")
        return self.spark.createDataFrame(rows_of(held[name]), SCHEMA)

    def positions(self):
        """Each input's recorded position: its source operator, the position in words, and as recorded (JSON)."""
        doc, manifest = self.document, self.manifest
        names = JobGraph.from_json(doc["graph"]).source_names()
        cls = source_class(doc["source"].get("kind"))
        if issubclass(cls, Composite):
            parts = list(zip(cls.described_parts(doc["source"]), manifest[cls.PARTS]))
        else:
            parts = [(doc["source"], manifest)]
        rows = [(name, position_in_words(described, own), json.dumps(own)) for name, (described, own)
                in zip(names, parts)]
        return self.spark.createDataFrame(rows, "source string, position string, recorded string")

    def __repr__(self) -> str:
        return f"SavepointReader(of {self._where()}: after micro-batch {self.document.get('batch')})"


def typed_frame(states, columns: list, python: bool = False):
    """``states`` (key columns, ``__fw_state``) as the key columns and one typed column per state of ``columns``
    ((name, ``StateKind``, ``StateType``) each): by Spark's ``from_json`` where every type allows it
    (``typed_columns``), else (or with ``python``) decoded in Python by the runtime's codecs (Arrow batches in
    Spark tasks); the two give the same values."""
    keys = [f for f in states.schema.fields if f.name != STATE]
    fast = None if python else expressions(columns, column_type)
    if fast is not None:
        parse, typed = fast
        key_columns = [F.col(f"`{f.name}`") for f in keys]
        return states.select(*key_columns, parse).select(*key_columns, *typed)
    out = T.StructType(keys + [T.StructField(name, column_type(kind, t)) for name, kind, t in columns])
    task = functools.partial(_typed_batches, _Decoded([f.name for f in keys], columns, arrow_schema(out)))
    return map_in_arrow(states, task, out)


def _flattened(typed, keys: list, columns: list, kind_name: str | None):
    """A kind without timers (a reduce, an aggregate: one running value) has its running value's fields as
    columns; a reduce's fields named as a key column are the key's (its records hold their key). A running
    value that is not a record, or whose field is named as a key column otherwise, stays one column."""
    from ....operators import kind_named

    kind = kind_named(kind_name) if kind_name is not None else None
    if kind is None or kind.timed or len(columns) != 1:
        return typed
    name, _, state_type = columns[0]
    if state_type.ddl is None or not state_type.record:
        return typed
    fields = [n for n in state_type.names if not (kind.emits_records and n in keys)]
    if set(fields) & set(keys):
        return typed
    return typed.select(*[F.col(f"`{n}`") for n in keys], *[F.col(f"`{name}`").getField(n).alias(n) for n in fields])


# -- inside the tasks ---------------------------------------------------------------------------------


def _of_state_rows(batch, columns: list) -> list:
    """``columns`` (of ``batch``) at its state rows only: only the columns read are filtered, not the rest of the
    file's (a backlog writes a batch of outputs or of states, so mostly none is)."""
    import pyarrow.compute as pc

    state_rows = pc.equal(batch.column(ROW), STATE_ROW)
    return columns if state_rows.true_count == batch.num_rows else [c.filter(state_rows) for c in columns]


def _state_rows(schema, batch):
    """A base file's batch as its state rows' columns of ``schema`` (the keyed-state file's)."""
    import pyarrow as pa

    return pa.RecordBatch.from_arrays(_of_state_rows(batch, [batch.column(f.name).cast(f.type) for f in schema]),
                                      schema=schema)


def _typed_batches(decode, batches):
    """Each batch of (keys, ``__fw_state``) as the keys and the declared states' typed columns (``_Decoded``)."""
    for batch in batches:
        yield decode(batch)


class _Decoded:
    """A batch of (keys, ``__fw_state``) as the keys and the declared states' typed columns of ``schema``,
    decoded by the runtime's codecs (made at the first batch, in the task)."""

    def __init__(self, key_names: list, columns: list, schema):
        self.key_names, self.columns, self.schema, self._codecs = key_names, columns, schema, None

    def __call__(self, batch):
        import pyarrow as pa

        if self._codecs is None:
            self._codecs = [(name, kind is StateKind.LIST, codec_for(t, f"{kind} state {name!r}"), t.ddl is None)
                            for name, kind, t in self.columns]
        docs = [json.loads(text) for text in batch.column(STATE).to_pylist()]
        arrays = [batch.column(k) for k in self.key_names]
        for (name, listed, codec, as_json), field in zip(self._codecs, list(self.schema)[len(self.key_names):]):
            one = (lambda v: json.dumps(v)) if as_json else codec.decode
            if listed:
                values = [[one(v) for v in doc.get("l", {}).get(name, [])] for doc in docs]
            else:
                values = [None if doc.get("v", {}).get(name) is None else one(doc["v"][name]) for doc in docs]
            try:  # records are tuples, which pyarrow takes as structs
                arrays.append(pa.array(values, type=field.type))
            except (pa.ArrowInvalid, pa.ArrowTypeError):  # a pyarrow that wants them as dicts
                arrays.append(pa.array([_plain(v) for v in values], type=field.type))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


class _BaseTyped:
    """A base file's batch as its state rows' keys (cast to ``schema``'s) and typed states: the file's typed
    columns where it holds them as ``stored`` says, else decoded from its JSON (``_Decoded``)."""

    def __init__(self, key_names: list, stored: TypedStates, columns: list, schema):
        self.key_names, self.stored, self.schema = key_names, stored, schema
        self.decode = _Decoded(key_names, columns, schema)

    def __call__(self, batch):
        import pyarrow as pa

        keys = [batch.column(f.name).cast(f.type) for f in list(self.schema)[:len(self.key_names)]]
        found = self.stored.found(batch)
        columns = _of_state_rows(batch, keys + (found if found is not None else [batch.column(STATE)]))
        if found is None:
            return self.decode(pa.RecordBatch.from_arrays(columns, names=self.key_names + [STATE]))
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)


def _plain(value):
    """A decoded value as pyarrow takes it: records as dicts, all the way down."""
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return {k: _plain(v) for k, v in zip(value._fields, value)}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value
