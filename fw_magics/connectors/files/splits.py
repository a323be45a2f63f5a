"""The file source's splits as operator state (FLIP-8): which source subtask reads which file.

Pure Python (no Spark): the savepoint writer and the restore call it, and so does the
``fw_files`` stream reader inside Spark's Python workers.

A **split** of the file source is one file of its manifest; its **position** is whether the
stream has read it (a file is read whole, in one micro-batch, so a position is "not yet" or
"all of it"). The source's **subtasks** are the input partitions of a micro-batch: at
parallelism ``p`` every file has an owner subtask in ``0..p-1`` (``"subtask"`` in its manifest
entry; a file without one belongs to ``index % p``, round robin in discovery order) and a
micro-batch reads its new files as at most ``p`` partitions, one per owner.

In a savepoint each source subtask's splits are one ``ListState`` named ``"splits"``, units
``{"file", "size", "mtime_ns", "read"}`` (``snapshot_subtask``'s shape). Restoring at ``p'``
hands the units out with :func:`fw_magics.state.redistribute` (Flink's round-robin
repartitioner: contiguous runs), which gives every file its new owner; nothing is copied, so
every file is read exactly once: the read ones never again, the unread ones by their new owner.
"""

from __future__ import annotations

from ...errors import FullWindowError
from ...state import redistribute
from ...state.snapshots import subtask_modes
from ..base import SPLITS


def owner(entry: dict, index: int, parallelism: int) -> int:
    """The source subtask that reads manifest file ``index`` at ``parallelism``."""
    subtask = entry.get("subtask")
    if type(subtask) is int and 0 <= subtask < parallelism:
        return subtask
    return index % parallelism


def source_snapshots(files: list[dict], read: int, parallelism: int) -> list[dict]:
    """One operator-state snapshot per source subtask: its splits, in manifest order, with positions.

    ``files``: the manifest's entries in order; ``read``: how many of them the stream has read
    (always a prefix: the stream's offset is a count of manifest files).
    """
    units: list[list[dict]] = [[] for _ in range(parallelism)]
    for index, entry in enumerate(files):
        units[owner(entry, index, parallelism)].append(
            {"file": entry["name"], "size": entry["size"], "mtime_ns": entry["mtime_ns"], "read": index < read})
    return [{SPLITS: {"mode": "split", "units": u}} for u in units]


def read_splits(snapshots: list[dict], manifest: dict, error=FullWindowError) -> set[int]:
    """The indexes of the manifest files the savepoint's splits say were read, after checking the splits
    against the manifest: each of its files once, nothing else, the read ones its first files and as many
    as its ``backlog`` says were read (a split marked unread would be read again, counted twice).
    ``error`` with one line otherwise."""
    try:
        modes = subtask_modes(snapshots, "source snapshots")
    except FullWindowError as problem:
        raise error(f"the savepoint's source state: {problem}") from None
    if modes != {SPLITS: "split"}:
        raise error(f"the savepoint's source state has states {modes}; accepted: {{{SPLITS!r}: 'split'}}")
    files = manifest["files"]
    index = {f["name"]: i for i, f in enumerate(files)}
    seen: set[str] = set()
    read: set[int] = set()
    for snapshot in snapshots:
        for unit in snapshot.get(SPLITS, {"units": []})["units"]:
            name = unit.get("file") if isinstance(unit, dict) else None
            if name not in index:
                raise error(f"the savepoint's split {unit!r:.80} is not a file of its manifest")
            if name in seen:
                raise error(f"the savepoint holds split {name!r} twice; accepted: each file once")
            seen.add(name)
            if unit.get("read") is True:
                read.add(index[name])
    missing = [f["name"] for f in files if f["name"] not in seen]
    if missing:
        raise error(f"the savepoint's source state lacks split {missing[0]!r} of its manifest")
    if read != set(range(len(read))):
        raise error("the savepoint's read splits are not the first files of its manifest")
    if len(read) != manifest["backlog"]:
        raise error(f"the savepoint's splits mark {len(read)} files read, its manifest {manifest['backlog']}: the "
                    "savepoint is damaged (a file marked unread would be read again)")
    return read


def restored_manifest(snapshots: list[dict], manifest: dict, parallelism: int) -> dict:
    """The manifest of a job restored at ``parallelism``: every split with its new owner, the read ones
    as its backlog (never read again).

    ``snapshots``: the savepoint's source subtask snapshots; ``manifest``: the savepoint's
    manifest. Refused in one line (``read_splits``): a split that is missing, appears twice, is not
    in the manifest, or read splits that are not the manifest's first files or not as many as it says.
    """
    read = read_splits(snapshots, manifest)
    modes = {SPLITS: "split"}
    old = [{SPLITS: s.get(SPLITS, {"units": []})["units"]} for s in snapshots]
    new = redistribute(old, parallelism, modes)
    owners = {unit["file"]: subtask for subtask, states in enumerate(new) for unit in states[SPLITS]}
    entries = [dict(f, subtask=owners[f["name"]]) for f in manifest["files"]]
    kept = {k: manifest[k] for k in ("glob", "reader") if k in manifest}  # the names it lists, how it reads them
    return {"format": manifest["format"], "directory": manifest["directory"], **kept, "backlog": len(read),
            "files": entries}


def partition_files(files: list[dict], start: int, end: int, parallelism: int) -> list[list[str]]:
    """The names of manifest files ``start..end-1`` grouped by owner subtask (empty groups left out)."""
    return [names for _, names in subtask_files(files, start, end, parallelism)]


def subtask_files(files: list[dict], start: int, end: int, parallelism: int) -> list[tuple[int, list[str]]]:
    """``(subtask, names)`` of manifest files ``start..end-1``, per owner subtask in order (empty ones left out)."""
    groups: list[list[str]] = [[] for _ in range(parallelism)]
    for index in range(start, end):
        groups[owner(files[index], index, parallelism)].append(files[index]["name"])
    return [(subtask, g) for subtask, g in enumerate(groups) if g]
