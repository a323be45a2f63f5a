"""Keyed states stored typed: each declared state as an Arrow column beside ``__fw_state`` in a backlog's state rows.

A backlog's file holds each key's state as JSON text (``__fw_state``), which is what a restore reads. Where
every state the function declares has a type that ``values.stored_arrays`` takes, or none (JSON values), the
state rows also hold one column per state, ``__fw_typed.<name>``, of the type a savepoint's table shows it as
(``column_type``: a value state as its type, a record as a struct, JSON values as their JSON text, a list
state as an array of it; no value: null, a list state without items: ``[]``). Reading a savepoint as a table (``savepoints.reader``) then selects them instead of parsing
each key's JSON. The JSON stays the truth: a file without the columns, or with a state of another type (an
older file, one a restore re-partitioned, a base under changed declarations), is read from its JSON.
"""

from __future__ import annotations

import json

import pyarrow as pa
from pyspark.sql import types as T

from ....api.state import StateKind
from ....values.schema import arrow_schema
from ....values.stored_arrays import storable, stored_array

#: The typed columns' names: this, then the state's name.
PREFIX = "__fw_typed."
_NONE: dict = {}


def column_type(kind: StateKind, state_type) -> T.DataType:
    """The Spark type a state of ``kind`` and ``state_type`` (a ``StateType``) is shown as in a table: JSON text
    without a declared type, a struct for a record, an array of either for a list state."""
    if state_type is None or state_type.ddl is None:
        one = T.StringType()
    elif state_type.record:
        one = T.StructType([T.StructField(n, t) for n, t in zip(state_type.names, state_type.spark_types)])
    else:
        one = state_type.spark_types[0]
    return T.ArrayType(one) if kind is StateKind.LIST else one


class TypedStates:
    """The typed columns of a function's declared states (``of``): their Arrow fields, made from the states'
    stored forms, and found again in a file's batch."""

    def __init__(self, columns: list):
        self.columns = columns  # (name, StateKind, StateType), by name
        self.schema = arrow_schema(T.StructType([T.StructField(PREFIX + name, column_type(kind, state_type))
                                                 for name, kind, state_type in columns]))

    @classmethod
    def of(cls, declared: dict | None) -> TypedStates | None:
        """The typed columns of ``declared`` (name -> (``StateKind``, ``StateType`` or None)), or None when a
        state's declared type is not one stored typed."""
        if not declared:
            return None
        typed = cls(sorted((name, kind, state_type) for name, (kind, state_type) in declared.items()))
        return typed if all(storable(f.type) for f in typed.schema) else None

    @property
    def fields(self) -> list:
        return list(self.schema)

    def arrays(self, docs: list) -> list[pa.Array]:
        """The typed columns of the keys whose state documents (the per-key core's: ``v`` values, ``l`` lists,
        each in its stored form) are ``docs``."""
        out = []
        for (name, kind, state_type), field in zip(self.columns, self.schema):
            as_json = state_type is None or state_type.ddl is None  # JSON values: shown as their text
            if kind is StateKind.LIST:
                forms = [doc.get("l", _NONE).get(name) or [] for doc in docs]
                forms = [[json.dumps(v) for v in items] for items in forms] if as_json else forms
            else:
                forms = [doc.get("v", _NONE).get(name) for doc in docs]
                forms = [None if v is None else json.dumps(v) for v in forms] if as_json else forms
            out.append(stored_array(forms, field.type))
        return out

    def nulls(self, n: int) -> list[pa.Array]:
        """The typed columns of ``n`` rows that are no state rows."""
        return [pa.nulls(n, field.type) for field in self.schema]

    def found(self, batch) -> list[pa.Array] | None:
        """The typed columns of a file's ``batch``, each state's under its name, or None when the batch lacks
        one or holds it as another type (the file is read from its JSON)."""
        names = batch.schema.names
        if not all(f.name in names and batch.schema.field(f.name).type == f.type for f in self.schema):
            return None
        return [batch.column(f.name) for f in self.schema]
