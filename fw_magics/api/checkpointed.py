"""Operator state of a user function: Flink's ``CheckpointedFunction`` with its two contexts, in plain Python.

A function that keeps operator state implements two methods::

    class PartitionReader(CheckpointedFunction):
        def initialize_state(self, context):
            self.offsets = context.operator_state_store.get_list_state("offsets")
            if not context.is_restored():
                # first start: take this subtask's share of the partitions
                self.offsets.update([[p, 0] for p in range(4)
                                     if p % context.parallelism == context.subtask_index])

        def snapshot_state(self, context):
            pass  # self.offsets is already up to date; flush fields into state here

``initialize_state`` runs once per subtask before any record, on a fresh start and on a
restore (possibly at another parallelism, with the units already redistributed);
``snapshot_state`` runs at every checkpoint or savepoint, just before the store is saved
with :func:`~fw_magics.state.snapshot_subtask`. :func:`initialize_function` and
:func:`snapshot_function` make the contexts and call them. The states themselves (list, union
list, broadcast) and their redistribution are the pure model in :mod:`fw_magics.state`.
"""

import abc
import time

from ..errors import FullWindowError
from ..errors.state import StateError, show, type_name
from ..state.operator_state import OperatorStateStore
from ..state.snapshots import snapshot_subtask

METHODS = ("initialize_state", "snapshot_state")


class FunctionInitializationContext:
    """What ``initialize_state`` sees: the subtask's operator state store and whether it was restored.

    ``is_restored()`` is true when the job starts from a checkpoint or savepoint, for every
    subtask, even one that received no units (as in Flink); ``subtask_index`` and
    ``parallelism`` say which subtask of how many this is.
    """

    def __init__(self, store: OperatorStateStore):
        if not isinstance(store, OperatorStateStore):
            raise StateError(f"store is a {type_name(store)}; accepted: an OperatorStateStore")
        self._store = store

    @property
    def operator_state_store(self) -> OperatorStateStore:
        """The store to get list, union list and broadcast states from."""
        return self._store

    def is_restored(self) -> bool:
        """True if this start restores state from a checkpoint or savepoint."""
        return self._store.is_restored()

    def get_list_state(self, name: str):
        """``operator_state_store.get_list_state(name)``: a ListState, split over the subtasks on a rescale."""
        return self._store.get_list_state(name)

    def get_union_list_state(self, name: str):
        """``operator_state_store.get_union_list_state(name)``: every subtask gets all units on a restore."""
        return self._store.get_union_list_state(name)

    def get_broadcast_state(self, name: str):
        """``operator_state_store.get_broadcast_state(name)``: a dict every subtask holds an equal copy of."""
        return self._store.get_broadcast_state(name)

    @property
    def subtask_index(self) -> int:
        """This subtask's index, 0 to ``parallelism - 1``."""
        return self._store.subtask_index

    @property
    def parallelism(self) -> int:
        """How many subtasks the operator runs with now."""
        return self._store.parallelism

    def __repr__(self) -> str:
        return (
            f"FunctionInitializationContext(subtask {self.subtask_index} of {self.parallelism}, "
            f"restored={self.is_restored()})"
        )


class FunctionSnapshotContext:
    """What ``snapshot_state`` sees: the checkpoint's id and its timestamp (milliseconds since the epoch)."""

    def __init__(self, checkpoint_id: int, timestamp: int):
        if type(checkpoint_id) is not int or checkpoint_id < 0:
            raise StateError(f"checkpoint_id {show(checkpoint_id)}; accepted: an integer >= 0")
        if type(timestamp) is not int or timestamp < 0:
            raise StateError(f"timestamp {show(timestamp)}; accepted: milliseconds since the epoch, an integer >= 0")
        self._checkpoint_id = checkpoint_id
        self._timestamp = timestamp

    @property
    def checkpoint_id(self) -> int:
        """The id of the checkpoint or savepoint being taken; ids grow over a job's life."""
        return self._checkpoint_id

    @property
    def timestamp(self) -> int:
        """When the checkpoint was triggered, in milliseconds since the epoch."""
        return self._timestamp

    def __repr__(self) -> str:
        return f"FunctionSnapshotContext(checkpoint_id={self._checkpoint_id}, timestamp={self._timestamp})"


class CheckpointedFunction(abc.ABC):
    """Base class of a user function with operator state (Flink's ``CheckpointedFunction``).

    Implement both methods: ``initialize_state(context)`` gets its states from
    ``context.operator_state_store`` (and reads what was restored), ``snapshot_state(context)``
    brings the states up to date before they are saved. See the module docstring for an example.
    """

    @abc.abstractmethod
    def initialize_state(self, context: FunctionInitializationContext) -> None:
        """Get the operator states (and read restored units) before the first record."""

    @abc.abstractmethod
    def snapshot_state(self, context: FunctionSnapshotContext) -> None:
        """Write what the function holds in fields into its operator states before they are saved."""


def initialize_function(function, store: OperatorStateStore) -> None:
    """Call ``function.initialize_state`` with a context for ``store``."""
    _check_function(function)
    function.initialize_state(FunctionInitializationContext(store))


def snapshot_function(function, store: OperatorStateStore, checkpoint_id: int, timestamp: int = None) -> dict:
    """Call ``function.snapshot_state`` for checkpoint ``checkpoint_id``, then return the store's snapshot.

    ``timestamp`` defaults to now (milliseconds since the epoch). The result is the JSON
    data of :func:`~fw_magics.state.snapshot_subtask`.
    """
    _check_function(function)
    if timestamp is None:
        timestamp = time.time_ns() // 1_000_000
    context = FunctionSnapshotContext(checkpoint_id, timestamp)
    if not isinstance(store, OperatorStateStore):
        raise StateError(f"store is a {type_name(store)}; accepted: an OperatorStateStore")
    function.snapshot_state(context)
    return snapshot_subtask(store)


def _check_function(function):
    if not is_checkpointed(function):
        raise StateError(
            f"function is a {type_name(function)}; accepted: a CheckpointedFunction "
            "(with initialize_state(context) and snapshot_state(context))"
        )


def declared_modes(function) -> dict:
    """Each operator state ``function.initialize_state`` asks for -> its mode (``"split"``, ``"union"``,
    ``"broadcast"``), learned on a copy (the user's object is left untouched) for a fresh subtask and for a
    restored one; {} when it cannot be asked (it raised): what a savepoint records is then all that is known."""
    import copy

    found = {}
    for store in (OperatorStateStore(), OperatorStateStore.restored(0, 1, {})):
        try:
            probe = copy.deepcopy(function)
            initialize_function(probe, store)
        except Exception:  # a function that needs its job to initialize: not learned here
            continue
        found.update({name: store.mode_of(name) for name in store.state_names() if name not in found})
    return found


def is_checkpointed(function) -> bool:
    """Whether ``function`` keeps operator state (defines both ``initialize_state`` and ``snapshot_state``)."""
    return all(callable(getattr(function, m, None)) for m in METHODS)


def check_both_or_neither(function, name: str) -> None:
    """Refuse in one line a function with one of ``initialize_state`` and ``snapshot_state`` but not the other."""
    present = [m for m in METHODS if callable(getattr(function, m, None))]
    if len(present) == 1:
        missing = (set(METHODS) - set(present)).pop()
        raise FullWindowError(f"{name} defines {present[0]} but not {missing}; accepted: both (operator state, "
                              "as fw.CheckpointedFunction) or neither")
