"""A savepoint is untrusted input (issue 31): every tampering is refused at load, in one line, at once.

Pure: no Spark. Each case forges a savepoint written by ``write_savepoint`` the way an attacker or
a broken disk would, recomputing its digest where that makes the forgery pass the checksum, and
loads it: one ``SavepointError`` line naming the field or the file, within a second, and (an audit
hook) nothing opened outside the savepoint's folder.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fw_magics.connectors.files.splits import source_snapshots
from fw_magics.runtime.streaming.savepoints.files import SavepointError, load_savepoint, write_savepoint
from fw_magics.state import operator_state_document
from tests.streaming.test_splits_and_savepoints import GRAPH, manifest

GIB = 1 << 30


def base_file(path: str, keys=range(5), key_type=pa.int64()) -> tuple[str, str]:
    """A backlog's result file (an Arrow stream): an output row and a state row per key; (path, sha256)."""
    keys = list(keys)
    n = len(keys)
    table = pa.table({"k": pa.array(keys * 2, key_type), "v": pa.array([10 + i for i in range(n)] + [None] * n,
                                                                      pa.int64()),
                      "__fw_kind": pa.array(["element"] * n + [None] * n), "__fw_seq": pa.array(range(2 * n), pa.int64()),
                      "__fw_row": pa.array(["out"] * n + ["state"] * n),
                      "__fw_state": pa.array([None] * n + ['{"v": {"running": 0}}'] * n)})
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        for batch in table.to_batches(max_chunksize=max(n, 1)):
            writer.write_batch(batch)
    with open(path, "rb") as f:
        return path, hashlib.sha256(f.read()).hexdigest()


def hashed_base(root: str, partitions: int, keys=range(10)) -> list[tuple[str, str]]:
    """A backlog's result files at ``partitions``: each key in the file Spark's hash partitioning puts it in."""
    from fw_magics.runtime.streaming.keyed.spark_hash import partition

    return [base_file(f"{root}/results/v1/{i}.arrow", [k for k in keys if partition((k,), (True,), partitions) == i])
            for i in range(partitions)]


def savepoint(root: str, rows: int = 3, states=None, partitions: int | None = None) -> str:
    doc = manifest(4, 2)
    ops = operator_state_document({"files(src)": source_snapshots(doc["files"], 2, 2)})
    states = states or ['{"v": {"running": 1}}'] * rows
    keyed = pa.table({"k": pa.array(range(rows), pa.int64()), "__fw_state": pa.array(states)})
    latest = pa.table({"k": pa.array(range(rows), pa.int64()), "v": pa.array(range(rows), pa.int64()),
                       "__fw_kind": pa.array(["element"] * rows), "__fw_seq": pa.array(range(rows), pa.int64())})
    document = {"job": "j", "graph": GRAPH, "parallelism": 2, "source": {"path": "/data", "kind": "files"},
                "watermark": 1_700_000_000_000, "top": 1_700_000_005_000, "key_names": ["k"], "kind": "aggregate",
                "batch": 3,
                "read_files": 2}
    base = [base_file(f"{root}/results/v1/0.arrow")] if partitions is None else hashed_base(root, partitions)
    return write_savepoint(root, document, ops, doc, keyed, latest, base)


def read_document(path: str) -> dict:
    with open(os.path.join(path, "savepoint.json")) as f:
        return json.load(f)


def replace_file(target: str, data: bytes) -> None:
    """Write ``data`` as ``target``: a new file (a savepoint's are read-only, and a base file's inode is shared)."""
    if os.path.lexists(target):
        os.remove(target)
    with open(target, "wb") as f:
        f.write(data)


def write_document(path: str, doc: dict) -> None:
    replace_file(os.path.join(path, "savepoint.json"), json.dumps(doc).encode())


def forge(path: str, name: str, data: bytes) -> None:
    """Replace a file and recompute its size and SHA-256 in the document (what a checksum cannot catch)."""
    replace_file(os.path.join(path, name), data)
    doc = read_document(path)
    doc["files"][name].update(size=len(data), sha256=hashlib.sha256(data).hexdigest())
    write_document(path, doc)


