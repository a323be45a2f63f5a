"""``fw.write_savepoint(..., operator_state={name: df})``: each table turned into its operator's snapshots.

A table is shaped as ``reader.operator_state(name)`` returns it (``fw_magics.state.tables``: subtask, state,
mode, element as JSON text) and replaces the operator's operator state, every subtask's. Checked on the driver
before anything is written, each one line: the name is the stream's operator that keeps operator state (a
source's splits are its position: ``from_savepoint`` or ``positions``), the columns, then every row
(``state.tables.snapshots_of``): a subtask of the written parallelism, a state the function keeps in its
declared mode -- what its ``initialize_state`` asks for (``api.checkpointed.declared_modes``), else what
``from_savepoint`` recorded, and a broadcast function's other states as broadcast state --, its element
JSON text of a unit the state takes. The rows are collected: operator state is small, and a savepoint holds it
as one JSON document (``operator-state.json``).
"""

from __future__ import annotations

from ....api.checkpointed import declared_modes
from ....errors import FullWindowError, did_you_mean
from ....state.snapshots import subtask_modes
from ....state.tables import COLUMNS, SCHEMA, snapshots_of

_INTEGERS = ("tinyint", "smallint", "int", "bigint")


def operator_snapshots(stream, tables, parallelism: int, base) -> dict:
    """Operator name -> one snapshot per subtask of ``parallelism``, from ``tables`` ({name: DataFrame}); ``base``:
    the ``from_savepoint`` (a ``Savepoint``) or None."""
    if tables is None:
        return {}
    if not isinstance(tables, dict):
        raise FullWindowError(f"write_savepoint's operator_state is {type(tables).__name__}; accepted: a dict of "
                              "operator name -> DataFrame (as reader.operator_state(name) returns)")
    spec, name = stream.spec, stream.step.name
    keeping = [name] if spec.checkpointed else []
    found = {}
    for operator, frame in tables.items():
        where = f"write_savepoint's operator_state[{operator!r:.80}]"
        if operator not in keeping:
            raise FullWindowError(f"{where}: {_why_not(stream, operator)}; accepted: "
                                  f"{', '.join(map(repr, keeping)) or 'none (no operator of the stream keeps any)'}")
        rows = _rows(frame, where)
        recorded = subtask_modes(base.operator_state[operator]) if base is not None and \
            base.operator_state.get(operator) else {}
        modes = {**recorded, **declared_modes(spec.function)}
        other = getattr(spec.function, "undeclared_state_mode", None)
        found[operator] = snapshots_of(rows, parallelism, modes, other, where)
    return found


def _why_not(stream, operator) -> str:
    graph = stream.job_graph()
    if operator in graph.source_names():
        return "a source's operator state is its splits, its position (kept from from_savepoint, or positions=)"
    names = [op.name for op in graph.operators]
    if operator in names:
        return f"{operator} keeps no operator state"
    return f"the stream's graph has no operator {operator!r:.80}{did_you_mean(str(operator), names)}"


def _rows(frame, where: str) -> list[tuple]:
    """``frame``'s rows as (subtask, state, mode, element), after one line for a column that is not the reader's."""
    from pyspark.sql import DataFrame

    if not isinstance(frame, DataFrame) and type(frame).__name__ != "DataFrame":
        raise FullWindowError(f"{where} is {type(frame).__name__}; accepted: a Spark DataFrame of {SCHEMA} (as "
                              "reader.operator_state(name) returns)")
    got = {f.name: f.dataType.simpleString() for f in frame.schema.fields}
    wrong = [f"column {n!r} is not one of the table's" for n in got if n not in COLUMNS] \
        + [f"column {n!r} is missing" for n in COLUMNS if n not in got] \
        + [f"column {n!r} is {t}" for n, t in got.items()
           if n in COLUMNS and t != "string" and not (n == "subtask" and t in _INTEGERS)]
    if wrong:
        raise FullWindowError(f"{where}: {'; '.join(wrong[:3])}; accepted: {SCHEMA} (as reader.operator_state(name) "
                              "returns)")
    return [tuple(row) for row in frame.select(*COLUMNS).collect()]
