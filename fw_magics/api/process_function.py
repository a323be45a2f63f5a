"""Flink's (non-keyed) ProcessFunction for fw-magics streams, and what the runtime is given to run one.

A non-keyed operator runs as ``p`` parallel subtasks; each record goes to one of them (the
subtask of the source that read it). Its state is *operator state* (FLIP-8): one store per
subtask, with list, union list and broadcast state, which a savepoint keeps and a restore at
another parallelism redistributes. A function gets that state by also being a
:class:`fw_magics.state.CheckpointedFunction`, as in Flink (the classic ``BufferingSink``)::

    class BufferingSink(fw.ProcessFunction, fw.CheckpointedFunction):
        schema = "flushed array<long>"                    # what it emits

        def __init__(self, threshold=3):
            self.threshold = threshold

        def initialize_state(self, ctx):                  # before the subtask's records
            self.state = ctx.get_list_state("buffered")
            self.buffer = self.state.get() if ctx.is_restored() else []

        def process_element(self, record, ctx):
            self.buffer.append(record.v)
            if len(self.buffer) >= self.threshold:
                yield (self.buffer,)
                self.buffer = []

        def snapshot_state(self, ctx):                    # before the state is saved
            self.state.update(self.buffer)

    job = fw.from_files(path, "parquet", "v long").process(BufferingSink()).start(parallelism=2)

``process_element(record, ctx)`` may return (or yield) output rows: tuples, dicts, records or
one plain value, matching ``schema`` (a DDL string, on the class or passed to ``process``).
``ctx.subtask_index`` and ``ctx.parallelism`` say which subtask of how many runs it. When the
runtime calls each method is in docs/state.md ("A user's operator state").
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import FullWindowError

#: ``OperatorSpec.kind``: what ``fw_magics.runtime.streaming`` runs as a non-keyed operator job.
OPERATOR = "operator"


class ProcessFunction:
    """A function of a (non-keyed) stream, called once per record (Flink's ``ProcessFunction``).

    Override ``process_element``; set ``schema`` (a DDL string of the output columns) on the
    class or pass it to ``DataStream.process(fn, schema=...)``. To keep operator state, also
    derive from ``fw.CheckpointedFunction`` and define ``initialize_state(ctx)`` and
    ``snapshot_state(ctx)`` (see the module docstring).
    """

    schema: str | None = None

    def process_element(self, record, ctx):
        raise NotImplementedError


class ProcessContext:
    """``ctx`` of ``process_element``: which subtask of how many runs the function."""

    __slots__ = ("subtask_index", "parallelism")

    def __init__(self, subtask_index: int, parallelism: int):
        self.subtask_index = subtask_index
        self.parallelism = parallelism

    def get_index_of_this_subtask(self) -> int:
        """Flink's name for ``subtask_index``."""
        return self.subtask_index

    def __repr__(self) -> str:
        return f"ProcessContext(subtask {self.subtask_index} of {self.parallelism})"


def is_checkpointed(function) -> bool:
    """Whether ``function`` keeps operator state (defines both ``initialize_state`` and ``snapshot_state``)."""
    return all(callable(getattr(function, m, None)) for m in ("initialize_state", "snapshot_state"))


def check_process_function(function) -> str:
    """Refuse in one line anything but a ProcessFunction instance (with both CheckpointedFunction
    methods or neither); returns its name."""
    if not isinstance(function, ProcessFunction):
        raise FullWindowError(
            f"process takes an fw.ProcessFunction (process_element(record, ctx); with fw.CheckpointedFunction "
            f"for operator state); got {type(function).__name__} {function!r:.60}"
        )
    name = type(function).__name__
    if type(function).process_element is ProcessFunction.process_element:
        raise FullWindowError(f"{name} must define process_element(record, ctx)")
    check_both_or_neither(function, name)
    return name


def check_both_or_neither(function, name: str) -> None:
    """Refuse in one line a function with one of ``initialize_state`` and ``snapshot_state`` but not the other."""
    present = [m for m in ("initialize_state", "snapshot_state") if callable(getattr(function, m, None))]
    if len(present) == 1:
        missing = ({"initialize_state", "snapshot_state"} - set(present)).pop()
        raise FullWindowError(f"{name} defines {present[0]} but not {missing}; accepted: both (operator state, "
                              "as fw.CheckpointedFunction) or neither")


@dataclass(frozen=True)
class OperatorSpec:
    """Everything the runtime needs to run a non-keyed operator; built by ``DataStream.process``.

    ``function``: the user's ProcessFunction; ``record``: the input records' type; ``result``:
    the output columns' type (``keyed_process.StateType`` both).
    """

    function: object
    label: str
    record: object
    result: object
    kind: str = OPERATOR
    event_time: str | None = None  # a non-keyed operator has no timers

    @property
    def key_names(self) -> tuple[str, ...]:
        return ()

    @property
    def checkpointed(self) -> bool:
        return is_checkpointed(self.function)
