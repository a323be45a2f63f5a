"""A savepoint's operator state as a tutorial reads it: each subtask's units, by operator.

    operator_units(path, "process(BufferingSink)")              # [{"buffered": [4]}, {"buffered": [5, 6]}]
    operator_units(path, "process(BufferingSink)", "buffered")  # [[4], [5, 6]]
    units_table(path)                                           # one row per operator and subtask

A split (a source's file) shows as its file name. The savepoint is read with
``fw.load_savepoint`` (checked, nothing runs); a loaded one is taken as it is.
"""

from __future__ import annotations

__all__ = ["operator_snapshots", "operator_units", "units_table"]


def _loaded(savepoint):
    if hasattr(savepoint, "operator_state"):
        return savepoint
    from ..runtime.streaming.savepoints import load_savepoint

    return load_savepoint(savepoint)


def operator_snapshots(savepoint, operator: str) -> list[dict]:
    """One snapshot per subtask of ``operator`` in ``savepoint`` (a path or a loaded savepoint):
    state name -> ``{"mode": ..., "units": [...]}``; a one-line ``KeyError`` names the operators
    that have some when this one has none."""
    state = _loaded(savepoint).operator_state
    if operator not in state:
        raise KeyError(f"the savepoint holds no operator state of {operator!r}; it has: "
                       f"{', '.join(sorted(state)) or 'none'}")
    return state[operator]


def _shown(unit):
    return unit["file"] if isinstance(unit, dict) and "file" in unit else unit


def operator_units(savepoint, operator: str, state: str | None = None) -> list:
    """Each subtask's units of ``operator``: one dict per subtask (state name -> its units), or,
    with ``state``, one list per subtask of that state's units (empty where a subtask has none)."""
    per_subtask = [{name: [_shown(u) for u in entry["units"]] for name, entry in snapshot.items()}
                   for snapshot in operator_snapshots(savepoint, operator)]
    return per_subtask if state is None else [units.get(state, []) for units in per_subtask]


def units_table(savepoint):
    """Every operator's state in ``savepoint`` as a pandas table: one row per operator and
    subtask, one column per state (its units)."""
    import pandas as pd

    loaded = _loaded(savepoint)
    rows = [{"operator": operator, "subtask": i, **units}
            for operator in loaded.operator_state
            for i, units in enumerate(operator_units(loaded, operator))]
    return pd.DataFrame(rows).set_index(["operator", "subtask"]).astype(object).fillna("")
