"""The file source's splits as operator state, and savepoint files (no Spark).

The seed's example (FLIP-8): 4 splits read by 2 source subtasks; restored at 1 that subtask
owns all 4, at 4 each owns one; nothing is skipped or read twice, whatever the positions. A
pure reference (every file once; read ones never again; unread ones by exactly one owner)
carries the breadth; a real ``kill -9`` in the writer leaves the previous savepoint loadable.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fw_magics.connectors.files.splits import partition_files, restored_manifest, source_snapshots
from fw_magics.errors import FullWindowError
from fw_magics.runtime.streaming.savepoints.files import (
    SavepointError,
    list_savepoints,
    load_savepoint,
    write_savepoint,
)
from fw_magics.state import operator_state_document


def manifest(n: int, read: int) -> dict:
    files = [{"name": f"kp{i + 1}", "size": 10 + i, "mtime_ns": i} for i in range(n)]
    return {"format": 1, "directory": "/data", "backlog": read, "files": files}


def owners(doc: dict) -> list[list[str]]:
    p = 1 + max(f["subtask"] for f in doc["files"])
    return [[f["name"] for f in doc["files"] if f["subtask"] == s] for s in range(p)]


def test_the_seeds_four_splits_at_two_restored_at_one_and_at_four():
    old = manifest(4, 0)
    snapshots = source_snapshots(old["files"], 0, 2)
    assert [[u["file"] for u in s["splits"]["units"]] for s in snapshots] == [["kp1", "kp3"], ["kp2", "kp4"]]
    at_one = restored_manifest(snapshots, old, 1)
    assert owners(at_one) == [["kp1", "kp2", "kp3", "kp4"]]
    at_four = restored_manifest(snapshots, old, 4)
    assert sorted(map(len, owners(at_four))) == [1, 1, 1, 1]
    assert at_one["backlog"] == at_four["backlog"] == 0
    # each subtask's files are one partition of the first micro-batch after the restore
    assert partition_files(at_four["files"], 0, 4, 4) == [[n] for g in owners(at_four) for n in g]
    assert partition_files(at_one["files"], 0, 4, 1) == [["kp1", "kp2", "kp3", "kp4"]]


@settings(max_examples=200, deadline=None)
@given(n=st.integers(0, 12), data=st.data(), chain=st.lists(st.integers(1, 6), min_size=1, max_size=4))
def test_a_chain_of_rescales_reads_every_file_exactly_once(n, data, chain):
    """Reference: after any chain of restores, the read files are the first ``read``; every other file
    has exactly one owner below the parallelism, and the micro-batch partitions cover each once."""
    read = data.draw(st.integers(0, n))
    doc, p = manifest(n, read), data.draw(st.integers(1, 6))
    for new in chain:
        doc = restored_manifest(source_snapshots(doc["files"], read, p), doc, new)
        p = new
        assert doc["backlog"] == read
        assert [f["name"] for f in doc["files"]] == [f"kp{i + 1}" for i in range(n)]
        assert all(0 <= f["subtask"] < p for f in doc["files"])
    groups = partition_files(doc["files"], read, n, p)
    names = [name for g in groups for name in g]
    assert sorted(names) == sorted(f"kp{i + 1}" for i in range(read, n))
    assert len(groups) <= p


def test_bad_split_state_is_refused_in_one_line():
    doc = manifest(3, 1)
    snaps = source_snapshots(doc["files"], 1, 2)
    twice = [snaps[0], {"splits": {"mode": "split", "units": snaps[0]["splits"]["units"]}}]
    with pytest.raises(FullWindowError, match="holds split 'kp1' twice"):
        restored_manifest(twice, doc, 2)
    with pytest.raises(FullWindowError, match="lacks split 'kp2'"):
        restored_manifest([snaps[0]], doc, 2)
    gap = source_snapshots(doc["files"], 1, 1)
    gap[0]["splits"]["units"][0]["read"] = False
    gap[0]["splits"]["units"][2]["read"] = True
    with pytest.raises(FullWindowError, match="not the first files"):
        restored_manifest(gap, doc, 2)


def _write(root: str, rows: int) -> str:
    doc = manifest(4, 2)
    ops = operator_state_document({"files(src)": source_snapshots(doc["files"], 2, 2)})
    keyed = pa.table({"k": pa.array(range(rows), pa.int64()), "__fw_state": pa.array(['{"v": {"running": 1}}'] * rows)})
    document = {"job": "j", "graph": GRAPH, "parallelism": 2, "source": {"path": "/data"}, "watermark": None,
                "key_names": ["k"], "read_files": 2}
    latest = pa.table({"k": pa.array(range(rows), pa.int64()), "__fw_kind": pa.array(["element"] * rows),
                       "__fw_seq": pa.array(range(rows), pa.int64())})
    return write_savepoint(root, document, ops, doc, keyed, latest)


def _graph_json() -> str:
    from fw_magics.graph import JobGraph

    graph = JobGraph(mode="streaming", chaining=True)
    graph.add_operator("files(src)", 2, kind="source")
    graph.add_operator("reduce(add)", 2, kind="reduce")
    graph.connect("files(src)", "reduce(add)")
    return graph.to_json()


GRAPH = _graph_json()


def _rewrite(path: str, doc: dict) -> None:
    os.remove(path)  # a savepoint's files are read-only: a new file in its place
    with open(path, "w") as f:
        json.dump(doc, f)


def test_a_savepoint_reads_back_and_a_damaged_or_foreign_one_is_refused(tmp_path):
    root = str(tmp_path / "job")
    first = _write(root, 3)
    sp = load_savepoint(first)
    assert sp.parallelism == 2 and sp.manifest["backlog"] == 2 and list(sp.operator_state) == ["files(src)"]
    assert sp.document["files"]["keyed-state.parquet"]["rows"] == 3
    second = _write(root, 1)
    assert list_savepoints(root) == [first, second]
    doc_path = os.path.join(second, "savepoint.json")
    doc = json.load(open(doc_path))
    assert doc["version"] == 5  # its base files may hold typed states, which fw-magics before 5 cannot read
    _rewrite(doc_path, dict(doc, version=6))
    with pytest.raises(SavepointError, match=r"version 6 \(written by a newer fw-magics.*accepted: 1, 2, 3, 4, 5$"):
        load_savepoint(second)
    _rewrite(doc_path, dict(doc, version=1))  # version 1 had no latest rows
    with pytest.raises(SavepointError, match="lists files"):
        load_savepoint(second)
    os.remove(os.path.join(second, "latest.parquet"))
    _rewrite(doc_path, dict(doc, version=1, files={k: v for k, v in doc["files"].items() if k != "latest.parquet"}))
    assert load_savepoint(second).latest_path is None
    _rewrite(doc_path, dict(doc, files=dict(doc["files"], extra={"size": 1})))
    with pytest.raises(SavepointError, match="lists files"):
        load_savepoint(second)
    _rewrite(doc_path, doc)
    os.remove(os.path.join(second, "source-manifest.json"))
    os.symlink(os.path.join(first, "source-manifest.json"), os.path.join(second, "source-manifest.json"))
    with pytest.raises(SavepointError, match="lacks the regular file 'source-manifest.json'"):
        load_savepoint(second)
    with pytest.raises(SavepointError, match="is not a directory"):
        load_savepoint(str(tmp_path / "nothing"))


@pytest.mark.parametrize("step", ["keyed-state.parquet", "savepoint.json"])
def test_kill_9_while_writing_a_savepoint_leaves_the_previous_one_valid(tmp_path, step):
    root = str(tmp_path / "job")
    first = _write(root, 2)
    child = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {os.path.dirname(os.path.dirname(__file__))!r})
        from fw_magics import hooks
        from test_splits_and_savepoints import _write
        def kill(directory, step):
            if step == {step!r}:
                os.kill(os.getpid(), signal.SIGKILL)
        hooks.register("savepoint_writing", kill)
        _write({root!r}, 5)
        """)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(__file__) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", child], env=env, timeout=120)
    assert done.returncode == -signal.SIGKILL
    assert list_savepoints(root) == [first]
    assert load_savepoint(first).document["files"]["keyed-state.parquet"]["rows"] == 2
    leftovers = [n for n in os.listdir(os.path.join(root, "savepoints")) if n.startswith(".tmp-")]
    assert len(leftovers) == 1  # the unfinished one, which nothing reads
    third = _write(root, 4)
    assert list_savepoints(root) == [first, third]


