"""Rescalable operator state (FLIP-8): list, union list and broadcast state and their redistribution.

Pure Python (layer 2, "pure models"): imports only :mod:`fw_magics.errors` and the
standard library, never Spark or Arrow.

- :func:`redistribute` / :func:`assignment`: Flink's round-robin repartitioner, on plain
  lists of units, and the same as a what-if table of positions
  (:mod:`fw_magics.state.repartition`).
- :class:`OperatorStateStore` with :class:`ListState`, :class:`UnionListState`,
  :class:`BroadcastState` (:mod:`fw_magics.state.operator_state`).
- What a user function implements to keep this state (``CheckpointedFunction`` and its two
  contexts) is the user API's: :mod:`fw_magics.api.checkpointed`.
- :func:`snapshot_subtask` / :func:`restore_subtasks` / :func:`redistribute_snapshots` /
  :func:`restore_subtask`: JSON snapshots of a subtask, restoring many at another
  parallelism, and one in place (:mod:`fw_magics.state.snapshots`).
- :func:`operator_state_document` / :func:`validate_operator_state` /
  :func:`parse_operator_state`: the versioned savepoint part (:mod:`fw_magics.state.document`).

::

    from fw_magics.state import redistribute
    old = [{"partitions": ["kp1", "kp2"]}, {"partitions": ["kp3", "kp4"]}]
    redistribute(old, 1, {"partitions": "split"})  # [{'partitions': ['kp1', 'kp2', 'kp3', 'kp4']}]
    redistribute(old, 4, {"partitions": "split"})  # one partition per subtask
"""

from ..errors.state import StateError
from .document import (
    OPERATOR_STATE_FORMAT,
    OPERATOR_STATE_VERSION,
    operator_state_document,
    parse_operator_state,
    validate_operator_state,
)
from .operator_state import BroadcastState, ListState, OperatorStateStore, UnionListState
from .repartition import MODES, assignment, redistribute
from .snapshots import (
    redistribute_snapshots,
    restore_subtask,
    restore_subtasks,
    snapshot_subtask,
    validate_subtask_snapshot,
)

__all__ = [
    "MODES", "OPERATOR_STATE_FORMAT", "OPERATOR_STATE_VERSION", "BroadcastState", "ListState", "OperatorStateStore",
    "StateError", "UnionListState", "assignment", "operator_state_document", "parse_operator_state", "redistribute",
    "redistribute_snapshots", "restore_subtask", "restore_subtasks", "snapshot_subtask", "validate_operator_state",
    "validate_subtask_snapshot",
]
