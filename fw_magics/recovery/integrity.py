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
#: Arrow IPC's end-of-stream marker: a result file ends with it (its writer closed the stream whole).
END_OF_STREAM = b"\xff\xff\xff\xff\x00\x00\x00\x00"


def cut_short(f) -> bool:
    """Whether the seekable binary file ``f``, an Arrow stream, lacks the end-of-stream marker its writer
    closed it with: one cut short at a batch's end reads back as a shorter stream, without an error. Its
    position is kept."""
    at = f.tell()
    try:
        size = f.seek(0, 2)
        if size < len(END_OF_STREAM):
            return True
        f.seek(size - len(END_OF_STREAM))
        return f.read(len(END_OF_STREAM)) != END_OF_STREAM
    finally:
        f.seek(at)


def unreadable(where: str, why) -> str:
    """The one line that names a committed file that can no longer be read (``why``: the reader's error, or
    words), and what that means."""
    if isinstance(why, BaseException):
        text = str(why).splitlines()[0][:200] if str(why) else ""
        why = f"{type(why).__name__}: {text}" if text else type(why).__name__
    return (f"the committed file {where} cannot be read ({why}): it was changed after it was written (a "
            "savepoint's base file is one file in every job and savepoint that shares it)")


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
