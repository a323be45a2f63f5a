"""Job directories to attack, and ways to see whether anything outside one was opened (no Spark).

``finished_job(root)`` writes a finished job of the four-operator graph (``tests/widgets/graphs``)
with real result files, through the real JobEventStore and Storage. ``OpenWatch`` uses Linux's
inotify (through ctypes) to see whether any process opened or read a file or folder: the
kernel reports every open, through any path or link, so "never opened" is checked, not
guessed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import struct

from fw_magics.recovery import events
from fw_magics.recovery.event_store import encode
from tests.widgets.graphs import commit_file, four_operators, full_run, write_log

IN_ACCESS, IN_OPEN = 0x1, 0x20


def finished_job(root: str, name: str = "job") -> str:
    """A finished job in ``root/name`` (3 job vertices x 3 subtasks, every result file committed)."""
    folder = os.path.join(root, name)
    log = full_run(four_operators(), name)
    for event in log:
        if event["type"] == "subtask_finished":
            event["files"] = [commit_file(folder, event["vertex"], event["subtask"],
                                          f"rows of {event['vertex']}[{event['subtask']}]".encode())]
    write_log(folder, log)
    return folder


def append_records(folder: str, records, index: int = 9, raw: bytes = b"") -> str:
    """Write well-framed ``records`` (any JSON values) and then ``raw`` bytes as ``events/events.<index>``."""
    path = os.path.join(folder, "events", f"events.{index}")
    with open(path, "wb") as f:
        for record in records:
            f.write(encode(record) if isinstance(record, dict) else _frame(record))
        f.write(raw)
    return path


def _frame(value) -> bytes:
    import json
    import zlib

    payload = value if isinstance(value, bytes) else json.dumps(value).encode()
    return struct.pack(">II", len(payload), zlib.crc32(payload)) + payload


frame = _frame


def finished_event(vertex: str, subtask: int, path: str, data: bytes) -> dict:
    import hashlib

    return events.subtask_finished(vertex, subtask, 1, None, 1, len(data), 0.1,
                                   [{"path": path, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}])


class OpenWatch:
    """Records whether any process opens or reads the watched paths (Linux inotify)."""

    def __init__(self, *paths: str):
        name = ctypes.util.find_library("c")
        self._libc = ctypes.CDLL(name, use_errno=True)
        self._fd = self._libc.inotify_init1(os.O_NONBLOCK)
        if self._fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        self.watched = {}
        for path in paths:
            wd = self._libc.inotify_add_watch(self._fd, os.fsencode(path), IN_OPEN | IN_ACCESS)
            if wd < 0:
                raise OSError(ctypes.get_errno(), f"inotify_add_watch {path}")
            self.watched[wd] = path
        self.opened: list[str] = []

    def poll(self) -> list[str]:
        """The watched paths opened or read since the last poll (or since the watch began)."""
        while True:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                break
            offset = 0
            while offset < len(data):
                wd, mask, _cookie, length = struct.unpack_from("iIII", data, offset)
                offset += 16 + length
                if mask & (IN_OPEN | IN_ACCESS) and wd in self.watched:
                    self.opened.append(self.watched[wd])
        return self.opened

    def close(self) -> None:
        os.close(self._fd)
