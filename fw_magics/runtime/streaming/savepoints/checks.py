"""What a savepoint's load reads of its tables and base files, and checks of them against each other.

Called by ``files.load_savepoint`` after the document's fields and each file's size, before the
digests (pyarrow and JSON only, no Spark session):

* **the Parquet footers** (``check_tables``): row counts against the document, the keyed state's
  columns (the key columns, then ``__fw_state``), the latest rows' last columns;
* **the base files** (``check_base``): as many as the partitions the base was written in
  (``base_partitions``; the savepoint's parallelism where an older document does not say), each an
  Arrow stream of the state's shape read to its end: every record batch's framing, then the
  end-of-stream marker its writer closed it with (a file cut short anywhere is refused here, naming
  it, not when a key is first looked up); the keys of its state batches (the first and last of each
  batch, at most ``SAMPLE_KEYS`` a file) in ascending order, each in the partition Spark's hash
  partitioning puts it in among that many (for the key types ``spark_hash`` hashes), so a base file
  removed, added or moved with every count made to agree is refused;
* **the keyed states** (``check_states``): every state in the keyed-state file, and the first
  ``SAMPLE_STATES`` of each base file, is the per-key core's JSON object (``v``: value states, ``l``:
  list states, ``t``: timers); what they hold is summed up as a ``StateShape`` (every name by its
  kind, whether any holds timers, the first ``SAMPLE_VALUES`` values of each name), which a restore
  holds against the restoring function's declared state (``shape_problem``);
* **the watermark** (``check_watermark``): not after the newest event time the savepoint records
  having read (``top``, version 4).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ....api.checkpointed import declared_modes
from ....api.state import StateKind
from ....errors import ResumeError
from ..keyed.changelog import KIND, ROW, SEQ, STATE, STATE_ROW
from ..keyed.keys import normal
from ..keyed.spark_hash import partition as spark_partition
from .declared import FIELD, parse
from .upgrade import operator_verdict, verdict

#: The keys of a base file whose partition and order are checked (the first and last of each state batch).
SAMPLE_KEYS = 256
#: The states of each base file whose shape is read at load (the keyed-state file's are all read).
SAMPLE_STATES = 64
#: The values of each state name kept to check their type against the restoring function's.
SAMPLE_VALUES = 16
#: The most distinct state names a savepoint's states may hold (a function declares a few).
MAX_NAMES = 1024
#: Arrow IPC's end-of-stream marker: a stream written whole ends with it (pyarrow's writer, closed).
END_OF_STREAM = b"\xff\xff\xff\xff\x00\x00\x00\x00"


class Refused(Exception):
    """Why a savepoint is refused, in words, and the file it is about (None: the document);
    ``files.load_savepoint`` turns it into its one-line SavepointError."""

    def __init__(self, message: str, file: str | None = None):
        super().__init__(message)
        self.file = file


@dataclass
class StateShape:
    """What a savepoint's keyed states hold: every state name by its kind (``names``: (kind, name) ->
    the first values stored under it: a value state's values, a list state's elements), and whether
    any state holds timers."""

    names: dict = field(default_factory=dict)
    timers: bool = False

    def observe(self, doc, where: str) -> None:
        """Add one state (its JSON parsed); ``Refused`` if it is not the per-key core's shape."""
        if not isinstance(doc, dict) or not set(doc) <= {"v", "l", "t"}:
            raise Refused(f"holds a state that is not a JSON object of 'v', 'l' and 't' ({json.dumps(doc)[:60]!r}): "
                          "the savepoint is damaged", where)
        values, lists, timers = doc.get("v", {}), doc.get("l", {}), doc.get("t", [])
        if not isinstance(values, dict) or not isinstance(lists, dict) or not isinstance(timers, list) \
                or not all(isinstance(v, list) for v in lists.values()) \
                or not all(type(t) is int for t in timers):
            raise Refused(f"holds a state whose 'v', 'l' or 't' is not the per-key core's ({json.dumps(doc)[:60]!r}): "
                          "the savepoint is damaged", where)
        self.timers = self.timers or bool(timers)
        for kind, named in ((StateKind.VALUE, values), (StateKind.LIST, lists)):
            for name, stored in named.items():
                kept = self.names.get((kind, name))
                if kept is None:
                    if len(self.names) >= MAX_NAMES:
                        raise Refused(f"holds states of more than {MAX_NAMES} names: the savepoint is damaged", where)
                    kept = self.names[(kind, name)] = []
                if len(kept) < SAMPLE_VALUES:
                    kept.extend((stored if kind is StateKind.LIST else [stored])[:SAMPLE_VALUES - len(kept)])


def check_states(path: str, name: str, shape: StateShape) -> None:
    """Every state in the Parquet file ``path`` (its ``__fw_state``) parsed into ``shape`` (about 1.5 s a
    million keys); a tombstone (``{}``) holds nothing."""
    import pyarrow.parquet as pq

    for batch in pq.ParquetFile(path).iter_batches(columns=[STATE], batch_size=65_536):
        for text in batch.column(0).to_pylist():
            shape.observe(_parsed(text, name), name)


