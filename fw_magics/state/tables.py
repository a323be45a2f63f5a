"""Operator state as a table (Flink's State Processor API): one row per unit of each subtask's state.

``reader.operator_state(name)`` gives these rows as a Spark DataFrame and ``fw.write_savepoint(...,
operator_state={name: df})`` takes them back: ``subtask``, ``state``, ``mode``, ``element`` (a unit as JSON
text; a broadcast state's unit is its ``[key, value]`` pair). Pure Python, no Spark::

    rows_of([{"buffered": {"mode": "split", "units": [4]}}, {"buffered": {"mode": "split", "units": [5, 6]}}])
    # [(0, 'buffered', 'split', '4'), (1, 'buffered', 'split', '5'), (1, 'buffered', 'split', '6')]

:func:`snapshots_of` is its inverse: the units of a subtask's state in the rows' order, and a subtask holds
the states it has rows of (a state without units has no row: split and union state count a state a subtask
lacks as empty, and a restore hands a subtask that lacks a broadcast state the copy of one that holds it).
Each row is checked against what the operator declares (``modes``), one line naming the first culprit.
"""

import json

from ..errors.state import StateError, show
from .snapshots import validate_subtask_snapshot

#: The columns, as ``reader.operator_state(name)`` returns them (Spark DDL).
SCHEMA = "subtask int, state string, mode string, element string"
COLUMNS = ("subtask", "state", "mode", "element")


def rows_of(snapshots) -> list[tuple]:
    """(subtask, state, mode, element as JSON text), per unit of each subtask's ``snapshots``, states by name."""
    rows = []
    for subtask, snapshot in enumerate(snapshots):
        for state, entry in sorted(snapshot.items()):
            rows += [(subtask, state, entry["mode"], json.dumps(unit)) for unit in entry["units"]]
    return rows


def snapshots_of(rows, parallelism: int, modes: dict, other_mode: str | None = None, where: str = "rows") -> list:
    """One snapshot per subtask ``0 .. parallelism - 1`` from ``rows`` (as :func:`rows_of` makes them).

    ``modes``: each state the operator declares -> its mode; ``other_mode``: the mode of a state it may make
    without declaring it (a broadcast function's broadcast states), None: no other state. Refused in one
    line naming the row (``where`` names the table): a subtask outside the range, a state not declared, a
    mode not the state's, an element that is not JSON text (NaN, an object with a key twice included) or
    not a unit the state takes (a broadcast state's ``[key, value]``, each key once).
    """
    snapshots = [{} for _ in range(parallelism)]
    for index, (subtask, state, mode, element) in enumerate(rows):
        at = f"{where} row {index} (subtask {show(subtask)}, state {show(state)})"
        if type(subtask) is not int or not 0 <= subtask < parallelism:
            raise StateError(f"{at}: subtask {show(subtask)}; accepted: 0 to {parallelism - 1} (the parallelism "
                             f"written is {parallelism})")
        declared = modes.get(state, other_mode) if isinstance(state, str) else None
        if declared is None:
            raise StateError(f"{at}: the operator keeps no state {show(state)}; accepted: "
                             f"{_declared(modes, other_mode)}")
        if mode != declared:
            raise StateError(f"{at}: mode {show(mode)}; accepted: {declared!r}, the state's declared mode")
        entry = snapshots[subtask].setdefault(state, {"mode": mode, "units": []})
        entry["units"].append(_unit(element, at))
    for subtask, snapshot in enumerate(snapshots):
        validate_subtask_snapshot(snapshot, f"{where}'s subtask {subtask}")
    return snapshots


def _declared(modes: dict, other_mode: str | None) -> str:
    named = ", ".join(f"{name!r} ({mode})" for name, mode in sorted(modes.items())) or "none declared"
    return named + (f", or any other name as {other_mode} state" if other_mode else "")


def _unit(element, at: str):
    """The unit ``element`` holds as JSON text, strictly (no NaN or infinities, no key twice in an object)."""
    if not isinstance(element, str):
        raise StateError(f"{at}: element {show(element)}; accepted: a unit as JSON text (json.dumps of it)")
    try:
        return json.loads(element, parse_constant=_no_constant, object_pairs_hook=_once)
    except (ValueError, RecursionError) as error:
        raise StateError(f"{at}: element {show(element)} is not JSON text ({str(error).splitlines()[0]:.80}); "
                         "accepted: a unit as JSON text (json.dumps of it)") from None


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def _once(pairs: list) -> dict:
    found = {}
    for key, value in pairs:
        if key in found:
            raise ValueError(f"key {key!r} twice in an object")
        found[key] = value
    return found