def forge_table(path: str, name: str, table: pa.Table) -> None:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    forge(path, name, sink.getvalue().to_pybytes())
    doc = read_document(path)
    doc["files"][name]["rows"] = table.num_rows
    write_document(path, doc)


def field(name, value):
    def tamper(path):
        doc = read_document(path)
        doc[name] = value
        write_document(path, doc)
    return tamper


def manifest_entry(name):
    def tamper(path):
        with open(os.path.join(path, "source-manifest.json")) as f:
            doc = json.load(f)
        doc["files"][0]["name"] = name
        forge(path, "source-manifest.json", json.dumps(doc).encode())
    return tamper


def truncated(path):
    with open(os.path.join(path, "keyed-state.parquet"), "rb") as f:
        data = f.read()
    forge(path, "keyed-state.parquet", data[: len(data) // 2])


def renamed_key(path):
    table = pq.read_table(os.path.join(path, "keyed-state.parquet")).rename_columns(["key", "__fw_state"])
    forge_table(path, "keyed-state.parquet", table)


def not_json_state(path):
    table = pq.read_table(os.path.join(path, "keyed-state.parquet"))
    forge_table(path, "keyed-state.parquet", table.set_column(1, "__fw_state", pa.array(["{not json"] * 3)))


def more_rows_than_said(path):
    doc = read_document(path)
    doc["files"]["keyed-state.parquet"]["rows"] = 2
    write_document(path, doc)


def sparse(path):
    """A 4 GiB file of nothing, its size in the document (its digest cannot be, but it need not be read)."""
    target = os.path.join(path, "keyed-state.parquet")
    os.remove(target)
    with open(target, "wb") as f:
        f.truncate(4 * GIB)
    doc = read_document(path)
    doc["files"]["keyed-state.parquet"]["size"] = 4 * GIB
    write_document(path, doc)


def fifo(path):
    target = os.path.join(path, "keyed-state.parquet")
    os.remove(target)
    os.mkfifo(target)


def dev_zero(path):
    target = os.path.join(path, "operator-state.json")
    os.remove(target)
    os.symlink("/dev/zero", target)


def linked_out(path):
    outside = os.path.join(os.path.dirname(path), "elsewhere.json")
    os.replace(os.path.join(path, "source-manifest.json"), outside)
    os.symlink(outside, os.path.join(path, "source-manifest.json"))


def base_forged(data_of):
    """Replace the base file and recompute its size and SHA-256 in the document."""
    def tamper(path):
        target = os.path.join(path, "base", "0000.arrow")
        data = data_of(target)
        os.remove(target)  # a hard link to the job's file: not written through
        with open(target, "wb") as f:
            f.write(data)
        doc = read_document(path)
        doc["base"][0].update(size=len(data), sha256=hashlib.sha256(data).hexdigest())
        write_document(path, doc)
    return tamper


def base_flipped(path):
    target = os.path.join(path, "base", "0000.arrow")
    with open(target, "rb") as f:
        data = bytearray(f.read())
    data[-20] ^= 0xFF
    os.remove(target)
    with open(target, "wb") as f:
        f.write(bytes(data))


def base_linked_out(path):
    outside = os.path.join(os.path.dirname(path), "elsewhere")
    os.replace(os.path.join(path, "base"), outside)
    os.symlink(outside, os.path.join(path, "base"))


def _other_key_type(target):
    other = base_file(target + ".other", key_type=pa.string(), keys=map(str, range(5)))[0]
    with open(other, "rb") as f:
        return f.read()


TAMPERINGS = {
    # every document field, of the wrong type or out of range
    "job not a name": (field("job", 5), "field 'job' is 5; accepted: a job name"),
    "graph not JSON": (field("graph", "soon"), "field 'graph' is not a job graph"),
    "parallelism 0": (field("parallelism", 0), "field 'parallelism' is 0; accepted: an integer from 1 to 1024"),
    "parallelism huge": (field("parallelism", 32768), "field 'parallelism' is 32768"),
    "parallelism a bool": (field("parallelism", True), "field 'parallelism' is True"),
    "source not an object": (field("source", "/data"), "field 'source' is '/data'"),
    "source without a path": (field("source", {"kind": "files"}), "field 'source' is {'kind': 'files'}"),
    "watermark a word": (field("watermark", "soon"), "field 'watermark' is 'soon'; accepted: null or epoch"),
    "watermark out of range": (field("watermark", 10**30), "field 'watermark' is 1000000000000000000000000000000"),
    "key_names a number": (field("key_names", 5), "field 'key_names' is 5; accepted: a list of distinct"),
    "longest_ms negative": (field("longest_ms", -1), "field 'longest_ms' is -1; accepted: null or milliseconds"),
    "key_names twice": (field("key_names", ["k", "k"]), "field 'key_names' is ['k', 'k']"),
    "kind unknown": (field("kind", "join"), "field 'kind' is 'join'; accepted: reduce, aggregate, process"),
    "batch negative": (field("batch", -1), "field 'batch' is -1"),
    "read_files not the manifest's": (field("read_files", 7), "field 'read_files' is 7, but its manifest says 2"),
    # paths: .. and absolute ones in the manifest's file names
    "manifest name ..": (manifest_entry(".."), "source manifest of savepoint"),
    "manifest name up and out": (manifest_entry("../../etc/passwd"), "source manifest of savepoint"),
    "manifest name absolute": (manifest_entry("/etc/passwd"), "source manifest of savepoint"),
    # the keyed state, its digest recomputed
    "keyed state truncated": (truncated, "'keyed-state.parquet' in"),
    "key column renamed": (renamed_key, "has columns ['key', '__fw_state']; accepted: ['k', '__fw_state']"),
    "state not JSON": (not_json_state, "holds a state that is not a JSON object ('{not json')"),
    "rows not as said": (more_rows_than_said, "holds 3 rows, its document says 2"),
    # files that are not what they claim
    "a sparse 4 GiB file": (sparse, "'keyed-state.parquet' in"),
    "a FIFO": (fifo, "lacks the regular file 'keyed-state.parquet'"),
    "a link to /dev/zero": (dev_zero, "lacks the regular file 'operator-state.json'"),
    "a link out of the folder": (linked_out, "lacks the regular file 'source-manifest.json'"),
    # the base files (shared with the job's committed state)
    "base file damaged": (base_flipped, "savepoint file 'base/0000.arrow' in"),
    "base not an Arrow stream": (base_forged(lambda target: b"PAR1" * 64), "is not an Arrow stream fw-magics wrote"),
    "base keys of another type": (base_forged(_other_key_type), "accepted: the keys ['k'] of the keyed state's types"),
    "base name escaping": (field("base", [{"name": "../savepoint.json", "size": 1, "sha256": "0" * 64}]),
                           "field 'base' is"),
    "base folder a link": (base_linked_out, "folder 'base' in"),
}


@pytest.fixture(scope="module")
def opened():
    """Paths opened while ``opened["on"]`` (a Python audit hook: it cannot be removed, so it is cheap)."""
    seen = {"on": False, "paths": []}

    def hook(event, args):
        if seen["on"] and event == "open" and isinstance(args[0], (str, bytes)):
            seen["paths"].append(os.fsdecode(args[0]))

    sys.addaudithook(hook)
    return seen


@pytest.mark.parametrize("case", list(TAMPERINGS))
def test_a_tampered_savepoint_is_refused_at_load_in_one_line_within_a_second(case, tmp_path, opened):
    path = savepoint(str(tmp_path / "job"))
    load_savepoint(path)  # sound before the tampering (and every module it needs is imported)
    tamper, says = TAMPERINGS[case]
    tamper(path)
    opened["paths"].clear()
    opened["on"] = True
    started = time.monotonic()
    try:
        with pytest.raises(SavepointError) as refused:
            load_savepoint(path)
    finally:
        opened["on"] = False
    took = time.monotonic() - started
    message = str(refused.value)
    assert says in message and "\n" not in message, message
    assert took < 1.0, f"{case}: {took:.2f} s"
    inside = os.path.realpath(path) + os.sep
    assert all(os.path.realpath(p).startswith(inside) or os.path.realpath(p) == os.path.realpath(path)
               for p in opened["paths"]), opened["paths"]


def test_a_sound_savepoint_loads_with_its_key_types_and_only_its_own_files_opened(tmp_path, opened):
    path = savepoint(str(tmp_path / "job"))
    load_savepoint(path)
    opened["paths"].clear()
    opened["on"] = True
    try:
        loaded = load_savepoint(path)
    finally:
        opened["on"] = False
    assert loaded.key_types == [pa.int64()] and loaded.document["watermark"] == 1_700_000_000_000
    assert {os.path.basename(p) for p in opened["paths"]} <= {"savepoint.json", "keyed-state.parquet",
                                                              "latest.parquet", "operator-state.json",
                                                              "source-manifest.json", "0000.arrow"}
    assert len(loaded.base) == 1
    assert opened["paths"]  # the hook saw the reads


def test_the_whole_state_is_the_keyed_state_file_over_its_base_a_tombstone_hiding_a_base_key(tmp_path):
    """Keys 0..4 in the base; the keyed-state file over it: 0 and 2 newer, 1 cleared (the tombstone)."""
    loaded = load_savepoint(savepoint(str(tmp_path / "job"), states=['{"v": {"running": 1}}', "{}", '{"v": {"running": 2}}']))
    assert sorted((r["k"], r["__fw_state"]) for r in loaded.keyed_table().to_pylist()) == [
        (0, '{"v": {"running": 1}}'), (2, '{"v": {"running": 2}}'), (3, '{"v": {"running": 0}}'), (4, '{"v": {"running": 0}}')]
    # the latest rows: the file's for keys 0..2, the base's outputs for 3 and 4
    assert sorted((r["k"], r["v"]) for r in loaded.latest_table().to_pylist()) == [(0, 0), (1, 1), (2, 2), (3, 13),
                                                                                   (4, 14)]


def test_an_untampered_copy_still_loads(tmp_path):
    """The forgeries above change one thing each: the same steps without a change load."""
    path = savepoint(str(tmp_path / "job"))
    doc = read_document(path)
    write_document(path, copy.deepcopy(doc))
    with open(os.path.join(path, "source-manifest.json"), "rb") as f:
        forge(path, "source-manifest.json", f.read())
    assert load_savepoint(path).manifest["backlog"] == 2


# -- issue 47: savepoints whose files each pass every check alone, made to agree in every digest, size and
# count, but that disagree with one another (each refused at load, in one line, before anything runs)


def base_removed(path):
    """The last base file and its entry removed: 'base_partitions' left, or made to agree too."""
    os.remove(os.path.join(path, "base", "0002.arrow"))
    doc = read_document(path)
    doc["base"] = doc["base"][:-1]
    write_document(path, doc)


def base_removed_and_count_made_to_agree(path):
    base_removed(path)
    doc = read_document(path)
    doc["base_partitions"] = 2
    write_document(path, doc)


def base_moved(path):
    """Two base files swapped, their entries (sizes, digests) made to agree."""
    first, second = (os.path.join(path, "base", f"000{i}.arrow") for i in (0, 1))
    os.replace(first, first + ".x")
    os.replace(second, first)
    os.replace(first + ".x", second)
    doc = read_document(path)
    doc["base"][0], doc["base"][1] = (dict(doc["base"][1], name="base/0000.arrow"),
                                      dict(doc["base"][0], name="base/0001.arrow"))
    write_document(path, doc)


def base_cut(at):
    """A base file cut short (``at``: a function of its size and its messages' ends), in place: its size and
    digest made to agree."""
    def tamper(path):
        target = os.path.join(path, "base", "0001.arrow")
        with open(target, "rb") as f:
            data = f.read()
        cut = data[:at(data)]
        replace_file(target, cut)
        doc = read_document(path)
        doc["base"][1].update(size=len(cut), sha256=hashlib.sha256(cut).hexdigest())
        write_document(path, doc)
    return tamper


def _last_message_end(data: bytes) -> int:
    """Where the last record batch ends: the stream without its end-of-stream marker."""
    return len(data) - 8


def splits_marked_unread(agree: str):
    """Every split marked unread in operator-state.json (its digest recomputed); ``agree``: which other records
    of the position are made to say so too ("" none, "manifest": the manifest's backlog)."""
    def tamper(path):
        with open(os.path.join(path, "operator-state.json")) as f:
            ops = json.load(f)
        for snapshot in ops["operators"]["files(src)"]["subtasks"]:
            for unit in snapshot["splits"]["units"]:
                unit["read"] = False
        forge(path, "operator-state.json", json.dumps(ops).encode())
        if agree == "manifest":
            with open(os.path.join(path, "source-manifest.json")) as f:
                manifest_doc = json.load(f)
            forge(path, "source-manifest.json", json.dumps(dict(manifest_doc, backlog=0)).encode())
    return tamper


def state_of_another_shape(path):
    """A keyed-state file whose states are not the per-key core's (another program's), counts made to agree."""
    table = pq.read_table(os.path.join(path, "keyed-state.parquet"))
    forge_table(path, "keyed-state.parquet", table.set_column(1, "__fw_state", pa.array(['{"count": 3}'] * 3)))


MADE_TO_AGREE = {
    "the last base file removed": (base_removed, "lists 2 base files; its base was written in 3 partitions"),
    "... and base_partitions made to agree": (base_removed_and_count_made_to_agree,
                                              r"puts in partition \d of 2, not \d: a base file is missing"),
    "two base files swapped": (base_moved, "which Spark's hash partitioning puts in partition"),
    "a base file cut inside a batch": (base_cut(lambda data: len(data) - 40),
                                       "savepoint file 'base/0001.arrow' in"),
    "a base file cut after its last batch": (base_cut(_last_message_end),
                                             "'base/0001.arrow' in .* ends without Arrow's end-of-stream marker"),
    "a watermark in the year 9999": (field("watermark", 253_402_300_799_000),
                                     "has watermark 253402300799000, after 1700000005000, the newest event time"),
    "a watermark without the time read": (field("top", None), "has watermark 1700000000000 but no 'top'"),
    "splits marked unread": (splits_marked_unread(""), "splits mark 0 files read, its manifest 2"),
    "splits marked unread, the manifest made to agree": (splits_marked_unread("manifest"),
                                                         "field 'read_files' is 2, but its manifest says 0"),
    "states of another shape": (state_of_another_shape, "'keyed-state.parquet' in .* holds a state that is not a "
                                                        "JSON object of 'v', 'l' and 't'"),
}


@pytest.mark.parametrize("case", list(MADE_TO_AGREE))
def test_savepoint_files_made_to_agree_one_by_one_but_not_with_each_other_are_refused(case, tmp_path):
    import re

    path = savepoint(str(tmp_path / "job"), partitions=3)
    load_savepoint(path)
    tamper, says = MADE_TO_AGREE[case]
    tamper(path)
    started = time.monotonic()
    with pytest.raises(SavepointError) as refused:
        load_savepoint(path)
    message = str(refused.value)
    assert re.search(says, message) and "\n" not in message, message
    assert time.monotonic() - started < 1.0


def test_a_sound_savepoint_of_three_base_partitions_loads_with_what_its_states_hold(tmp_path):
    loaded = load_savepoint(savepoint(str(tmp_path / "job"), partitions=3))
    assert loaded.document["base_partitions"] == 3 and len(loaded.base) == 3
    assert sorted(r["k"] for r in loaded.keyed_table().to_pylist()) == list(range(10))
    # what the states hold: the base's first (each file's first states), then the keyed-state file's
    assert loaded.shape.names == {("value", "running"): [0] * 10 + [1] * 3} and not loaded.shape.timers
