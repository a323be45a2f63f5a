"""Operator state of one subtask: list, union list and broadcast state in a per-subtask store.

Operator state is *non-keyed*: it belongs to one parallel subtask of an operator, not to
a key (a source's partitions with their read offsets, a per-subtask buffer). To let a job
restore at another parallelism, it is kept as a list of units per state name (FLIP-8),
and each name has one mode that says how the units move on a rescale
(:func:`fw_magics.state.redistribute`):

:class:`ListState` (mode ``"split"``)
    On restore the units of all subtasks are split over the new subtasks; each unit goes
    to exactly one of them. For work that can be handed around: a source's partitions.
:class:`UnionListState` (mode ``"union"``)
    On restore every subtask receives the units of all old subtasks and picks what it
    needs. Clear it and add only this subtask's own units when snapshotting; otherwise
    the next restore hands every subtask each unit once per old subtask.
:class:`BroadcastState` (mode ``"broadcast"``)
    A dict every subtask holds an equal copy of (rules, a lookup table). On restore new
    subtask ``i`` takes old subtask ``i % p``'s copy.

Units, and a broadcast state's keys and values, must be JSON values (see
:mod:`fw_magics.values.json_values`); anything else is refused in one line when it is added and
again when the store is snapshot, since a unit may have been changed in between.

The :class:`OperatorStateStore` of a subtask hands these out by name (one mode per name)
and is what :func:`~fw_magics.state.snapshot_subtask` saves and
:func:`~fw_magics.state.restore_subtasks` rebuilds.
"""

from collections.abc import Mapping, MutableMapping

from ..errors.state import StateError, show, type_name
from ..values.json_values import check_key, check_value, json_copy


class ListState:
    """A list of units that is split over the new subtasks on a rescale (Flink's ``ListState``; a
    ``fw_magics.api.state.ListState``, as keyed list state is: the user API registers it).

    ``get()`` returns the units (a new list); ``add(unit)``, ``add_all(units)`` and
    ``update(units)`` (replace all) check that every unit is a JSON value before changing
    anything; ``clear()`` empties it. ``len(state)`` and ``for unit in state`` work too.
    """

    mode = "split"
    kind = "list state"

    def __init__(self, name: str, units=()):
        self._name = name
        self._units = []
        self.update(units)

    @property
    def name(self) -> str:
        """The state's name in its store."""
        return self._name

    def get(self) -> list:
        """The units, as a new list (changing the list does not change the state)."""
        return list(self._units)

    def add(self, unit) -> None:
        """Append one unit (a JSON value)."""
        check_value(self._label(len(self._units)), unit)
        self._units.append(unit)

    def add_all(self, units) -> None:
        """Append several units (a list); if one is not a JSON value, none is added."""
        units = self._as_units(units, "add_all")
        for k, unit in enumerate(units):
            check_value(self._label(len(self._units) + k), unit)
        self._units.extend(units)

    def update(self, units) -> None:
        """Replace all units by ``units`` (a list); if one is not a JSON value, the state is left as it was."""
        units = self._as_units(units, "update")
        for k, unit in enumerate(units):
            check_value(self._label(k), unit)
        self._units = units

    def clear(self) -> None:
        """Remove every unit."""
        self._units = []

    def _as_units(self, units, method) -> list:
        # a str, bytes or dict is iterable but almost surely meant as one unit, not many
        if isinstance(units, (str, bytes, bytearray, Mapping)) or not hasattr(units, "__iter__"):
            raise StateError(
                f"{method}() of {self.kind} {self._name!r} got a {type_name(units)}; accepted: a list of units "
                f"(use add() for a single unit)"
            )
        return list(units)

    def _label(self, index) -> str:
        return f"unit {index} of {self.kind} {self._name!r}"

    def units(self) -> list:
        """The units to snapshot, each checked again and deep-copied (a plain JSON list)."""
        for k, unit in enumerate(self._units):
            check_value(self._label(k), unit)
        return [json_copy(unit) for unit in self._units]

    def __iter__(self):
        return iter(list(self._units))

    def __len__(self) -> int:
        return len(self._units)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._name!r}, {show(self._units, 200)})"


class UnionListState(ListState):
    """A list of units that every subtask receives in full on restore (Flink's union list state).

    Same methods as :class:`ListState`. After a restore it holds the units of *all* old
    subtasks, in old-subtask order; a subtask typically reads them in ``initialize_state``,
    keeps its share, and in ``snapshot_state`` calls ``update()`` with only its own units.
    """

    mode = "union"
    kind = "union list state"