def _parsed(text, name: str):
    try:
        return json.loads(text)
    except (TypeError, ValueError, RecursionError):
        raise Refused(f"holds a state that is not a JSON object ({text!r:.60}): the savepoint is damaged",
                      name) from None


def table_schema(path: str, name: str, rows):
    """The Arrow schema of a Parquet file, from its footer, after checking its row count."""
    import pyarrow.parquet as pq

    try:
        handle = pq.ParquetFile(path)
        schema, count = handle.schema_arrow, handle.metadata.num_rows
    except Exception as error:  # a truncated or forged file: pyarrow says what is wrong with it
        raise Refused(f"is not a Parquet file fw-magics wrote ({type(error).__name__}: "
                      f"{str(error).splitlines()[0][:200] if str(error) else ''})", name) from None
    if type(rows) is not int or rows != count:
        raise Refused(f"holds {count} rows, its document says {rows!r:.30}; the savepoint is damaged", name)
    return schema


def check_tables(doc: dict, paths: dict, keyed_kind: bool, keyed_name: str, latest_name: str) -> list:
    """The Parquet files' footers: the keyed state is the key columns then ``__fw_state`` (text); the
    latest rows end in the changelog's kind and sequence. Returns the key columns' Arrow types."""
    import pyarrow as pa

    files, keys = doc["files"], list(doc["key_names"])
    keyed = table_schema(paths[keyed_name], keyed_name, files[keyed_name].get("rows"))
    want = keys + [STATE] if keyed_kind else []
    if keyed.names != want or (keyed_kind and not pa.types.is_string(keyed.field(STATE).type)
                               and not pa.types.is_large_string(keyed.field(STATE).type)):
        raise Refused(f"has columns {keyed.names!r:.120}; accepted: {want!r:.120} ({STATE} text): the savepoint "
                      "is damaged", keyed_name)
    if latest_name in paths:
        latest = table_schema(paths[latest_name], latest_name, files[latest_name].get("rows"))
        if keyed_kind and not (set(keys) <= set(latest.names) and latest.names[-2:] == [KIND, SEQ]):
            raise Refused(f"has columns {latest.names!r:.120}; accepted: the job's output columns (its keys "
                          f"{keys!r:.60} among them), then {KIND}, {SEQ}: the savepoint is damaged", latest_name)
    return [keyed.field(k).type for k in keys] if keyed_kind else []


def base_count(doc: dict, records: list) -> None:
    """The base's files are as many as the partitions it was written in: ``base_partitions`` (version 4),
    else the savepoint's parallelism -- which a savepoint of a job restored at another parallelism,
    written before version 4, does not say: only its keys' partitions are checked then."""
    if not records:
        return
    written = doc.get("base_partitions")
    if written is None and doc["version"] >= 4:
        raise Refused(f"lists {len(records)} base files but not 'base_partitions', the partitions they were "
                      "written in; the savepoint is damaged")
    if written is not None and written != len(records):
        raise Refused(f"lists {len(records)} base files; its base was written in {written} partitions "
                      "('base_partitions'): a base file is missing or added")


def read_base_file(path: str, name: str, key_names: list, key_types: list, index: int, count: int,
                   shape: StateShape) -> None:
    """One base file read to its end, memory-mapped (nothing copied): the state's shape, every batch's
    framing, the end-of-stream marker, its sampled keys' order and partition (file ``index`` of
    ``count``), its first states into ``shape``. ``Refused`` naming the file otherwise."""
    import pyarrow as pa

    from ..keyed.seed import integer_widths

    try:
        with pa.memory_map(path) as source:
            if source.size() < len(END_OF_STREAM):
                raise Refused(f"is not an Arrow stream fw-magics wrote ({source.size()} bytes)", name)
            reader = pa.ipc.open_stream(source)
            schema = reader.schema
            if not set(key_names + [ROW, STATE]) <= set(schema.names) \
                    or [schema.field(k).type for k in key_names] != key_types:
                raise Refused(f"has columns {schema.names!r:.120}; accepted: the keys {key_names!r:.60} of the "
                              f"keyed state's types, {ROW}, {STATE}: the savepoint is damaged", name)
            widths = integer_widths(pa.schema([schema.field(k) for k in key_names]))
            keys, states = [], 0
            for batch in reader:
                if not batch.num_rows or batch.column(ROW)[0].as_py() != STATE_ROW:
                    continue
                if len(keys) < SAMPLE_KEYS:
                    keys += [tuple(batch.column(k)[row].as_py() for k in key_names)
                             for row in sorted({0, batch.num_rows - 1})]
                for text in batch.column(STATE)[:max(0, SAMPLE_STATES - states)].to_pylist():
                    shape.observe(_parsed(text, name), name)
                    states += 1
            source.seek(source.size() - len(END_OF_STREAM))
            ended = source.read(len(END_OF_STREAM)) == END_OF_STREAM
    except Refused:
        raise
    except Exception as error:  # a file cut short or rewritten: pyarrow says where it stopped
        raise Refused(f"is not an Arrow stream fw-magics wrote ({type(error).__name__}: "
                      f"{str(error).splitlines()[0][:160] if str(error) else ''}): the savepoint is damaged",
                      name) from None
    if not ended:
        raise Refused("ends without Arrow's end-of-stream marker: it was cut short; the savepoint is damaged",
                      name)
    _check_keys(keys, widths, index, count, name)


