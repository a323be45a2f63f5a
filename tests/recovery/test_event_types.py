"""An event's type is named once, in ``fw_magics.recovery.events``: no other module of the product
(``fw_magics/``, ``widgets/``) compares an event's type with a string of its own. No Spark.

Read with ``ast``: a string equal to an event type is flagged where it stands for one -- an operand of
a comparison (``==``, ``in``, alone or in a tuple, list or set), a ``case`` pattern, the ``"type"`` of
a dict literal, the keys of a table keyed by event type, or a member of a tuple, list or set of them.
The same word meaning something else is left alone: a hook's kind (``hooks.trigger("micro_batch",
...)``) and a source offset's field (``{"files": n, "switch": 1}``).
"""

from __future__ import annotations

import ast
import pathlib

import pytest

from fw_magics.recovery import events

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
TYPES = frozenset(events.SCHEMA)
THE_EVENTS_MODULE = ROOT / "fw_magics" / "recovery" / "events.py"


def product_files() -> list[pathlib.Path]:
    files = sorted((ROOT / "fw_magics").rglob("*.py")) + sorted((ROOT / "widgets").rglob("*.py"))
    return [path for path in files if path != THE_EVENTS_MODULE]


def _named(node) -> list[str]:
    """The event types a node spells out: a string, or the strings of a tuple, list or set."""
    if isinstance(node, ast.Constant) and node.value in TYPES:
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in TYPES]
    return []


def event_type_literals(source: str, name: str = "<test>") -> list[tuple[int, str]]:
    """(line, type) of each string in ``source`` that stands for an event type."""
    found = []
    for node in ast.walk(ast.parse(source, name)):
        spelled: list[str] = []
        if isinstance(node, ast.Compare):
            for operand in [node.left, *node.comparators]:
                spelled += _named(operand)
        elif isinstance(node, ast.MatchValue):
            spelled += _named(node.value)
        elif isinstance(node, ast.Dict):
            keys = [k.value if isinstance(k, ast.Constant) else None for k in node.keys]
            if "type" in keys:
                spelled += _named(node.values[keys.index("type")])
            if sum(k in TYPES for k in keys) > 1:  # a table keyed by event type
                spelled += [k for k in keys if k in TYPES]
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            strings = [e for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if strings and len(strings) == len(node.elts) and any(e.value in TYPES for e in strings):
                spelled += _named(node)
        found += [(node.lineno, kind) for kind in spelled]
    return sorted(set(found))


def test_no_module_but_the_events_module_spells_an_event_type():
    found = [f"{path.relative_to(ROOT)} line {line}: {kind!r} (use events.{kind.upper()})"
             for path in product_files()
             for line, kind in event_type_literals(path.read_text(encoding="utf-8"), str(path))]
    assert not found, "event types spelled outside fw_magics/recovery/events.py:\n" + "\n".join(found)


def test_every_event_type_has_its_name_in_the_events_module():
    assert {getattr(events, kind.upper()) for kind in TYPES} == TYPES
    assert set(events.LAST_WORDS) <= TYPES


@pytest.mark.parametrize("code, flagged", [
    ('if event["type"] == "micro_batch": pass', ["micro_batch"]),
    ('ok = e.get("type") in ("job_finished", "job_failed")', ["job_failed", "job_finished"]),
    ('match kind:\n    case "switch": pass', ["switch"]),
    ('e = {"type": "phase_changed", "phase": p}', ["phase_changed"]),
    ('about = {"job_finished": 1, "job_failed": 2}', ["job_failed", "job_finished"]),
    ('ENDS = ("job_finished", "job_cancelled")', ["job_cancelled", "job_finished"]),
    ('if event["type"] == events.MICRO_BATCH: pass', []),
    ('hooks.trigger("micro_batch", job, info)', []),  # a hook's kind
    ('offset = {"files": n, "switch": 1}; held = start.get("switch")', []),  # a source offset's field
    ('kind = "switching" if warm else "stream"', []),
])
def test_the_check_sees_each_way_of_spelling_a_type_and_nothing_else(code, flagged):
    assert sorted(kind for _, kind in event_type_literals(code)) == flagged