class BroadcastState(MutableMapping):
    """A dict that every subtask holds an equal copy of (Flink's ``BroadcastState``).

    Use it like a dict: ``state[key] = value``, ``state.get(key)``, ``del state[key]``,
    ``key in state``, ``state.items()``. Keys must be JSON scalars (str, int, finite float,
    bool, None), values JSON values. On restore at parallelism ``p'`` new subtask ``i``
    gets old subtask ``i % p``'s copy, so keep the copies equal: change it only from
    input every subtask sees (a broadcast stream), the same way everywhere.

    Its units in a snapshot are its ``[key, value]`` pairs, in insertion order.
    """

    mode = "broadcast"
    kind = "broadcast state"

    def __init__(self, name: str, items=()):
        self._name = name
        self._entries = {}
        for key, value in dict(items).items():
            self[key] = value

    @property
    def name(self) -> str:
        """The state's name in its store."""
        return self._name

    def __getitem__(self, key):
        return self._entries[key]

    def __setitem__(self, key, value) -> None:
        check_key(self._name, key)
        check_value(f"value for key {key!r} of broadcast state {self._name!r}", value)
        self._entries[key] = value

    def __delitem__(self, key) -> None:
        del self._entries[key]

    def __iter__(self):
        return iter(list(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def units(self) -> list:
        """The ``[key, value]`` pairs to snapshot, values checked again and deep-copied."""
        pairs = []
        for key, value in self._entries.items():
            check_value(f"value for key {key!r} of broadcast state {self._name!r}", value)
            pairs.append([key, json_copy(value)])
        return pairs

    def __repr__(self) -> str:
        return f"BroadcastState({self._name!r}, {show(self._entries, 200)})"


STATE_TYPES = {cls.mode: cls for cls in (ListState, UnionListState, BroadcastState)}


class OperatorStateStore:
    """The operator state of one subtask: named list, union list and broadcast states.

    ``get_list_state(name)``, ``get_union_list_state(name)`` and
    ``get_broadcast_state(name)`` return the state of that name, creating it empty the
    first time (or handing out what was restored). A name has one mode: asking for a name
    in another mode than it has (or was restored with) is a one-line error.

    ``subtask_index`` and ``parallelism`` say which subtask of how many this store
    belongs to; ``is_restored()`` is true when it was rebuilt from a snapshot (then every
    restored name is present, possibly empty, even before the function asks for it, and
    it is saved again by the next snapshot whether asked for or not, as in Flink).
    Stores are made by :func:`~fw_magics.state.restore_subtasks`, or fresh with
    ``OperatorStateStore(subtask_index, parallelism)``.
    """

    def __init__(self, subtask_index: int = 0, parallelism: int = 1):
        if type(parallelism) is not int or parallelism < 1:
            raise StateError(f"parallelism {show(parallelism)}; accepted: an integer >= 1")
        if type(subtask_index) is not int or not 0 <= subtask_index < parallelism:
            raise StateError(
                f"subtask_index {show(subtask_index)} of parallelism {parallelism}; "
                f"accepted: an integer from 0 to {parallelism - 1}"
            )
        self._subtask_index = subtask_index
        self._parallelism = parallelism
        self._states = {}
        self._restored = False
        self._restored_names = frozenset()

    @property
    def subtask_index(self) -> int:
        """Which subtask this store belongs to (0-based)."""
        return self._subtask_index

    @property
    def parallelism(self) -> int:
        """How many subtasks the operator runs with."""
        return self._parallelism

    def is_restored(self) -> bool:
        """True if the store was rebuilt from snapshots (even when this subtask got no units)."""
        return self._restored

    def get_list_state(self, name: str) -> ListState:
        """The :class:`ListState` called ``name`` (split over the subtasks on a rescale)."""
        return self._get(name, ListState)

    def get_union_list_state(self, name: str) -> UnionListState:
        """The :class:`UnionListState` called ``name`` (every subtask gets all units on restore)."""
        return self._get(name, UnionListState)

    def get_broadcast_state(self, name: str) -> BroadcastState:
        """The :class:`BroadcastState` called ``name`` (every subtask holds an equal copy)."""
        return self._get(name, BroadcastState)

    def state_names(self) -> list:
        """The names of all states in this store (asked for or restored), sorted."""
        return sorted(self._states)

    def mode_of(self, name: str) -> str:
        """The mode (``"split"``, ``"union"`` or ``"broadcast"``) of the state called ``name``."""
        if name not in self._states:
            known = ", ".join(map(repr, self.state_names())) or "none yet"
            raise StateError(f"no state {show(name)} in this store; accepted: {known}")
        return self._states[name].mode

    def state(self, name: str):
        """The state called ``name`` in whatever mode it has (a ListState, UnionListState or BroadcastState).

        Unlike the ``get_*_state`` methods this never creates a state: a name not in the store
        is a one-line error listing the names it has.
        """
        self.mode_of(name)  # the one-line error for an unknown name
        return self._states[name]

    def _get(self, name, cls):
        if not isinstance(name, str) or not name:
            raise StateError(f"state name {show(name)}; accepted: a non-empty string")
        state = self._states.get(name)
        if state is None:
            state = self._states[name] = cls(name)
        elif type(state) is not cls:
            restored = " restored as" if name in self._restored_names else ""
            raise StateError(
                f"state {name!r} is{restored} a {state.kind} (mode {state.mode!r}), asked for as a {cls.kind}; "
                "accepted: one mode per name (use another name)"
            )
        return state

    @classmethod
    def restored(cls, subtask_index: int, parallelism: int, states) -> "OperatorStateStore":
        """A store rebuilt from state already redistributed to this subtask: ``is_restored()`` is true.

        ``states`` maps each name to ``(mode, units)``, the units already checked JSON values
        (broadcast units as ``[key, value]`` pairs); every name is present afterwards, empty
        where it got no units. The units are deep-copied. Use
        :func:`~fw_magics.state.restore_subtasks` to restore from snapshots: it checks them and
        redistributes their units first.
        """
        store = cls(subtask_index, parallelism)
        for name, (mode, units) in states.items():
            if mode == "broadcast":
                store._states[name] = BroadcastState(name, [(key, json_copy(value)) for key, value in units])
            else:
                store._states[name] = STATE_TYPES[mode](name, [json_copy(unit) for unit in units])
        store._restored = True
        store._restored_names = frozenset(states)
        return store

    def __repr__(self) -> str:
        return (
            f"OperatorStateStore(subtask {self._subtask_index} of {self._parallelism}, "
            f"restored={self._restored}, states={self.state_names()})"
        )
