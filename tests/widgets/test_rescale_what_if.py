"""GraphView's rescale what-if (FLIP-8): the seed's 4 splits at 2, restored at 1 and at 4 (no Spark)."""

from __future__ import annotations

from fw_magics.state import redistribute
from fw_magics.streaming.splits import source_snapshots
from fw_magics.widgets import GraphView

from .graphs import four_operators

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
