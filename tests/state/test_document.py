"""The versioned operator-state document of a savepoint, and the layer rule of fw_magics.state."""

import ast
import json
import pathlib
import sys

import pytest

import fw_magics.state
from fw_magics.state import (
    OPERATOR_STATE_FORMAT,
    OPERATOR_STATE_VERSION,
    OperatorStateStore,
    StateError,
    operator_state_document,
    parse_operator_state,
    restore_subtasks,
    snapshot_subtask,
    validate_operator_state,
)


def source_snapshots():
    stores = [OperatorStateStore(i, 2) for i in range(2)]
    stores[0].get_list_state("positions").update([["kp1", 3], ["kp2", 0]])
    stores[1].get_list_state("positions").update([["kp3", 5], ["kp4", 1]])
    for store in stores:
        store.get_broadcast_state("rules")["max"] = 10
    return [snapshot_subtask(s) for s in stores]


def document():
    return operator_state_document({"source": source_snapshots(), "sink": [{}]})


def test_document_is_self_describing_json_and_parses_back_to_restorable_snapshots():
    doc = document()
    assert doc["format"] == OPERATOR_STATE_FORMAT == "fw-magics/operator-state"
    assert doc["version"] == OPERATOR_STATE_VERSION == 1
    assert doc["operators"]["source"]["parallelism"] == 2 and doc["operators"]["sink"] == {
        "parallelism": 1, "subtasks": [{}]}
    text = json.dumps(doc, allow_nan=False)
    for form in (doc, text, text.encode()):
        parsed = parse_operator_state(form)
        assert parsed == {"source": source_snapshots(), "sink": [{}]}
    (one,) = restore_subtasks(parse_operator_state(text)["source"], 1)
    assert one.get_list_state("positions").get() == [["kp1", 3], ["kp2", 0], ["kp3", 5], ["kp4", 1]]
    assert dict(one.get_broadcast_state("rules")) == {"max": 10}


def changed(**edits):
    doc = json.loads(json.dumps(document()))
    for path, value in edits.items():
        *parents, last = path.split("__")
        target = doc
        for key in parents:
            target = target[key] if not isinstance(target, list) else target[int(key)]
        if value is DELETE:
            del target[last]
        elif isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value
    return doc


DELETE = object()


@pytest.mark.parametrize("doc, message", [
    ([], "operator state is a list; accepted: a dict (the JSON document)"),
    (changed(format="fw-magics/savepoint"), "operator state format 'fw-magics/savepoint'; accepted: "
                                            "'fw-magics/operator-state'"),
    (changed(format=DELETE), "operator state format None; accepted: 'fw-magics/operator-state'"),
    (changed(version=2), "operator state version 2 (written by a newer fw-magics; upgrade to read it); accepted: 1"),
    (changed(version=0), "operator state version 0; accepted: 1"),
    (changed(version="1"), "operator state version '1'; accepted: 1"),
    (changed(version=True), "operator state version True; accepted: 1"),
    (changed(version=DELETE), "operator state version None; accepted: 1"),
    (changed(extra={}), "operator state has keys ['extra', 'format', 'operators', 'version'] (extra); accepted: "
                        "exactly 'format', 'version', 'operators'"),
    (changed(operators=DELETE), "(operators); accepted: exactly 'format', 'version', 'operators'"),
    (changed(operators=[]), "operator state 'operators' is a list; accepted: a dict of operator name"),
    (changed(operators__sink=[{}]), "operators['sink'] is a list; accepted: a dict with exactly the keys"),
    (changed(operators__sink={"subtasks": [{}]}), "operators['sink'] has keys ['subtasks']; accepted: a dict with"),
    (changed(operators__sink__parallelism=0), "parallelism 0 of operators['sink']; accepted: an integer >= 1"),
    (changed(operators__sink__parallelism=2), "operators['sink'] has parallelism 2 but 1 subtask snapshots; "
                                               "accepted: one snapshot per subtask"),
    (changed(operators__sink__subtasks=[]), "operators['sink']['subtasks'] is empty; accepted: a list with one"),
    (changed(operators__source__subtasks__1__positions__mode="union"),
     "state 'positions' is 'split' in operators['source']['subtasks'][0] but 'union' in "
     "operators['source']['subtasks'][1]; accepted: one mode per name"),
    (changed(operators__source__subtasks__0__positions__units=[["kp1", float("nan")]]),
     "unit 0 of operators['source']['subtasks'][0]['positions'] holds the float nan (not valid JSON) at [1]; accepted"),
    (changed(operators__source__subtasks__0__rules__units=[["max"]]),
     "unit 0 of broadcast state operators['source']['subtasks'][0]['rules'] is ['max']; accepted: a [key, value]"),
])
def test_bad_documents_are_refused_in_one_line(doc, message):
    for check in (validate_operator_state, parse_operator_state):
        with pytest.raises(StateError) as caught:
            check(doc)
        assert message in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("text, message", [
    ('{"format": ', "operator state is not JSON (Expecting value at line 1 column 12); accepted: a JSON document"),
    (b"\xff\xfe", "operator state is not UTF-8 text (invalid start byte at byte 0); accepted: a JSON document"),
    ('{"format": "fw-magics/operator-state", "version": 1, "operators": {"s": {"parallelism": 1, '
     '"subtasks": [{"x": {"mode": "split", "units": [NaN]}}]}}}', "unit 0 of operators['s']['subtasks'][0]['x'] is "
                                                                   "the float nan (not valid JSON)"),
])
def test_text_that_is_not_a_document_is_refused_in_one_line(text, message):
    with pytest.raises(StateError) as caught:
        parse_operator_state(text)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_building_a_document_from_bad_snapshots_is_refused():
    with pytest.raises(StateError, match=r"^snapshots of operator 'source' are a dict; accepted: a list"):
        operator_state_document({"source": {"positions": {}}})
    with pytest.raises(StateError, match=r"^operators is a list; accepted: a dict of operator name"):
        operator_state_document([source_snapshots()])
    with pytest.raises(StateError, match=r"operator name '' in operator state; accepted: a non-empty string"):
        operator_state_document({"": [{}]})


def test_state_package_imports_only_the_standard_library_and_fw_magics_errors():
    """Layer 2 (pure models): no Spark, no Arrow, nothing above it (its errors, its JSON value checks)."""
    package = pathlib.Path(fw_magics.state.__file__).parent
    for module in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level == 1:
                    assert (package / f"{(node.module or '').split('.')[0]}.py").exists() or node.module is None
                    continue
                targets = [("." * node.level) + (node.module or "")]
            else:
                continue
            for target in targets:
                if target.startswith(".."):
                    assert target in ("..errors", "..errors.state", "..values.json_values"), (
                        f"{module.name} imports {target}")
                else:
                    top = target.split(".")[0]
                    assert top in sys.stdlib_module_names or target in ("fw_magics.errors", "fw_magics.errors.state"), (
                        f"{module.name} imports {target}")
