"""The operator-state part of a savepoint: a self-describing, versioned JSON document.

The streaming layer writes savepoints; the operator state it puts in them has this shape::

    {"format": "fw-magics/operator-state",
     "version": 1,
     "operators": {
        "source": {"parallelism": 2,
                   "subtasks": [<snapshot of subtask 0>, <snapshot of subtask 1>]}}}

where each snapshot is what :func:`~fw_magics.state.snapshot_subtask` returns. Build it
with :func:`operator_state_document`, check it with :func:`validate_operator_state`, read
it with :func:`parse_operator_state` (which also takes the JSON text) and hand each
operator's snapshots to :func:`~fw_magics.state.restore_subtasks`. A document of another
format or version, or of the wrong shape, is refused in one line. Reading it never
unpickles or runs anything: it is JSON data.
"""

import json
from collections.abc import Mapping

from ..errors.state import StateError, show, type_name
from .snapshots import subtask_modes

OPERATOR_STATE_FORMAT = "fw-magics/operator-state"
OPERATOR_STATE_VERSION = 1
_KEYS = {"format", "version", "operators"}


def operator_state_document(operators) -> dict:
    """The versioned document for ``{operator name: [snapshot of subtask 0, 1, ...]}``.

    The result is plain JSON data (``json.dumps`` writes it as is) and passes
    :func:`validate_operator_state`.
    """
    if not isinstance(operators, Mapping):
        raise StateError(
            f"operators is a {type_name(operators)}; accepted: a dict of operator name -> list of subtask snapshots"
        )
    for name, snapshots in operators.items():
        if not isinstance(snapshots, (list, tuple)):
            raise StateError(
                f"snapshots of operator {show(name)} are a {type_name(snapshots)}; "
                "accepted: a list with one snapshot per subtask"
            )
    document = {
        "format": OPERATOR_STATE_FORMAT,
        "version": OPERATOR_STATE_VERSION,
        "operators": {
            name: {"parallelism": len(snapshots), "subtasks": list(snapshots)}
            for name, snapshots in operators.items()
        },
    }
    validate_operator_state(document)
    return document


def validate_operator_state(document) -> None:
    """Refuse in one line anything that is not a valid operator-state document of a known version.

    Checked: the format name, the version (an int this fw-magics reads), exactly the keys
    ``format``, ``version``, ``operators``; per operator a non-empty name, ``parallelism``
    an int >= 1 equal to the number of ``subtasks``, and valid subtask snapshots whose
    state names keep one mode across the subtasks.
    """
    if not isinstance(document, Mapping):
        raise StateError(f"operator state is a {type_name(document)}; accepted: a dict (the JSON document)")
    if document.get("format") != OPERATOR_STATE_FORMAT:
        raise StateError(
            f"operator state format {show(document.get('format'))}; accepted: {OPERATOR_STATE_FORMAT!r}"
        )
    version = document.get("version")
    if type(version) is not int or version != OPERATOR_STATE_VERSION:
        newer = " (written by a newer fw-magics; upgrade to read it)" if type(version) is int and version > 1 else ""
        raise StateError(
            f"operator state version {show(version)}{newer}; accepted: {OPERATOR_STATE_VERSION}"
        )
    if set(document) != _KEYS:
        unknown = sorted(map(str, set(document) - _KEYS)) or sorted(_KEYS - set(document))
        raise StateError(
            f"operator state has keys {sorted(map(str, document))} ({', '.join(unknown)}); "
            "accepted: exactly 'format', 'version', 'operators'"
        )
    operators = document["operators"]
    if not isinstance(operators, Mapping):
        raise StateError(
            f"operator state 'operators' is a {type_name(operators)}; accepted: a dict of operator name -> "
            "{parallelism, subtasks}"
        )
    for name, entry in operators.items():
        if not isinstance(name, str) or not name:
            raise StateError(f"operator name {show(name)} in operator state; accepted: a non-empty string")
        at = f"operators[{name!r}]"
        if not isinstance(entry, Mapping) or set(entry) != {"parallelism", "subtasks"}:
            got = f"has keys {sorted(map(str, entry))}" if isinstance(entry, Mapping) else f"is a {type_name(entry)}"
            raise StateError(f"{at} {got}; accepted: a dict with exactly the keys 'parallelism' and 'subtasks'")
        parallelism, subtasks = entry["parallelism"], entry["subtasks"]
        if type(parallelism) is not int or parallelism < 1:
            raise StateError(f"parallelism {show(parallelism)} of {at}; accepted: an integer >= 1")
        subtask_modes(subtasks, f"{at}['subtasks']")
        if len(subtasks) != parallelism:
            raise StateError(
                f"{at} has parallelism {parallelism} but {len(subtasks)} subtask snapshots; "
                "accepted: one snapshot per subtask"
            )


def parse_operator_state(document) -> dict:
    """``{operator name: [snapshot of subtask 0, 1, ...]}`` from a document (a dict, or its JSON text).

    The document is validated first (:func:`validate_operator_state`); JSON text that does
    not parse is refused in one line. The snapshots are returned as they are in the document.
    """
    if isinstance(document, (bytes, bytearray)):
        try:
            document = document.decode("utf-8")
        except UnicodeDecodeError as error:
            raise StateError(f"operator state is not UTF-8 text ({error.reason} at byte {error.start}); "
                             "accepted: a JSON document") from None
    if isinstance(document, str):
        try:
            document = json.loads(document)
        except json.JSONDecodeError as error:
            raise StateError(f"operator state is not JSON ({error.msg} at line {error.lineno} column "
                             f"{error.colno}); accepted: a JSON document") from None
    validate_operator_state(document)
    return {name: list(entry["subtasks"]) for name, entry in document["operators"].items()}
