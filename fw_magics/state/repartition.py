"""Redistributing operator state to another parallelism: Flink's round-robin repartitioner (FLIP-8).

Operator state (non-keyed, one per subtask) is exposed as a *list of units* per state name,
so that when a job is restored at another parallelism the units can be moved between
subtasks. How they move depends on the state's mode:

``"split"`` (``ListState``)
    The units of all old subtasks are concatenated in subtask order and cut into contiguous
    runs, one per new subtask: ``n // p'`` units each, one more for ``n % p'`` of them. The
    runs go to the new subtasks starting at a *rotating* index carried from one split state
    name to the next (names in sorted order), so the extra units do not always land on
    subtask 0; over all split names the number of units per new subtask differs by at most
    one. No unit is copied, none is lost.
``"union"`` (``UnionListState``)
    Every new subtask gets all units, concatenated in old-subtask order.
``"broadcast"`` (``BroadcastState``)
    Every old subtask holds an equal copy; new subtask ``i`` gets the copy of old subtask
    ``i % p`` (see below for a name some old subtasks lack).

This is Apache Flink's ``RoundRobinOperatorStateRepartitioner`` (the rotation is its
``startParallelOp``), including what it does when the parallelism does not change:
split state stays where it is (every subtask keeps its own units, in order), union state
is still handed to every subtask in full (Flink repartitions union state even then: the
"every subtask keeps its own units" of an unchanged parallelism is about split state), and
broadcast state stays (subtask ``i`` keeps its copy, as ``i % p == i``).

Two edge cases, settled so that the rule as stated holds wherever it says something and
Flink decides where it does not:

* **Broadcast, a name some old subtasks lack** (a subtask that never registered it, or a
  finished one that reported nothing). A copy is what an old subtask *holds* (the name as
  a key, even with an empty list). New subtask ``i`` gets old subtask ``i % p``'s copy
  whenever that one holds the name, at any parallelism, unchanged included. Only when old
  subtask ``i % p`` lacks it (the rule has no copy to give) does Flink's answer apply: the
  copy of the ``i``-th holder, cyclically (``holders[i % len(holders)]``), so no new
  subtask is left without the state (Flink's
  ``testRepartitionBroadcastStateWithNullSubtaskState``: at 2 -> 1, 2 and 3 every new
  subtask gets subtask 0's copy). Where copies are equal, as broadcast state's are meant to
  be, this is exactly Flink's result; Flink itself may hand a holder another holder's copy
  (its TODO for partly finished broadcast state), which the rule as stated forbids.
* **Union at an unchanged parallelism**: every subtask gets all units, as in Flink.

For split and union state a name that a subtask lacks simply counts as an empty list.

Pure Python, no Spark::

    from fw_magics.state import redistribute, assignment
    old = [{"partitions": ["kp1", "kp2"]}, {"partitions": ["kp3", "kp4"]}]
    redistribute(old, 1, {"partitions": "split"})  # [{'partitions': ['kp1', 'kp2', 'kp3', 'kp4']}]
    redistribute(old, 4, {"partitions": "split"})  # [{'partitions': ['kp1']}, ..., {'partitions': ['kp4']}]
    assignment(old, 4, {"partitions": "split"})    # {'partitions': [[(0, 0)], [(0, 1)], [(1, 0)], [(1, 1)]]}
"""

from collections.abc import Mapping

from ..errors.state import StateError, show, type_name

MODES = ("split", "union", "broadcast")
_ACCEPTED_MODES = "'split', 'union' or 'broadcast'"


def redistribute(old, new_parallelism, modes):
    """The operator state of each new subtask after restoring ``old`` at ``new_parallelism``.

    ``old`` has one dict per old subtask (index = subtask), mapping a state name to that
    subtask's list of units; ``modes`` maps every state name to ``"split"``, ``"union"`` or
    ``"broadcast"`` (see the module docstring for what each does). Returns one dict per new
    subtask; each has every name of ``modes`` (with an empty list where it gets nothing),
    names in sorted order.

    Nothing is mutated and no unit is copied: the returned lists are new, but the units in
    them are the very objects found in ``old`` (for union and broadcast state the same
    object appears in several new subtasks; treat units as immutable, or copy them).

    Bad arguments raise a one-line :class:`~fw_magics.state.StateError` (a ``ValueError``):
    ``new_parallelism`` not an int >= 1, ``old`` empty or not a list of dicts of lists, a
    state name that is not a non-empty string, a mode not known, a name without a mode.
    """
    plan = assignment(old, new_parallelism, modes)
    return [
        {name: [old[s][name][k] for s, k in runs[j]] for name, runs in plan.items()}
        for j in range(new_parallelism)
    ]


