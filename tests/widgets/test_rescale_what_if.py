"""GraphView's rescale what-if (FLIP-8): the seed's 4 splits at 2, restored at 1 and at 4 (no Spark)."""

from __future__ import annotations

from fw_magics.connectors.files.splits import source_snapshots
from fw_magics.state import redistribute
from fw_magics.widgets import GraphView
from tests.widgets.graphs import four_operators

FILES = [{"name": f"kp{i + 1}", "size": 1, "mtime_ns": i} for i in range(4)]


def test_the_table_shows_where_each_split_goes():
    view = GraphView(four_operators(), follow=False)
    snapshots = source_snapshots(FILES, 2, 2)  # kp1, kp3 at subtask 0; kp2, kp4 at 1; kp1, kp2 read
    at_one = view.rescale_what_if(snapshots, 1)
    assert {(unit["file"], old, new) for _, _, old, unit, new in at_one} == {
        ("kp1", 0, 0), ("kp3", 0, 0), ("kp2", 1, 0), ("kp4", 1, 0)}
    at_four = view.rescale_what_if(snapshots, 4)
    assert sorted(new for *_, new in at_four) == [0, 1, 2, 3]
    # the table says what redistribute does
    old = [{"splits": s["splits"]["units"]} for s in snapshots]
    moved = redistribute(old, 4, {"splits": "split"})
    assert [[u["file"] for u in m["splits"]] for m in moved] == [
        [u["file"] for _, _, _, u, new in at_four if new == i] for i in range(4)]
    assert "Restore at parallelism 4" in view.rescale_text.value and "kp3 (to read)" in view.rescale_text.value
    assert "kp1 (read)" in view.rescale_text.value


def _savepoint(root: str) -> str:
    """A savepoint of a non-keyed job at 2 (no Spark): the source's 4 splits and Tally-like state."""
    import pyarrow as pa

    from fw_magics.runtime.streaming.savepoints.files import write_savepoint
    from fw_magics.state import operator_state_document

    manifest = {"format": 1, "directory": "/data", "backlog": 3, "files": FILES}
    process = [{"seen": {"mode": "split", "units": [1, 2, 4]}, "origins": {"mode": "union", "units": [0]}},
               {"seen": {"mode": "split", "units": [3]}, "origins": {"mode": "union", "units": [1]}}]
    operators = operator_state_document({"files(src)": source_snapshots(FILES, 3, 2), "process(Tally)": process})
    document = {"job": "t", "graph": _graph().to_json(), "parallelism": 2, "source": {"path": "/data"},
                "watermark": None, "key_names": [], "batch": 4, "read_files": 3, "kind": "operator"}
    return write_savepoint(root, document, operators, manifest, pa.table({}))


def _graph():
    from fw_magics.graph import JobGraph

    graph = JobGraph(mode="streaming", chaining=True)
    for name, kind in (("files(src)", "source"), ("process(Tally)", "process"), ("changelog", "sink")):
        graph.add_operator(name, parallelism=2, kind=kind)
    graph.connect("files(src)", "process(Tally)")
    graph.connect("process(Tally)", "changelog")
    return graph


def test_the_rescale_row_tells_where_every_operators_units_go(tmp_path):
    """Choose a savepoint and a parallelism, press the button: one table per operator, each unit with
    its old and new subtask as the pure rule (tests/state/reference_state.py) places it."""
    from fw_magics.runtime.streaming.savepoints.files import load_savepoint
    from tests.state import reference_state

    path = _savepoint(str(tmp_path / "job"))
    view = GraphView(_graph(), follow=False)
    assert view.rescale_controls.layout.display == "none"  # nothing to offer yet
    view.offer_savepoints([path], 2)
    controls = view.rescale_controls
    assert controls.layout.display == "flex" and controls.savepoint.value == path
    assert controls.savepoint.options == (("savepoint-000001", path),)
    controls.parallelism.value = 3
    controls.button.click()
    saved = load_savepoint(path).operator_state
    assert set(view.last_rescale_operators) == set(saved) == {"files(src)", "process(Tally)"}
    for operator, snapshots in saved.items():
        old = [{name: entry["units"] for name, entry in s.items()} for s in snapshots]
        modes = {name: entry["mode"] for s in snapshots for name, entry in s.items()}
        expected = reference_state.redistribute(old, 3, modes)
        got = view.last_rescale_operators[operator]
        for name in modes:
            assert [[u for n, _, _, u, new in got if n == name and new == j] for j in range(3)] == \
                [expected[j][name] for j in range(3)], (operator, name)
    assert view.highlighted == {"files(src)": "state 2 \u2192 3", "process(Tally)": "state 2 \u2192 3"}
    text = view.rescale_text.value
    assert "Restore at parallelism 3" in text and "savepoint-000001 of &#x27;job&#x27;" in text
    assert "(taken at parallelism 2, after micro-batch 4)" in text and f"title='{path}'" in text
    assert text.count("<table") == 2 and "kp4 (to read)" in text
    view.rescale_savepoint(path, 1, restored=True)
    assert "Restored at parallelism 1" in view.rescale_text.value
    assert {row[4] for row in view.last_rescale} == {0}


def test_a_restored_jobs_savepoints_are_offered_once_each_and_told_apart(tmp_path):
    """show_graph(restored job) offers the savepoint it was restored from and its own savepoints: tutorial 7
    listed "savepoint-000001" twice, the original job's and the restored job's, alike (issue 51)."""
    import os

    from fw_magics.runtime.streaming.savepoints.files import list_savepoints

    restored_from = _savepoint(str(tmp_path / "orders"))
    own = _savepoint(str(tmp_path / "orders-at-3"))
    view = GraphView(_graph(), follow=False)
    offered = [restored_from, *list_savepoints(str(tmp_path / "orders-at-3")), own + os.sep,
               os.path.relpath(restored_from)]  # each also spelled another way
    view.offer_savepoints(offered, 3)
    options = view.rescale_controls.savepoint.options
    assert [label for label, _ in options] == ["savepoint-000001 of 'orders'", "savepoint-000001 of 'orders-at-3'"]
    assert [os.path.realpath(p) for _, p in options] == [os.path.realpath(restored_from), os.path.realpath(own)]
    assert view.rescale_controls.savepoint.value == options[-1][1]  # the newest chosen
    view.offer_savepoints([own], 3)  # a name no other shares: the name alone
    assert view.rescale_controls.savepoint.options == (("savepoint-000001", own),)
