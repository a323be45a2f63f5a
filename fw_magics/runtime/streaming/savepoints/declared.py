"""The keyed state a savepoint's function declared, recorded in its document (``states``) and read back.

A savepoint records, beside its states' JSON, what its job's function declared of them: each state's
name, its ``StateKind`` and its type as Spark's JSON of a struct (one field for a single value; every
field for a record), or null for JSON values. Reading a savepoint's state as typed columns
(``reader.SavepointReader``) takes the types from here: no function of the job is imported, nothing
found in the savepoint is run. Spark's JSON of a type is parsed by pyspark's types alone (no session),
and a field that is not what ``record`` writes is refused in one line (``valid``).
"""

from __future__ import annotations

import json

from ....api.state import StateKind
from ....operators.spec import StateType

FIELD = "states"
#: The most states a document may record (a function declares a few).
MAX_STATES = 1024
ACCEPTED = ("{name: {kind: 'value' or 'list', record: true or false, type: Spark's JSON of a struct or null}}, "
            f"at most {MAX_STATES}")


def record(declared: dict) -> dict:
    """``declared`` (name -> (``StateKind``, ``StateType`` or None), a kind's ``declared_states``) as the
    document's JSON."""
    from pyspark.sql import types as T

    out = {}
    for name, (kind, state_type) in sorted(declared.items()):
        typed = state_type is not None and state_type.ddl is not None
        struct = T.StructType([T.StructField(n, t) for n, t in zip(state_type.names, state_type.spark_types)]) \
            if typed else None
        out[name] = {"kind": str(kind), "record": bool(typed and state_type.record),
                     "type": None if struct is None else struct.jsonValue()}
    return out


def parse(recorded: dict) -> dict:
    """The document's ``states`` back as name -> (``StateKind``, ``StateType``; ddl None: JSON values).
    ``ValueError`` (its words) for a field ``record`` did not write."""
    from pyspark.sql import types as T

    from ....values.schema import arrow_schema

    if not isinstance(recorded, dict) or len(recorded) > MAX_STATES:
        raise ValueError(f"not an object of at most {MAX_STATES} states")
    out = {}
    for name, entry in recorded.items():
        if not isinstance(entry, dict) or set(entry) != {"kind", "record", "type"} \
                or entry["kind"] not in {k.value for k in StateKind} or type(entry["record"]) is not bool:
            raise ValueError(f"state {name!r:.60} is {json.dumps(entry)[:80]}")
        if entry["type"] is None:
            out[name] = (StateKind(entry["kind"]), StateType(ddl=None))
            continue
        try:
            struct = T.StructType.fromJson(entry["type"])
            schema = arrow_schema(struct)
        except Exception as error:  # noqa: BLE001 -- any shape pyspark's parser cannot take
            raise ValueError(f"state {name!r:.60} has type {json.dumps(entry['type'])[:80]} ({error})") from None
        if not struct.fields or (not entry["record"] and len(struct.fields) != 1):
            raise ValueError(f"state {name!r:.60} has {len(struct.fields)} fields; a single value has one")
        ddl = struct.simpleString() if entry["record"] else struct.fields[0].dataType.simpleString()
        out[name] = (StateKind(entry["kind"]), StateType(ddl=ddl, arrow_schema=schema,
                                                         spark_types=tuple(f.dataType for f in struct.fields),
                                                         record=entry["record"]))
    return out


def valid(recorded) -> bool:
    """Whether the document's ``states`` is what ``record`` writes (the field check of ``files._FIELDS``)."""
    try:
        parse(recorded)
    except ValueError:
        return False
    return True
