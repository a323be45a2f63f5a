"""Is a recorded result file still what was committed? Its size, then its SHA-256. No Spark."""

from __future__ import annotations

import hashlib

from .filesystem import Storage


def file_intact(storage: Storage, record: dict) -> str | None:
    """None when the recorded file exists with its size and SHA-256, else why not."""
    path = storage.path(*record["path"].split("/"))
    size = storage.size(path)
    if size is None:
        return "result missing"
    if size != record["size"]:
        return f"result corrupt: size {size} != {record['size']}"
    sha = hashlib.sha256()
    with storage.open(path) as f:
        while chunk := f.read(1 << 20):
            sha.update(chunk)
    if sha.hexdigest() != record["sha256"]:
        return "result corrupt: checksum differs"
    return None
