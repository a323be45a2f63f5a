"""One subtask of a non-keyed operator for one micro-batch: restore its state, run its records, snapshot.

Spark runs each micro-batch as fresh tasks, so a subtask's function object does not live from
one micro-batch to the next: what lives is its operator state, one JSON snapshot per subtask
(``fw_magics.state.snapshot_subtask``'s shape) in Spark's state store. Every time the subtask
runs, :func:`run_subtask` does what Flink does when a task starts from a checkpoint::

    store = the subtask's snapshot restored in place (fresh when it has none: is_restored() false)
    fn = a copy of the user's function
    fn.initialize_state(ctx)                      # ctx.is_restored(), ctx.get_list_state(...)
    fn.process_element(record, ctx) ...           # its records, in the order the source read them
    fn.snapshot_state(ctx); snapshot the store    # the new JSON, written back to the state store

so ``is_restored()`` is false exactly once per subtask of a fresh job (its first start), and
true after: when a micro-batch starts from the last one's checkpoint, and when a job starts
from a savepoint (each new subtask given its redistributed units). Pure Python, no Spark.
"""

from __future__ import annotations

import copy
import json

from ....api.checkpointed import initialize_function, is_checkpointed, snapshot_function
from ....api.process_function import ProcessContext
from ....operators.base import emitted
from ....operators.spec import OperatorSpec
from ....state import OperatorStateStore, restore_subtask, snapshot_subtask


class SubtaskState:
    """One subtask's operator state for one run of it (a micro-batch): restored or fresh, the function
    initialized over it, then snapshot back to JSON text. The non-keyed operator (``run_subtask``) and a
    keyed operator whose function is also a ``CheckpointedFunction`` (``query.KeyedProcessor``, over all
    the keys of its state partition) both go through it."""

    def __init__(self, function, subtask: int, parallelism: int, stored: str | None):
        """``stored``: the subtask's snapshot as JSON text (None: a fresh subtask, ``is_restored()`` false)."""
        if stored is None:
            self.store = OperatorStateStore(subtask, parallelism)
        else:
            self.store = restore_subtask(json.loads(stored), subtask, parallelism)
        self.function = function
        self.checkpointed = is_checkpointed(function)
        if self.checkpointed:
            initialize_function(function, self.store)

    def snapshot(self, checkpoint_id: int) -> str:
        """``snapshot_state`` (``checkpoint_id``: the micro-batch id), then the store as JSON text."""
        if self.checkpointed:
            snapshot = snapshot_function(self.function, self.store, checkpoint_id)
        else:
            snapshot = snapshot_subtask(self.store)
        return json.dumps(snapshot, separators=(",", ":"), allow_nan=False)


def run_subtask(spec: OperatorSpec, subtask: int, parallelism: int, stored: str | None, records,
                checkpoint_id: int) -> tuple[str, list]:
    """Run subtask ``subtask`` of ``parallelism`` over ``records``; returns (its new snapshot as JSON text,
    the values ``process_element`` returned, in order).

    ``stored``: the subtask's snapshot as JSON text (None: a fresh subtask); ``checkpoint_id``:
    the id ``snapshot_state`` sees (the micro-batch id).
    """
    function = copy.deepcopy(spec.function)
    state = SubtaskState(function, subtask, parallelism, stored)
    context = ProcessContext(subtask, parallelism)
    outputs: list = []
    for record in records:
        outputs.extend(emitted(function.process_element(record, context)))
    return state.snapshot(checkpoint_id), outputs
