"""Snapshots of operator state: save one subtask's store as JSON data, restore many at any parallelism.

A snapshot of one subtask is plain JSON data, one entry per state name::

    {"offsets": {"mode": "split", "units": [["kp1", 42], ["kp2", 7]]},
     "rules":   {"mode": "broadcast", "units": [["max", 10]]}}

``mode`` is ``"split"`` (:class:`~fw_magics.state.ListState`), ``"union"``
(:class:`~fw_magics.state.UnionListState`) or ``"broadcast"``
(:class:`~fw_magics.state.BroadcastState`, whose units are its ``[key, value]`` pairs).
Units are JSON values; nothing is pickled, so a snapshot can be written with ``json.dump``
and read back without running anything.

Restoring ``p`` old snapshots at ``p'`` subtasks moves the units with
:func:`~fw_magics.state.redistribute` (split, union or broadcast as Flink does), then
builds one :class:`~fw_magics.state.OperatorStateStore` per new subtask::

    snapshots = [snapshot_subtask(store) for store in stores]      # at parallelism 2
    new_stores = restore_subtasks(snapshots, 4)                     # at parallelism 4
"""

from collections.abc import Mapping

from ..errors.state import StateError, show, type_name
from ..values.json_values import check_key, check_value
from .operator_state import OperatorStateStore
from .repartition import MODES, redistribute

_ACCEPTED_MODES = "'split', 'union' or 'broadcast'"


def snapshot_subtask(store: OperatorStateStore) -> dict:
    """The JSON snapshot of one subtask's store: ``{name: {"mode": ..., "units": [...]}}``.

    Every state in the store is included (asked for or restored), names sorted, units
    deep-copied, so later changes to the state do not change the snapshot. A unit that is
    no longer a JSON value (changed after it was added) is refused in one line naming the
    state and the unit's type.
    """
    if not isinstance(store, OperatorStateStore):
        raise StateError(f"snapshot_subtask got a {type_name(store)}; accepted: an OperatorStateStore")
    snapshot = {}
    for name in store.state_names():
        state = store.state(name)
        snapshot[name] = {"mode": state.mode, "units": state.units()}
    return snapshot


def restore_subtasks(snapshots, new_parallelism: int) -> list:
    """One restored :class:`OperatorStateStore` per new subtask, from the old subtasks' snapshots.

    ``snapshots`` has one snapshot per old subtask, in subtask order (as
    :func:`snapshot_subtask` made them, possibly read back from JSON). Their units are
    redistributed to ``new_parallelism`` subtasks with :func:`~fw_magics.state.redistribute`
    (split, union or broadcast by each name's mode). Every store has every name of every
    snapshot (empty where it got no units), ``is_restored()`` is true for all of them, and
    no two stores share a unit object.

    Refused in one line: ``new_parallelism`` not an int >= 1, no snapshots, a snapshot of
    the wrong shape, a unit that is not JSON, a name with different modes in two snapshots.
    """
    return [restore_subtask(snapshot, index, new_parallelism)
            for index, snapshot in enumerate(redistribute_snapshots(snapshots, new_parallelism))]


def redistribute_snapshots(snapshots, new_parallelism: int) -> list:
    """The snapshots of ``new_parallelism`` subtasks after restoring the old subtasks' ``snapshots``.

    Same rule and same one-line errors as :func:`restore_subtasks`, but the result stays JSON
    data (one snapshot per new subtask, every name of every old snapshot in each, with its
    mode): what a restored job hands its subtasks, or writes down before it does.
    """
    if type(new_parallelism) is not int or new_parallelism < 1:
        raise StateError(f"new_parallelism {show(new_parallelism)}; accepted: an integer >= 1")
    modes = subtask_modes(snapshots, "snapshots")
    old = [{name: entry["units"] for name, entry in snapshot.items()} for snapshot in snapshots]
    new = redistribute(old, new_parallelism, modes)
    return [{name: {"mode": modes[name], "units": units} for name, units in states.items()} for states in new]


