"""The state a function declares and touches (PyFlink's ``datastream/state.py``): one descriptor base, one
``ValueState``/``ListState`` vocabulary.

A keyed function declares its state in ``open(ctx)`` with a descriptor (``ctx.get_state(
fw.ValueStateDescriptor("count", "long"))``, ``ctx.get_list_state(fw.ListStateDescriptor("seen"))``)
and gets a handle bound to whichever key is current. A ``CheckpointedFunction`` gets its operator
state by name (``ctx.get_list_state("offsets")``), a handle of its subtask. Both handles are the
types below: ``ValueState`` (``value()``, ``update(v)``, ``clear()``) and ``ListState`` (``get()``,
``add(v)``, ``add_all(vs)``, ``update(vs)``, ``clear()``); the runtime implements them
(``fw_magics.runtime.streaming.keyed.core`` for keyed state, subclasses; ``fw_magics.state`` for
operator state, registered here: that pure model imports nothing of the layers beside it).

State values are never pickled: a descriptor without a type holds JSON values (str, int, finite
float, bool, None, lists, dicts with str keys); one with a DDL type (``"long"``,
``"array<string>"``, ``"total double, n long"`` for a record) holds values of that type, checked as
every other value fw-magics writes.
"""

from __future__ import annotations

import abc
import enum
from dataclasses import dataclass
from typing import ClassVar

from ..errors import FullWindowError
from ..state.operator_state import ListState as OperatorListState


def _check_name(name, what: str) -> None:
    if not isinstance(name, str) or not name or not name.isprintable():
        raise FullWindowError(f"{what} name {name!r}; accepted: a non-empty printable string")


def _check_type(type_, what: str) -> None:
    if type_ is not None and (not isinstance(type_, str) or not type_.strip()):
        raise FullWindowError(
            f"{what} type {type_!r}; accepted: a DDL type string such as 'long' or 'total double, n long', "
            "or None for JSON values"
        )


class StateKind(str, enum.Enum):
    """The kinds of keyed state: what a descriptor describes, what a spec records (a str, so the recorded
    values stay "value" and "list"), and the context method that asks for it."""

    VALUE = "value"
    LIST = "list"

    def __str__(self) -> str:  # "value", in messages and f-strings (as enum.StrEnum, Python 3.11+, does)
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @property
    def getter(self) -> str:
        return "get_state" if self is StateKind.VALUE else "get_list_state"

    def descriptor_class(self) -> type[StateDescriptor]:
        return ValueStateDescriptor if self is StateKind.VALUE else ListStateDescriptor

    def check_descriptor(self, descriptor) -> None:
        """The one line a context's ``get_state``/``get_list_state`` gives for a descriptor of another class."""
        expected = self.descriptor_class()
        if not isinstance(descriptor, expected):
            raise FullWindowError(f"{self.getter} takes an fw.{expected.__name__}; "
                                  f"got {type(descriptor).__name__} {descriptor!r:.60}")


@dataclass(frozen=True)
class StateDescriptor:
    """What a function asks its context for: a state's ``name`` and ``type`` (a DDL type, or None for JSON
    values), checked when it is made. Use ``ValueStateDescriptor`` or ``ListStateDescriptor``."""

    name: str
    type: str | None = None
    #: which state it describes (in messages: "value state 'count'")
    kind: ClassVar[StateKind]

    def __post_init__(self):
        _check_name(self.name, f"{self.kind} state")
        _check_type(self.type, f"{self.kind} state {self.name!r}")


@dataclass(frozen=True)
class ValueStateDescriptor(StateDescriptor):
    """One value per key: ``type`` is a DDL type ("long", "a long, b string" for a record) or None for JSON."""

    kind: ClassVar[StateKind] = StateKind.VALUE


@dataclass(frozen=True)
class ListStateDescriptor(StateDescriptor):
    """A list of values per key: ``type`` is the DDL type of one element, or None for JSON values."""

    kind: ClassVar[StateKind] = StateKind.LIST


class State(abc.ABC):
    """A handle on one state, bound to what is current: the key (keyed state) or the subtask (operator state)."""

    __slots__ = ()

    @abc.abstractmethod
    def clear(self) -> None:
        """Remove what the state holds."""


class ValueState(State):
    """One value (Flink's ``ValueState``): ``value()`` is None until ``update``."""

    __slots__ = ()

    @abc.abstractmethod
    def value(self):
        """The value, a copy (None when there is none)."""

    @abc.abstractmethod
    def update(self, value) -> None:
        """Replace the value (None clears it)."""


class ListState(State):
    """A list of values (Flink's ``ListState``): ``get()`` is [] until something is added; None is no element."""

    __slots__ = ()

    @abc.abstractmethod
    def get(self) -> list:
        """The values, as a new list (changing it does not change the state)."""

    @abc.abstractmethod
    def add(self, value) -> None:
        """Append one value."""

    @abc.abstractmethod
    def add_all(self, values) -> None:
        """Append several values (a list); if one is refused, none is added."""

    @abc.abstractmethod
    def update(self, values) -> None:
        """Replace every value by ``values`` (a list)."""


ListState.register(OperatorListState)  # and so its union list state: one vocabulary for keyed and operator state