def test_a_failure_while_writing_leaves_no_tmp_folder_behind(tmp_path):
    """A Spark task that fails writing the keyed state (here: the writer raises) removes the savepoint's
    ``.tmp-`` folder before the error goes on: nothing half-written stays, the earlier savepoint is untouched."""
    root = str(tmp_path / "job")
    first = _write(root, 2)

    def failing(path):
        with open(path, "wb") as f:
            f.write(b"PAR1")
        raise RuntimeError("a task failed")

    with pytest.raises(RuntimeError, match="a task failed"):
        write_savepoint(root, {"job": "j"}, {}, {}, failing)
    assert sorted(os.listdir(os.path.join(root, "savepoints"))) == [os.path.basename(first)]
    assert list_savepoints(root) == [first]


def test_the_recovery_panel_lists_a_jobs_savepoints(tmp_path):
    from fw_magics.graph import JobGraph
    from fw_magics.recovery import events
    from fw_magics.recovery.jobs import Job
    from fw_magics.recovery.replay import replay

    graph = JobGraph()
    graph.add_operator("src", 2)
    log = [events.job_submitted("job", graph.to_json(), graph.fingerprint())]
    root = str(tmp_path / "job")
    job = Job(name="job", root=root, events=log, state=replay(log), holder=None)
    assert job.savepoints == [] and "savepoint" not in job.label()
    first, second = _write(root, 1), _write(root, 2)
    os.makedirs(os.path.join(root, "savepoints", ".tmp-unfinished"))
    assert job.savepoints == [first, second]
    assert job.label().endswith(", 2 savepoints (latest savepoint-000002)")
