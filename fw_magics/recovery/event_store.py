"""JobEventStore: the append-only job event log of FLIP-383.

Events are written by a background thread through a buffer flushed by size and by
interval; ``flush()`` blocks until everything so far is on disk (and fsynced locally).
Files are ``events.0``, ``events.1``, ...: each ``start()`` begins a new file, never
appending to one a crash may have torn. Each record is framed as a 4-byte big-endian
length, a 4-byte CRC32 of the payload, and the payload (compact JSON). A torn tail or a
corrupt record is skipped with a warning and reading goes on.
"""

from __future__ import annotations

import json
import os
import queue
import struct
import threading
import time
import warnings
import zlib

from .filesystem import Storage

_HEADER = struct.Struct(">II")
_PREFIX = "events."


def encode(event: dict) -> bytes:
    payload = json.dumps(event, sort_keys=True, separators=(",", ":")).encode()
    return _HEADER.pack(len(payload), zlib.crc32(payload)) + payload


def decode(data: bytes, name: str = "events"):
    """Yield the valid events of one file's bytes, warning about torn or corrupt records."""
    offset = 0
    while offset < len(data):
        if len(data) - offset < _HEADER.size:
            warnings.warn(f"{name}: torn record header at byte {offset} (crash while writing); skipped")
            return
        length, crc = _HEADER.unpack_from(data, offset)
        start = offset + _HEADER.size
        payload = data[start:start + length]
        if len(payload) < length:
            warnings.warn(f"{name}: torn record at byte {offset} (crash while writing); skipped")
            return
        offset = start + length
        if zlib.crc32(payload) != crc:
            warnings.warn(f"{name}: corrupt record at byte {start - _HEADER.size} (checksum mismatch); skipped")
            continue
        try:
            yield json.loads(payload)
        except ValueError:
            warnings.warn(f"{name}: unreadable record at byte {start - _HEADER.size}; skipped")


class JobEventStore:
    def __init__(self, path: str, write_buffer_size: int = 1 << 20, flush_interval: float = 1.0):
        self.storage = Storage(path)
        self.write_buffer_size = write_buffer_size
        self.flush_interval = flush_interval
        self._queue: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._index = -1

    # -- files --------------------------------------------------------------------------------

    def _indexes(self) -> list[int]:
        names = self.storage.listdir(self.storage.base)
        return sorted(int(n[len(_PREFIX):]) for n in names if n.startswith(_PREFIX) and n[len(_PREFIX):].isdigit())

    def has_events(self) -> bool:
        return bool(self._indexes())

    @staticmethod
    def exists(path: str) -> bool:
        return JobEventStore(path).has_events()

    def read_events(self) -> list[dict]:
        """Every readable event, in write order (file index, then position)."""
        found = []
        for index in self._indexes():
            path = self.storage.path(f"{_PREFIX}{index}")
            with self.storage.open(path) as f:
                data = f.read()
            found.extend(decode(data, f"{_PREFIX}{index}"))
        return found

    # -- writing ------------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            return
        indexes = self._indexes()
        self._index = (indexes[-1] + 1) if indexes else 0
        self._error = None
        self._thread = threading.Thread(target=self._run, name="fw-job-events", daemon=True)
        self._thread.start()

    def write_event(self, event: dict, cut_block: bool = False) -> None:
        self._raise_error()
        if self._thread is None:
            raise RuntimeError("JobEventStore.write_event before start()")
        self._queue.put(("event", encode(event), cut_block))

    def flush(self) -> None:
        """Block until every event written so far is on disk (fsynced where possible)."""
        self._raise_error()
        if self._thread is None:
            return
        done = threading.Event()
        self._queue.put(("flush", done, None))
        while not done.wait(0.05):
            if not self._thread.is_alive():
                break
        self._raise_error()

    def stop(self, clear: bool = False) -> None:
        if self._thread is not None:
            done = threading.Event()
            self._queue.put(("stop", done, None))
            self._thread.join()
            self._thread = None
        if clear:
            for index in self._indexes():
                self.storage.remove(self.storage.path(f"{_PREFIX}{index}"))
        self._raise_error()

    def _raise_error(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise RuntimeError(f"writing job events failed: {error}") from error

    # -- the writer thread ---------------------------------------------------------------------

    def _run(self) -> None:
        buffer = bytearray()
        handle = None
        last_flush = time.monotonic()
        try:
            while True:
                timeout = max(0.0, self.flush_interval - (time.monotonic() - last_flush))
                try:
                    kind, item, cut = self._queue.get(timeout=timeout)
                except queue.Empty:
                    kind, item, cut = "tick", None, False
                if kind == "event":
                    buffer += item
                if buffer and (kind in ("flush", "stop", "tick") or cut or len(buffer) >= self.write_buffer_size):
                    handle = self._write(handle, buffer, sync=kind in ("flush", "stop") or cut)
                    buffer.clear()
                    last_flush = time.monotonic()
                elif kind == "tick":
                    last_flush = time.monotonic()
                if cut and handle is not None:
                    handle.close()
                    handle = None
                    self._index += 1
                if kind in ("flush", "stop"):
                    if handle is not None and kind == "flush":
                        self._sync(handle)
                    item.set()
                    if kind == "stop":
                        break
        except BaseException as error:  # surfaced on the next call
            self._error = error
            while True:  # release anyone waiting on a flush
                try:
                    kind, item, _ = self._queue.get_nowait()
                except queue.Empty:
                    break
                if kind in ("flush", "stop"):
                    item.set()
        finally:
            if handle is not None:
                handle.close()

    def _write(self, handle, data: bytes, sync: bool):
        if handle is None:
            handle = self.storage.open_append(self.storage.path(f"{_PREFIX}{self._index}"))
        handle.write(bytes(data))
        if sync:
            self._sync(handle)
        elif hasattr(handle, "flush"):
            handle.flush()
        return handle

    @staticmethod
    def _sync(handle) -> None:
        handle.flush()
        if hasattr(handle, "fileno"):
            os.fsync(handle.fileno())