def restore_subtask(snapshot, subtask_index: int, parallelism: int) -> OperatorStateStore:
    """The store of subtask ``subtask_index`` of ``parallelism``, restored from its own ``snapshot``.

    No units move: this is a restart at the same place (a job's next micro-batch reading what
    the last one committed, or a new subtask given its share by :func:`redistribute_snapshots`).
    ``is_restored()`` is true; the snapshot is checked first (:func:`validate_subtask_snapshot`)
    and its units deep-copied.
    """
    validate_subtask_snapshot(snapshot)
    return OperatorStateStore.restored(
        subtask_index, parallelism, {name: (entry["mode"], entry["units"]) for name, entry in snapshot.items()})


def subtask_modes(snapshots, where: str = "snapshots") -> dict:
    """Validate a list of subtask snapshots and return each state name's mode.

    ``where`` names the list in messages (``snapshots[1]['offsets'] ...``). Each snapshot
    is checked with :func:`validate_subtask_snapshot`; a name must have the same mode in
    every snapshot that holds it.
    """
    if not isinstance(snapshots, (list, tuple)):
        raise StateError(f"{where} is a {type_name(snapshots)}; accepted: a list with one snapshot per old subtask")
    if not snapshots:
        raise StateError(f"{where} is empty; accepted: a list with one snapshot per old subtask, at least one")
    modes, first = {}, {}
    for s, snapshot in enumerate(snapshots):
        validate_subtask_snapshot(snapshot, f"{where}[{s}]")
        for name, entry in snapshot.items():
            mode = entry["mode"]
            if modes.setdefault(name, mode) != mode:
                raise StateError(
                    f"state {name!r} is {modes[name]!r} in {where}[{first[name]}] but {mode!r} in {where}[{s}]; "
                    "accepted: one mode per name in every subtask"
                )
            first.setdefault(name, s)
    return modes


def validate_subtask_snapshot(snapshot, where: str = "snapshot") -> None:
    """Check that ``snapshot`` is one subtask's snapshot; refuse anything else in one line.

    Accepted: a dict mapping non-empty state names to ``{"mode": m, "units": [...]}`` with
    ``m`` one of ``"split"``, ``"union"``, ``"broadcast"`` and JSON-value units; for
    broadcast state each unit is a ``[key, value]`` pair with a JSON scalar key, keys
    distinct.
    """
    if not isinstance(snapshot, Mapping):
        raise StateError(f"{where} is a {type_name(snapshot)}; accepted: a dict of state name -> {{mode, units}}")
    for name, entry in snapshot.items():
        if not isinstance(name, str) or not name:
            raise StateError(f"state name {show(name)} in {where}; accepted: a non-empty string")
        at = f"{where}[{name!r}]"
        if not isinstance(entry, Mapping) or set(entry) != {"mode", "units"}:
            got = f"has keys {sorted(map(str, entry))}" if isinstance(entry, Mapping) else f"is a {type_name(entry)}"
            raise StateError(f"{at} {got}; accepted: a dict with exactly the keys 'mode' and 'units'")
        mode, units = entry["mode"], entry["units"]
        if not isinstance(mode, str) or mode not in MODES:
            raise StateError(f"mode {show(mode)} of {at}; accepted: {_ACCEPTED_MODES}")
        if not isinstance(units, list):
            raise StateError(f"units of {at} are a {type_name(units)}; accepted: a list")
        for k, unit in enumerate(units):
            check_value(f"unit {k} of {at}", unit)
        if mode == "broadcast":
            _check_pairs(units, at)


def _check_pairs(units, at):
    seen = set()
    for k, unit in enumerate(units):
        if not isinstance(unit, list) or len(unit) != 2:
            raise StateError(f"unit {k} of broadcast state {at} is {show(unit)}; accepted: a [key, value] pair")
        check_key(at, unit[0])
        if unit[0] in seen:
            raise StateError(f"key {unit[0]!r} appears twice in broadcast state {at}; accepted: distinct keys")
        seen.add(unit[0])
