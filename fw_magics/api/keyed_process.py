"""Flink's KeyedProcessFunction for fw-magics streams, and the descriptors of its keyed state.

Defining one needs no Spark; the streaming runtime (``fw_magics.runtime.streaming``) runs it, one key
at a time, with the same Python code in every mode (the backlog's batch engine and Spark's
``transformWithState`` alike)::

    class Alerts(fw.KeyedProcessFunction):
        schema = "readings long, last double"            # what it emits, after the key column(s)

        def open(self, ctx):
            self.count = ctx.get_state(fw.ValueStateDescriptor("count", "long"))
            self.temps = ctx.get_list_state(fw.ListStateDescriptor("temps"))   # JSON values

        def process_element(self, record, ctx):
            self.count.update((self.count.value() or 0) + 1)
            self.temps.add(record.temp)
            ctx.timer_service.register_event_time_timer(ctx.timestamp() + 60_000)

        def on_timer(self, timestamp, ctx):
            yield (self.count.value(), self.temps.get()[-1])

    fw.from_files(...).key_by("sensor").process(Alerts()).start()

What the runtime hands the function:

* ``open(ctx)``: ``ctx.get_state(ValueStateDescriptor(...))`` and
  ``ctx.get_list_state(ListStateDescriptor(...))`` give state handles bound to the current key
  (Flink's ``ValueState.value()/update()/clear()``, ``ListState.get()/add()/add_all()/update()/
  clear()``). A handle's values are copies: change the state with ``update``/``add``, as with
  Flink's RocksDB backend.
* ``process_element(record, ctx)`` for each record of the key, in event-time order;
  ``on_timer(timestamp, ctx)`` for each event-time timer the watermark passes, in timestamp
  order. Both may return (or yield) output rows: tuples, dicts, records or one plain value,
  matching ``schema``; each output is emitted after the key column(s).
* ``ctx.timestamp()`` (the record's event time in epoch milliseconds, the timer's time in
  ``on_timer``), ``ctx.get_current_key()`` (one value, or a tuple for several key columns),
  ``ctx.timer_service.register_event_time_timer(ms)``, ``.delete_event_time_timer(ms)`` and
  ``.current_watermark()`` (``MIN_WATERMARK`` while there is none).

State values are never pickled: a descriptor without a type holds JSON values (str, int, finite
float, bool, None, lists, dicts with str keys); one with a DDL type (``"long"``,
``"array<string>"``, ``"total double, n long"`` for a record) holds values of that type,
checked as every other value fw-magics writes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import FullWindowError
from .process_function import is_checkpointed

#: The kinds of keyed operator whose function keeps event-time timers (and closes): process and co-process.
TIMED_KINDS = ("process", "co_process")
#: The columns of a two-input operator's tagged rows, after the key column(s) (``fw_magics.api.co_process``).
INPUT, TIME, SIDES = "__fw_input", "__fw_time", ("__fw_in1", "__fw_in2")


class KeyedProcessFunction:
    """A function of a keyed stream with keyed state and event-time timers (Flink's KeyedProcessFunction).

    Override ``process_element`` (required), and ``open``, ``on_timer``, ``close`` as needed;
    set ``schema`` (a DDL string of the output columns, after the key) on the class or pass it
    to ``KeyedStream.process(fn, schema=...)``. See the module docstring for the context.
    """

    schema: str | None = None

    def open(self, ctx) -> None:
        """Called once per parallel instance before any record: declare the state here."""

    def process_element(self, record, ctx):
        raise NotImplementedError

    def on_timer(self, timestamp: int, ctx):
        """Called when the watermark passes an event-time timer of the current key."""
        return None

    def close(self) -> None:
        """Called once per parallel instance after its last record."""


def _check_name(name, what: str) -> None:
    if not isinstance(name, str) or not name or not name.isprintable():
        raise FullWindowError(f"{what} name {name!r}; accepted: a non-empty printable string")


def _check_type(type_, what: str) -> None:
    if type_ is not None and (not isinstance(type_, str) or not type_.strip()):
        raise FullWindowError(
            f"{what} type {type_!r}; accepted: a DDL type string such as 'long' or 'total double, n long', "
            "or None for JSON values"
        )


@dataclass(frozen=True)
class ValueStateDescriptor:
    """One value per key: ``type`` is a DDL type ("long", "a long, b string" for a record) or None for JSON."""

    name: str
    type: str | None = None

    def __post_init__(self):
        _check_name(self.name, "value state")
        _check_type(self.type, f"value state {self.name!r}")


@dataclass(frozen=True)
class ListStateDescriptor:
    """A list of values per key: ``type`` is the DDL type of one element, or None for JSON values."""

    name: str
    type: str | None = None

    def __post_init__(self):
        _check_name(self.name, "list state")
        _check_type(self.type, f"list state {self.name!r}")


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


def emitted(result) -> Iterable:
    """The rows a process function returned: None, an iterable of rows, or one row (tuple, dict, value)."""
    if result is None:
        return ()
    if isinstance(result, (tuple, dict, str, bytes, int, float)) or not hasattr(result, "__iter__"):
        return (result,)
    return result


# -- what the runtime is given -------------------------------------------------------------------


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


@dataclass(frozen=True)
class KeyedOperatorSpec:
    """Everything the per-key core needs to run one keyed operator; built by ``KeyedStream``.

    ``kind``: "reduce", "aggregate", "process" or "co_process"; ``function``: the user's function,
    AggregateFunction, KeyedProcessFunction or KeyedCoProcessFunction; ``record``: the input records' type (reduce's
    state and output); ``key``: the key columns' type (their values lead every aggregate or
    process output); ``result``: the output columns after the key (aggregate, process);
    ``accumulator``: the aggregate's accumulator type (``ddl`` None: JSON); ``states``: a
    process function's state name -> ("value" or "list", type), from its ``open()``; ``inputs``:
    a co-process function's two inputs' column names (its records are tagged rows, ``co_process``).
    """

    kind: str
    function: object
    label: str
    record: StateType
    key: StateType
    event_time: str | None
    result: StateType | None = None
    accumulator: StateType | None = None
    states: dict = None
    inputs: tuple = ()

    @property
    def timed(self) -> bool:
        """Whether it keeps event-time timers and a function to close: a process or co-process function."""
        return self.kind in TIMED_KINDS

    @property
    def checkpointed(self) -> bool:
        """Whether its function also keeps operator state (an ``fw.CheckpointedFunction``): per state partition."""
        return self.timed and is_checkpointed(self.function)

    @property
    def order(self) -> tuple[str, ...]:
        """What a key's records are applied in order of: the event time, then (two inputs) the input."""
        if self.event_time is None:
            return ()
        return (self.event_time, INPUT) if self.inputs else (self.event_time,)

    @property
    def key_names(self) -> tuple[str, ...]:
        return self.key.names

    @property
    def output(self) -> StateType:
        """The changelog's columns: a reduce's records, else the key then the result."""
        return self.record if self.kind == "reduce" else self.result


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

    def _declare(self, kind: str, descriptor, expected: type):
        if not isinstance(descriptor, expected):
            raise FullWindowError(
                f"get_{'list_' if kind == 'list' else ''}state takes an fw.{expected.__name__}; "
                f"got {type(descriptor).__name__} {descriptor!r:.60}"
            )
        previous = self.found.get(descriptor.name)
        if previous is not None and previous != (kind, descriptor.type):
            raise FullWindowError(
                f"state {descriptor.name!r} is declared twice, as {previous[0]} state of type {previous[1]!r} "
                f"and as {kind} state of type {descriptor.type!r}; accepted: one declaration per name"
            )
        self.found[descriptor.name] = (kind, descriptor.type)
        return _ProbeState(descriptor.name)

    def get_state(self, descriptor):
        return self._declare("value", descriptor, ValueStateDescriptor)

    def get_list_state(self, descriptor):
        return self._declare("list", descriptor, ListStateDescriptor)
