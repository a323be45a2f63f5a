"""The non-keyed operator: ``DataStream.process(fn)``, an ``fw.ProcessFunction`` per subtask with operator
state (FLIP-8) rather than state per key. Its subtasks run in ``fw_magics.runtime.streaming.operator``."""

from __future__ import annotations

from .base import OperatorKind
from .spec import OperatorSpec


class Operator(OperatorKind):
    """No key, no timers: each subtask's function over the records its source subtask reads; the job graph
    calls it a "process" operator, as it calls a keyed process function's."""

    name = "operator"
    keyed = False

    @property
    def graph_kind(self) -> str:
        return "process"

    def spec(self, **fields) -> OperatorSpec:
        return OperatorSpec(kind=self, **fields)


