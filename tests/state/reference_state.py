"""A naive reference model of operator-state redistribution, written from the rule, not from the code.

The rule (Flink's RoundRobinOperatorStateRepartitioner, FLIP-8), stated as counting:

- split, parallelism changed: a name's units, concatenated over the old subtasks, are dealt
  as contiguous runs of n // p' units, plus one "extra" unit for n % p' subtasks. Extras are
  handed out round-robin over the whole restore: the k-th extra of all split names (sorted)
  goes to new subtask k % p'. Within a name, the runs are taken in subtask order beginning
  with the subtask the name's first extra goes to (or would go to, if it has none).
- split, parallelism unchanged: every subtask keeps its own list.
- union: everyone gets the concatenation.
- broadcast: new subtask i copies old subtask i % p; if that one does not hold the name, the
  i-th (cyclically) old subtask that does (Flink's answer when a subtask reported none).
"""

from hypothesis import strategies as st

MODE_NAMES = ("split", "union", "broadcast")


def redistribute(old, p_new, modes):
    p_old = len(old)
    result = [dict() for _ in range(p_new)]
    extras_dealt = 0
    for name in sorted(modes):
        lists = [list(sub.get(name, [])) for sub in old]
        concatenation = [unit for units in lists for unit in units]
        if modes[name] == "union":
            per_subtask = [list(concatenation) for _ in range(p_new)]
        elif modes[name] == "broadcast":
            holders = [s for s, sub in enumerate(old) if name in sub]
            per_subtask = []
            for i in range(p_new):
                if name in old[i % p_old]:
                    per_subtask.append(list(old[i % p_old][name]))
                else:
                    per_subtask.append(list(lists[holders[i % len(holders)]]) if holders else [])
        elif p_new == p_old:
            per_subtask = lists
        else:
            per_subtask, extras_dealt = _deal(concatenation, p_new, extras_dealt)
        for j in range(p_new):
            result[j][name] = per_subtask[j]
    return result


def _deal(units, p_new, extras_dealt):
    n = len(units)
    first = extras_dealt % p_new
    order = list(range(first, p_new)) + list(range(first))
    length = {j: n // p_new for j in range(p_new)}
    for j in order[: n % p_new]:
        length[j] += 1
    dealt = {}
    remaining = iter(units)
    for j in order:
        dealt[j] = [next(remaining) for _ in range(length[j])]
    return [dealt[j] for j in range(p_new)], extras_dealt + n % p_new


NAMES = ("a", "b", "c", "d", "e")


@st.composite
def restores(draw, max_old=7, max_new=9, max_units=7):
    """(old, new_parallelism, modes) with every unit distinct (a tag naming where it came from)."""
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=len(NAMES), unique=True))
    modes = {name: draw(st.sampled_from(MODE_NAMES)) for name in names}
    p_old = draw(st.integers(1, max_old))
    p_new = draw(st.one_of(st.just(p_old), st.integers(1, max_new)))
    old = []
    for s in range(p_old):
        held = draw(st.lists(st.sampled_from(names), unique=True))
        old.append({name: [f"{name}/{s}/{k}" for k in range(draw(st.integers(0, max_units)))] for name in held})
    return old, p_new, modes
