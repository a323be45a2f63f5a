"""What the streaming runtime is given to run an operator: its spec, the declared types in it, and the
probe that learns a keyed function's state from its ``open()``.

A spec is built on the driver, where DDL is parsed (``fw_magics.datastream``), and pickled into the
tasks: its ``kind`` is the operator's kind (``fw_magics.operators``), which says how the runtime runs
it. How two inputs reach a keyed operator is here too: one stream of tagged rows, the key
column(s), ``INPUT`` (1 or 2), ``TIME`` (the record's event time, when the inputs have one) and one
column per input (``SIDES``) holding the record as a struct (the other input's is null); the
co-process kind hands each record to ``process_element1`` or ``2`` by its tag.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..api.checkpointed import is_checkpointed
from ..api.state import StateKind
from ..errors import FullWindowError
from ..values.codecs import JsonCodec, TypedCodec

#: The columns of a two-input operator's tagged rows, after the key column(s).
INPUT, TIME, SIDES = "__fw_input", "__fw_time", ("__fw_in1", "__fw_in2")


def is_field_list(ddl: str) -> bool:
    """Whether a DDL string lists named fields ("a long, b string") rather than naming one type.

    A field list has a space, comma or colon outside any ``<...>`` or ``(...)``; "long",
    "array<struct<a:int>>" and "decimal(10, 2)" name one type.
    """
    depth = 0
    for char in ddl.strip():
        if char in "<(":
            depth += 1
        elif char in ">)":
            depth -= 1
        elif depth == 0 and char in " ,:":
            return True
    return False


@dataclass(frozen=True)
class StateType:
    """A declared type, parsed on the driver (DDL needs Spark): its Arrow schema and Spark types.

    ``record``: the DDL lists fields and a value is a record; otherwise the schema has one field
    and a value is one value of its type. ``ddl`` None: JSON values (no schema).
    """

    ddl: str | None
    arrow_schema: object = None  # pyarrow.Schema
    spark_types: tuple = ()
    record: bool = False

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.arrow_schema.names) if self.arrow_schema is not None else ()


def codec_for(state_type: StateType | None, label: str):
    """The codec of a declared type, or the JSON codec when none was declared."""
    if state_type is None or state_type.ddl is None:
        return JsonCodec(label)
    return TypedCodec(label, state_type.arrow_schema, list(state_type.spark_types), state_type.record)


@dataclass(frozen=True)
class KeyedOperatorSpec:
    """Everything the per-key core needs to run one keyed operator; built by ``KeyedStream``.

    ``kind``: its keyed kind (``fw_magics.operators``: reduce, aggregate, process, co-process);
    ``function``: the user's function, AggregateFunction, KeyedProcessFunction or
    KeyedCoProcessFunction; ``record``: the input records' type (reduce's state and output);
    ``key``: the key columns' type (their values lead every aggregate or process output);
    ``result``: the output columns after the key (aggregate, process); ``accumulator``: the
    aggregate's accumulator type (``ddl`` None: JSON); ``states``: a process function's state name
    -> (``StateKind``, type), from its ``open()``; ``inputs``: a co-process function's two
    inputs' column names (its records are tagged rows, see the module docstring); ``sequence``: the
    columns its source orders records by (a table's changes: commit LSN, then place in the commit), by
    which a key's records are applied, before event time.
    """

    kind: object  # a KeyedKind
    function: object
    label: str
    record: StateType
    key: StateType
    event_time: str | None
    result: StateType | None = None
    accumulator: StateType | None = None
    states: dict = None
    inputs: tuple = ()
    sequence: tuple = ()

    def __post_init__(self):
        if getattr(self.kind, "keyed", None) is not True:
            raise TypeError(f"KeyedOperatorSpec takes a keyed operator kind (fw_magics.operators); got {self.kind!r}")

    @property
    def timed(self) -> bool:
        """Whether it keeps event-time timers and a function to close: a process or co-process function."""
        return self.kind.timed

    @property
    def checkpointed(self) -> bool:
        """Whether its function also keeps operator state (an ``fw.CheckpointedFunction``): per state partition."""
        return self.timed and is_checkpointed(self.function)

    @property
    def order(self) -> tuple[str, ...]:
        """What a key's records are applied in order of: the source's sequence (a table's changes: their commit
        order), else the event time, then (two inputs) the input."""
        if self.sequence:
            return tuple(self.sequence)
        if self.event_time is None:
            return ()
        return (self.event_time, INPUT) if self.inputs else (self.event_time,)

    @property
    def key_names(self) -> tuple[str, ...]:
        return self.key.names

    @property
    def output(self) -> StateType:
        """The changelog's columns: a reduce's records, else the key then the result."""
        return self.kind.output(self)


@dataclass(frozen=True)
class OperatorSpec:
    """Everything the runtime needs to run a non-keyed operator; built by ``DataStream.process``.

    ``kind``: the non-keyed operator's kind; ``function``: the user's ProcessFunction; ``record``:
    the input records' type; ``result``: the output columns' type (``StateType`` both).
    """

    kind: object  # the non-keyed OperatorKind
    function: object
    label: str
    record: StateType
    result: StateType
    event_time: str | None = None  # a non-keyed operator has no timers

    @property
    def key_names(self) -> tuple[str, ...]:
        return ()

    @property
    def checkpointed(self) -> bool:
        return is_checkpointed(self.function)


class _ProbeState:
    """What ``open()`` gets from the descriptor probe: a handle that cannot be used yet."""

    def __init__(self, name: str):
        self._name = name

    def _refuse(self, *args, **kwargs):
        raise FullWindowError(
            f"state {self._name!r} was used inside open(); read and write state in process_element or on_timer"
        )

    value = update = clear = get = add = add_all = _refuse


class DescriptorProbe:
    """A stand-in runtime context for ``open()`` that records the state descriptors it asks for."""

    def __init__(self):
        self.found: dict[str, tuple[str, object]] = {}

    def _declare(self, kind: StateKind, descriptor):
        kind.check_descriptor(descriptor)
        previous = self.found.get(descriptor.name)
        if previous is not None and previous != (kind, descriptor.type):
            raise FullWindowError(
                f"state {descriptor.name!r} is declared twice, as {previous[0]} state of type {previous[1]!r} "
                f"and as {kind} state of type {descriptor.type!r}; accepted: one declaration per name"
            )
        self.found[descriptor.name] = (kind, descriptor.type)
        return _ProbeState(descriptor.name)

    def get_state(self, descriptor):
        return self._declare(StateKind.VALUE, descriptor)

    def get_list_state(self, descriptor):
        return self._declare(StateKind.LIST, descriptor)
