"""What an operator kind is, and the registry of kinds by name.

An operator kind (a running reduce, a running aggregate, a keyed process function, a co-process
function, the non-keyed operator) is one class behind :class:`OperatorKind`: it says, as
attributes and methods, everything the streaming runtime and the magics decide by kind -- keyed or
not, timed or not, its output's columns, what emitted an output (for the changelog's errors), what
the handover choice needs, how the per-key core's part for it is made, and the ``%%fwstream``
operations that build it. No other module compares a kind's name: they read these. Its ``name`` is
what savepoints (``"kind"``), default job names and the job graph record, unchanged on disk.

Adding a kind is one class here and its registration (``register``, imported by
``fw_magics/operators/__init__.py``); docs/architecture.md, "Add an operator kind".
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .spec import KeyedOperatorSpec

#: What emitted an output of the per-key core (the changelog's ``__fw_kind``): a record, or a timer.
ELEMENT, TIMER = "element", "timer"
#: An output that withdraws its key's row (a mirror's deleted row): ``latest()`` leaves the key out.
REMOVED = "removed"


def emitted(result) -> Iterable:
    """The rows a function returned: None, an iterable of rows, or one row (tuple, dict, value)."""
    if result is None:
        return ()
    if isinstance(result, (tuple, dict, str, bytes, int, float)) or not hasattr(result, "__iter__"):
        return (result,)
    return result


@dataclass(frozen=True)
class Operation:
    """One ``%%fwstream`` operation that builds an operator of a kind: ``name`` (the magic's word), what its
    ``fn=`` is (``fn``, in messages), its lines in the magic's help, how many ``inputs`` it reads, whether it
    takes ``--between`` (``interval``) and a lambda as ``fn=`` (``lambdas``), and ``build(first, second,
    key, key2, fn, between)``: the stream API's calls that make it (``second``, ``key2``, ``between``: two
    inputs only)."""

    name: str
    fn: str
    help: tuple[str, ...]
    build: Callable
    inputs: int = 1
    interval: bool = False
    lambdas: bool = False


class OperatorKind(abc.ABC):
    """One kind of streaming operator (see the module docstring); one instance each, in the registry."""

    #: its name, as savepoints, default job names and events write it
    name: str = "?"
    #: whether it keeps state per key (the per-key core) rather than operator state per subtask
    keyed: bool = True
    #: whether its function keeps event-time timers and is closed after each run (a process function's)
    timed: bool = False
    #: the ``%%fwstream`` operations that build it, in the order the magic lists them
    operations: tuple[Operation, ...] = ()

    @property
    def graph_kind(self) -> str:
        """What the job graph calls its operator (its step's ``kind``)."""
        return self.name

    def step_name(self, spec) -> str:
        """Its operator's name in the job graph: "reduce(add)"."""
        return f"{self.graph_kind}({spec.label})"

    @abc.abstractmethod
    def spec(self, **fields):
        """What the runtime is given to run an operator of this kind (``fw_magics.operators.spec``)."""

    def __reduce__(self):  # a task's copy of a spec holds the registry's kind, not a copy of it
        return kind_named, (self.name,)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"<operator kind {self.name}>"


class KeyedKind(OperatorKind):
    """A kind run by the per-key core, one key at a time, the same in every mode."""

    keyed = True
    #: whether its outputs are records of its input (a reduce's: the key columns among them), else the key
    #: column(s) then the result's columns
    emits_records: bool = False

    def spec(self, **fields) -> KeyedOperatorSpec:
        return KeyedOperatorSpec(kind=self, **fields)

    def output(self, spec):
        """The ``StateType`` of its outputs after the key: the input's records (``emits_records``) or the result."""
        return spec.record if self.emits_records else spec.result

    @abc.abstractmethod
    def emitter(self, spec) -> str:
        """What emitted an output, as the changelog's errors name it: "reduce function 'add'"."""

    @abc.abstractmethod
    def per_key(self, core):
        """Its part of the per-key core (``KeyedCore``): ``begin()``, ``element(record)``, ``timer(ts)``, ``end()``."""

    def declared_states(self, spec) -> dict | None:
        """The keyed state a key of this kind holds: name -> (its ``StateKind``, its ``StateType``; ddl None or
        no type: JSON values). A savepoint's states are checked against it before a restore (a name it does
        not declare would be lost, a value of another type fail later); None: not declared, not checked."""
        return None


_KINDS: dict[str, OperatorKind] = {}


def register(kind: OperatorKind) -> OperatorKind:
    """Add ``kind`` to the registry (once per name); returns it."""
    if not isinstance(kind, OperatorKind):
        raise TypeError(f"register takes an OperatorKind; got {type(kind).__name__}")
    if kind.name in _KINDS:
        raise ValueError(f"operator kind {kind.name!r} is registered twice")
    taken = {op.name for known in _KINDS.values() for op in known.operations}
    clash = [op.name for op in kind.operations if op.name in taken]
    if clash:
        raise ValueError(f"operation {clash[0]!r} of operator kind {kind.name!r} is another kind's")
    _KINDS[kind.name] = kind
    return kind


def kind_named(name: str) -> OperatorKind:
    """The registered kind called ``name``; a KeyError for another name (a caller that reads a name from
    outside checks it with ``names()`` first)."""
    return _KINDS[name]


def kinds() -> tuple[OperatorKind, ...]:
    """Every registered kind, in the order they were registered."""
    return tuple(_KINDS.values())


def names() -> tuple[str, ...]:
    return tuple(_KINDS)


def operations() -> tuple[Operation, ...]:
    """Every kind's ``%%fwstream`` operations, kind by kind."""
    return tuple(op for kind in _KINDS.values() for op in kind.operations)
