"""Is a recorded result file still what was committed? Its size, then its SHA-256. No Spark.

The record comes from the event log, which is untrusted: its path must be a plain relative
path inside the job's folder, reached without following a link, naming a regular file
(``Storage.open_inside``); at most the recorded size is read. A record that fails any of
this is a result that is not there ("result refused: ..."), so the subtask runs again.
"""

from __future__ import annotations

import hashlib

from .filesystem import Storage, UnsafeFile

_CHUNK = 1 << 20


def file_intact(storage: Storage, record: dict) -> str | None:
    """None when the recorded file exists with its size and SHA-256, else why not."""
    size, sha256 = record.get("size"), record.get("sha256")
    if isinstance(size, bool) or not isinstance(size, int) or size < 0 or not isinstance(sha256, str):
        return "result record damaged"
    try:
        handle = storage.open_inside(record.get("path"), max_bytes=size)
    except FileNotFoundError:
        return "result missing"
    except UnsafeFile as error:
        if "more than" in str(error):
            return "result corrupt: larger than recorded"
        return f"result refused: {error}"
    except OSError as error:
        return f"result unreadable: {error.strerror or error}"
    sha = hashlib.sha256()
    read = 0
    with handle:
        while read <= size:
            chunk = handle.read(min(_CHUNK, size + 1 - read))
            if not chunk:
                break
            sha.update(chunk)
            read += len(chunk)
    if read != size:
        return f"result corrupt: size {read} != {size}"
    if sha.hexdigest() != sha256:
        return "result corrupt: checksum differs"
    return None


#: The most of a sidecar ever read; a real one is about 200 bytes.
MAX_SIDECAR = 1 << 16


def sidecar_problem(meta, vertex: str, subtask: int) -> str | None:
    """None when ``meta`` (a sidecar read back) is one the runtime wrote for this subtask, else why not."""
    from .events import COUNT, INDEX, SECONDS, Record, Text
    from .paths import result_file

    shape = Record({"subtask": INDEX, "attempt": INDEX, "path": Text(1024), "size": COUNT,
                    "sha256": Text(128), "records": COUNT, "duration": SECONDS}, "a sidecar")
    why = shape.problem(meta)
    if why is not None:
        return why
    if meta["subtask"] != subtask or meta["path"] != result_file(vertex, subtask):
        return f"a sidecar of another subtask ({meta['path']!r:.80})"
    return None