def _check_keys(keys: list, widths: tuple, index: int, count: int, name: str) -> None:
    """Sampled keys of base file ``index`` of ``count``: ascending, each where Spark's hash puts it."""
    normals = [normal(k) for k in keys]
    if any(b < a for a, b in zip(normals, normals[1:])):
        raise Refused("holds its keys out of order; the savepoint is damaged", name)
    for key in keys:
        at = spark_partition(key, widths, count)
        if at is not None and at != index:
            raise Refused(f"holds key {key!r:.60}, which Spark's hash partitioning puts in partition {at} of "
                          f"{count}, not {index}: a base file is missing, added or moved", name)


def check_watermark(doc: dict) -> None:
    """W not after the newest event time the savepoint records having read (version 4: ``top``)."""
    watermark, top = doc.get("watermark"), doc.get("top")
    if watermark is None or doc["version"] < 4:
        return
    if top is None:
        raise Refused(f"has watermark {watermark} but no 'top', the newest event time it read; the savepoint is "
                      "damaged")
    if watermark > top:
        raise Refused(f"has watermark {watermark}, after {top}, the newest event time it read ('top'); accepted: "
                      "a watermark at or before it (a later one would drop every fresh record as late)")


def shape_problem(shape: StateShape, declared: dict, timed: bool, operator: str) -> str | None:
    """Why the states a savepoint holds (``shape``) are not those ``operator`` declares (``declared``: name ->
    (kind, ``StateType``), the kind's ``declared_states``), in words, or None: a name it does not declare
    (its state would be lost), one of another kind, a value that is not of the declared type (it would fail
    when the key is next met), timers where it keeps none."""
    from ....operators.spec import codec_for

    if shape.timers and not timed:
        return f"holds event-time timers, which {operator} does not keep"
    for (kind, name), stored in sorted(shape.names.items()):
        want = declared.get(name)
        if want is None or want[0] != kind:
            known = ", ".join(f"{k} state {n!r}" for n, (k, _) in sorted(declared.items())) or "none"
            return f"holds {kind} state {name!r}, which {operator} does not declare (its state: {known})"
        codec = codec_for(want[1], f"{kind} state {name!r}")
        try:
            back = codec.encode_all([codec.decode(value) for value in stored])
        except Exception:  # a value of another shape: the codec or its row writer says no
            back = None
        if back != stored:
            ddl = want[1].ddl if want[1] is not None and want[1].ddl else "JSON"
            return f"holds {kind} state {name!r} with values {stored[:3]!r:.80}, not of its declared type {ddl!r:.60}"
    return None


def state_verdict(savepoint, spec, allow_non_restored_state: bool = False, operator: str | None = None):
    """The one verdict on a keyed savepoint's states against ``spec``'s function (``upgrade.verdict``), which
    ``check_restorable`` and ``fw.check_savepoint`` ask; None when the kind declares no state. The states held
    are first checked against what the savepoint records its function declared (they were written by it);
    a savepoint that records none (older) is checked against the function's as it is, with no change allowed:
    ``ResumeError`` in one line. ``operator``: how the lines name it (its step's name, "process(Visits)")."""
    where, operator = f"savepoint {savepoint.path}", operator or spec.label
    declared = spec.kind.declared_states(spec)
    if declared is None:
        return None
    recorded = savepoint.document.get(FIELD)
    if recorded is None:
        problem = None if savepoint.shape is None else shape_problem(savepoint.shape, declared, spec.timed, operator)
        if problem is not None:
            raise ResumeError(f"{where} {problem}; restore it with the job it was taken of (a savepoint that "
                              "records its function's declared state can be restored into changed code)")
        return None
    recorded = parse(recorded)  # checked when the savepoint was loaded
    if savepoint.shape is not None:
        problem = shape_problem(savepoint.shape, recorded, spec.timed, f"{operator} (as the savepoint records it)")
        if problem is not None:
            raise ResumeError(f"{where} {problem}")
    return verdict(recorded, declared, allow_non_restored_state, operator)


def operator_state_verdict(savepoint, spec, operator: str, allow_non_restored_state: bool = False):
    """The one verdict on the operator state a savepoint holds of ``operator`` (its step's name) against
    ``spec``'s function (``upgrade.operator_verdict``: the modes its ``initialize_state`` asks for, learned on a
    copy, ``api.checkpointed.declared_modes``), which ``check_restorable`` and ``fw.check_savepoint`` ask; None
    when the savepoint holds none of it and the function keeps none."""
    from ....state.snapshots import subtask_modes

    snapshots = savepoint.operator_state.get(operator)
    recorded = subtask_modes(snapshots, f"savepoint {savepoint.path}'s {operator}") if snapshots else {}
    declared = declared_modes(spec.function) if spec.checkpointed else None
    if not recorded and declared is None:
        return None
    return operator_verdict(recorded, declared, allow_non_restored_state, operator,
                            getattr(spec.function, "undeclared_state_mode", None))
