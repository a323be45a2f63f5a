"""Flink's (non-keyed) ProcessFunction for fw-magics streams, and the context it sees.

A non-keyed operator runs as ``p`` parallel subtasks; each record goes to one of them (the
subtask of the source that read it). Its state is *operator state* (FLIP-8): one store per
subtask, with list, union list and broadcast state, which a savepoint keeps and a restore at
another parallelism redistributes. A function gets that state by also being a
:class:`fw_magics.api.checkpointed.CheckpointedFunction`, as in Flink (the classic ``BufferingSink``)::

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

import abc

from .function import Function, check_function


class ProcessFunction(Function):
    """A function of a (non-keyed) stream, called once per record (Flink's ``ProcessFunction``).

    Override ``process_element``; set ``schema`` (a DDL string of the output columns) on the
    class or pass it to ``DataStream.process(fn, schema=...)``. To keep operator state, also
    derive from ``fw.CheckpointedFunction`` and define ``initialize_state(ctx)`` and
    ``snapshot_state(ctx)`` (see the module docstring).
    """

    schema: str | None = None
    may_keep_operator_state = True

    @abc.abstractmethod
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


def check_process_function(fn) -> str:
    """The one check (``check_function``) of what ``DataStream.process`` takes; returns the function's name."""
    return check_function(fn, ProcessFunction, "process takes an fw.ProcessFunction (process_element(record, ctx); "
                          "with fw.CheckpointedFunction for operator state)")[1]