def assignment(old, new_parallelism, modes):
    """What :func:`redistribute` would do, as positions: a what-if view of a rescale.

    Returns ``{name: [units of new subtask 0, units of new subtask 1, ...]}`` (names sorted)
    where each new subtask's entry lists ``(old subtask, unit index)`` pairs in the order
    the units arrive, so ``old[s][name][k]`` for each pair ``(s, k)`` is exactly what
    ``redistribute(old, new_parallelism, modes)`` gives that subtask. Same arguments and
    same one-line errors as :func:`redistribute`; the units themselves are never looked at.
    """
    sizes = _check(old, new_parallelism, modes)
    return plan_positions(sizes, new_parallelism, modes)


def plan_positions(sizes, new_parallelism, modes):
    """The assignment for already-checked arguments: ``sizes[s]`` maps each name old subtask ``s`` holds
    to its number of units."""
    old_parallelism = len(sizes)
    plan = {}
    start = 0  # Flink's startParallelOp: where the next split name's runs begin
    for name in sorted(modes):
        mode = modes[name]
        held = [[(s, k) for k in range(sizes[s].get(name, 0))] for s in range(old_parallelism)]
        if mode == "union":
            everything = [unit for units in held for unit in units]
            plan[name] = [list(everything) for _ in range(new_parallelism)]
        elif mode == "broadcast":
            holders = [s for s in range(old_parallelism) if name in sizes[s]]
            plan[name] = [list(held[_broadcast_copy(i, old_parallelism, holders)]) if holders else []
                          for i in range(new_parallelism)]
        elif new_parallelism == old_parallelism:
            plan[name] = held  # unchanged parallelism: split state stays where it is
        else:
            plan[name], start = _split(held, new_parallelism, start)
    return plan


def _broadcast_copy(i, old_parallelism, holders):
    """The old subtask whose broadcast copy new subtask ``i`` gets: ``i % p`` when it holds the
    name, else the ``i``-th holder cyclically (Flink's answer when a subtask reported none)."""
    own = i % old_parallelism
    return own if own in holders else holders[i % len(holders)]


def _split(held, new_parallelism, start):
    """Cut the concatenated units into contiguous runs for the new subtasks, beginning at ``start``.

    Returns the runs per new subtask and the start for the next split name: the first new
    subtask (in this round's order) that got no extra unit.
    """
    units = [unit for per_subtask in held for unit in per_subtask]
    base, extra = divmod(len(units), new_parallelism)
    runs = [[] for _ in range(new_parallelism)]
    position = 0
    for i in range(new_parallelism):
        take = base + 1 if i < extra else base
        runs[(start + i) % new_parallelism] = units[position:position + take]
        position += take
    return runs, (start + extra) % new_parallelism


def _check(old, new_parallelism, modes):
    """Validate the arguments in one line each; return the number of units per name per old subtask."""
    if type(new_parallelism) is not int or new_parallelism < 1:
        raise StateError(f"new_parallelism {show(new_parallelism)}; accepted: an integer >= 1")
    if not isinstance(modes, Mapping):
        raise StateError(
            f"modes is a {type_name(modes)}; accepted: a dict mapping every state name to {_ACCEPTED_MODES}"
        )
    for name, mode in modes.items():
        _check_name(name, "modes")
        if not isinstance(mode, str) or mode not in MODES:
            raise StateError(f"mode {show(mode)} of state {name!r}; accepted: {_ACCEPTED_MODES}")
    if not isinstance(old, (list, tuple)):
        raise StateError(
            f"old is a {type_name(old)}; accepted: a list with one dict per old subtask "
            "(state name -> list of units)"
        )
    if not old:
        raise StateError("old is empty; accepted: a list with one dict per old subtask, at least one")
    sizes = []
    for s, subtask in enumerate(old):
        if not isinstance(subtask, Mapping):
            raise StateError(
                f"old[{s}] is a {type_name(subtask)}; accepted: a dict mapping state names to lists of units"
            )
        counts = {}
        for name, units in subtask.items():
            _check_name(name, f"old[{s}]")
            if not isinstance(units, (list, tuple)):
                raise StateError(f"old[{s}][{name!r}] is a {type_name(units)}; accepted: a list of units")
            if name not in modes:
                raise StateError(
                    f"state {name!r} (in old[{s}]) has no mode; accepted: modes mapping it to {_ACCEPTED_MODES}"
                )
            counts[name] = len(units)
        sizes.append(counts)
    return sizes


def _check_name(name, where):
    if not isinstance(name, str) or not name:
        raise StateError(f"state name {show(name)} in {where}; accepted: a non-empty string")
