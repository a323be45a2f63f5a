"""What a unit of operator state may be: a plain JSON value, checked and copied.

Savepoints and checkpoints hold operator state as JSON (or Arrow), never pickled, so a
unit must be one of: ``str``, ``int``, ``float`` (finite), ``bool``, ``None``, a ``list``
of units, or a ``dict`` with ``str`` keys and unit values. Exactly these types are
accepted, not subclasses or look-alikes: a ``tuple`` would come back as a ``list``, a
``numpy.float64`` as a ``float``, so both are refused rather than changed silently.
"""

import math

from ..errors.state import StateError, type_name

ACCEPTED = "JSON values: str, int, finite float, bool, None, lists, dicts with str keys"
MAX_DEPTH = 200
_SCALARS = (str, int, bool, type(None))
_CLOSE = object()  # marks, on the walk's stack, the end of a container's children


def json_problem(value):
    """``None`` if ``value`` is a plain JSON value, else ``(where, culprit)`` of the first offender.

    ``where`` is a path such as ``[2]['offset']`` (empty for the value itself); ``culprit``
    names the offending type or value (``a value of type set``). Cycles and nesting
    deeper than ``MAX_DEPTH`` are offenders too.
    """
    stack = [(value, "", 0)]
    open_containers = set()
    while stack:
        item, where, depth = stack.pop()
        if item is _CLOSE:  # every child of the container whose id is in `where` was seen
            open_containers.discard(where)
            continue
        kind = type(item)
        if kind in _SCALARS:
            continue
        if kind is float:
            if not math.isfinite(item):
                return where, f"the float {item!r} (not valid JSON)"
            continue
        if kind is not list and kind is not dict:
            return where, f"a value of type {type_name(item)}"
        if id(item) in open_containers:
            return where, f"a {kind.__name__} that contains itself"
        if depth >= MAX_DEPTH:
            return where, f"nesting deeper than {MAX_DEPTH} levels"
        open_containers.add(id(item))
        stack.append((_CLOSE, id(item), depth))
        if kind is list:
            children = [(child, f"{where}[{k}]", depth + 1) for k, child in enumerate(item)]
        else:
            for key in item:
                if type(key) is not str:
                    return f"{where}[{key!r}]", f"a dict key of type {type_name(key)}"
            children = [(child, f"{where}[{key!r}]", depth + 1) for key, child in item.items()]
        stack.extend(reversed(children))
    return None


def check_value(label: str, value) -> None:
    """Refuse, in one line starting with ``label`` (which names the state), a value that is not JSON.

    ``label`` says what the value is, e.g. ``unit 3 of list state 'offsets'``; the message
    adds the offending type (and where inside the value it sits) and what is accepted.
    """
    problem = json_problem(value)
    if problem is not None:
        where, culprit = problem
        inside = f" holds {culprit} at {where}" if where else f" is {culprit}"
        raise StateError(f"{label}{inside}; accepted: {ACCEPTED} (operator state is saved as JSON, never pickled)")


def check_key(state: str, key) -> None:
    """Refuse a broadcast-state key that is not a JSON scalar (str, int, finite float, bool, None)."""
    if type(key) in _SCALARS or (type(key) is float and math.isfinite(key)):
        return
    culprit = f"the float {key!r} (not valid JSON)" if type(key) is float else f"of type {type_name(key)}"
    raise StateError(
        f"key {key!r} of broadcast state {state!r} is {culprit}; accepted: str, int, finite float, "
        "bool or None (operator state is saved as JSON, never pickled)"
    )


def json_copy(value):
    """A deep copy of a JSON value already checked by :func:`json_problem` (scalars are shared)."""
    kind = type(value)
    if kind is list:
        return [json_copy(item) for item in value]
    if kind is dict:
        return {key: json_copy(item) for key, item in value.items()}
    return value
