"""The state inspector's widget model, no browser, no Spark: what it reads is a pure model of a job's state
(a key's state after each micro-batch), read through the real key parsing and history layout. Its reads of a
real job are tests/streaming/test_savepoint_reader.py's; in JupyterLab, tests/browser/test_job_view_in_lab.py's."""

from __future__ import annotations

import time

import pytest

from fw_magics.state.key_history import MICRO_BATCH, SAVEPOINT, Reading, history
from fw_magics.values.key_text import parse_key
from fw_magics.widgets import GraphView
from fw_magics.widgets.state_inspector import StateInspector
from tests.widgets.graphs import four_operators

#: The model: each key's running total after micro-batches 0, 1, 2 (absent: no state yet); a savepoint after 1.
TOTALS = {0: {1: 5}, 1: {1: 5, 2: 3}, 2: {1: 9, 2: 3}}
SAVEPOINT_AFTER = 1


def read(text: str):
    (k,) = parse_key(text, ["k"], ["bigint"])
    at = [Reading(MICRO_BATCH, b, None if k not in s else {"total": s[k]}) for b, s in TOTALS.items()]
    kept = TOTALS[SAVEPOINT_AFTER]
    at.append(Reading(SAVEPOINT, SAVEPOINT_AFTER, None if k not in kept else {"total": kept[k]}, "savepoint-000001"))
    return history({"k": k}, at, "micro-batches 0 not read" if k == 1 else "")


def _inspector() -> StateInspector:
    return StateInspector("reduce", ["k"], read, lambda: ["1", "2"])


def _cells(inspector) -> list[list[str]]:
    import re

    rows = re.findall(r"<tr>(.*?)</tr>", inspector.table.value)
    return [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in rows if "<td" in row]


def test_a_typed_key_shows_its_state_at_each_batch_and_savepoint():
    inspector = _inspector()
    found = inspector.show("2")
    assert [(r["at"], r["batch"], r["found"], r.get("total")) for r in found.rows] == [
        ("micro-batch", 0, "absent", None), ("micro-batch", 1, "present", 3), ("savepoint", 1, "present", 3),
        ("micro-batch", 2, "present", 3)]
    assert _cells(inspector)[0][:4] == ["micro-batch", "0", "null", "absent"]
    assert _cells(inspector)[2][:5] == ["savepoint", "1", "savepoint-000001", "present", "3"]
    assert "key k = 2" in inspector.table.value
    inspector.show("1")
    assert [c[-1] for c in _cells(inspector)] == ["5", "5", "5", "9"]
    assert "micro-batches 0 not read" in inspector.message.value


def test_a_bad_key_is_its_one_line_and_no_table():
    inspector = _inspector()
    inspector.show("1")
    assert inspector.show("one") is None
    assert "&#x27;one&#x27; is not a bigint for key column &#x27;k&#x27;" in inspector.message.value
    assert inspector.table.value == ""


def _wait(until) -> None:
    deadline = time.monotonic() + 10
    while not until() and time.monotonic() < deadline:
        time.sleep(0.02)


def test_picking_an_offered_key_shows_it_and_read_again_reads_it_once_more():
    inspector = _inspector()
    assert inspector.offer() == ["1", "2"]
    inspector.pick.value = "2"  # as a person picks it: the key box takes it and the table follows (a thread)
    _wait(lambda: inspector.last is not None and inspector.last.key == {"k": 2})
    assert inspector.key.value == "2" and inspector.last.key == {"k": 2}
    first = inspector.last
    inspector.again.click()  # the same key: the box's value does not change, the button reads it again
    _wait(lambda: inspector.last is not first)
    assert inspector.last is not first and inspector.last == first


@pytest.fixture
def view():
    graph = GraphView(four_operators(), follow=False)
    graph.inspect_state({"reduce": _inspector()}, lambda name: f"{name!r} has no keyed state to inspect")
    return graph


def test_selecting_the_keyed_operator_shows_its_inspector_and_another_says_why_not(view):
    view.select("reduce")
    assert view.state_panel.children == (view.inspectors["reduce"],)
    view.select("map")
    (line,) = view.state_panel.children
    assert line.value == "<i>&#x27;map&#x27; has no keyed state to inspect</i>"
