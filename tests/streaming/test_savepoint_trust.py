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
                      "__fw_state": pa.array([None] * n + ['{"v": 0}'] * n)})
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        for batch in table.to_batches(max_chunksize=n):
            writer.write_batch(batch)
    with open(path, "rb") as f:
        return path, hashlib.sha256(f.read()).hexdigest()


def savepoint(root: str, rows: int = 3, states=None) -> str:
    doc = manifest(4, 2)
    ops = operator_state_document({"files(src)": source_snapshots(doc["files"], 2, 2)})
    states = states or ['{"v": 1}'] * rows
    keyed = pa.table({"k": pa.array(range(rows), pa.int64()), "__fw_state": pa.array(states)})
    latest = pa.table({"k": pa.array(range(rows), pa.int64()), "v": pa.array(range(rows), pa.int64()),
                       "__fw_kind": pa.array(["element"] * rows), "__fw_seq": pa.array(range(rows), pa.int64())})
    document = {"job": "j", "graph": GRAPH, "parallelism": 2, "source": {"path": "/data", "kind": "files"},
                "watermark": 1_700_000_000_000, "key_names": ["k"], "kind": "aggregate", "batch": 3,
                "read_files": 2}
    return write_savepoint(root, document, ops, doc, keyed, latest, [base_file(f"{root}/results/v1/0.arrow")])


def read_document(path: str) -> dict:
    with open(os.path.join(path, "savepoint.json")) as f:
        return json.load(f)


def write_document(path: str, doc: dict) -> None:
    with open(os.path.join(path, "savepoint.json"), "w") as f:
        json.dump(doc, f)


def forge(path: str, name: str, data: bytes) -> None:
    """Replace a file and recompute its size and SHA-256 in the document (what a checksum cannot catch)."""
    with open(os.path.join(path, name), "wb") as f:
        f.write(data)
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
    loaded = load_savepoint(savepoint(str(tmp_path / "job"), states=['{"v": 1}', "{}", '{"v": 2}']))
    assert sorted((r["k"], r["__fw_state"]) for r in loaded.keyed_table().to_pylist()) == [
        (0, '{"v": 1}'), (2, '{"v": 2}'), (3, '{"v": 0}'), (4, '{"v": 0}')]
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
