"""JobEventStore: the append-only job event log of FLIP-383.

Events are written by a background thread through a buffer flushed by size and by
interval; ``flush()`` blocks until everything so far is on disk (and fsynced locally).
Files are ``events.0``, ``events.1``, ...: each ``start()`` begins a new file, never
appending to one a crash may have torn. Each record is framed as a 4-byte big-endian
length, a 4-byte CRC32 of the payload, and the payload (compact JSON).

Reading treats the files as untrusted input: only regular files are opened, never through
a symbolic link; a record longer than ``MAX_RECORD`` bytes, or of length 0, ends that
file's reading (its framing cannot be trusted past it); a corrupt record (checksum), an
unreadable one (not JSON, nested too deep) and one that does not fit the event schema
(``events.problem``) is skipped with one warning naming the file and the byte offset, and
reading goes on. At most ``MAX_LOG_BYTES`` are read per log.
"""

from __future__ import annotations

import json
import os
import queue
import re
import struct
import threading
import time
import warnings
import zlib

from ..errors import JobStorageError
from . import events as _events
from .filesystem import Storage, UnsafeFile

_HEADER = struct.Struct(">II")
_PREFIX = "events."
_INDEX = re.compile(r"events\.(0|[1-9][0-9]{0,8})")
#: The longest record read back (the job_submitted record holds the graph and the notebook cell).
MAX_RECORD = 16 << 20
#: The most bytes of event files read for one job.
MAX_LOG_BYTES = 256 << 20
#: Warnings about one file beyond this many are summed up in one.
MAX_WARNINGS = 20


def encode(event: dict) -> bytes:
    payload = json.dumps(event, sort_keys=True, separators=(",", ":")).encode()
    return _HEADER.pack(len(payload), zlib.crc32(payload)) + payload


def frames(read, name: str, warn):
    """(offset, payload) of each whole record from ``read(n)``; a broken framing ends the file."""
    offset = 0
    while True:
        header = read(_HEADER.size)
        if not header:
            return
        if len(header) < _HEADER.size:
            warn(f"{name}: torn record header at byte {offset} (crash while writing); skipped")
            return
        length, crc = _HEADER.unpack(header)
        if length == 0 or length > MAX_RECORD:
            warn(f"{name}: record at byte {offset} claims {length} bytes (accepted: 1..{MAX_RECORD}); "
                 "the rest of this file is skipped")
            return
        payload = read(length)
        if len(payload) < length:
            warn(f"{name}: torn record at byte {offset} (crash while writing); skipped")
            return
        if zlib.crc32(payload) != crc:
            warn(f"{name}: corrupt record at byte {offset} (checksum mismatch); skipped")
        else:
            yield offset, payload
        offset += _HEADER.size + length


def parse(payload: bytes):
    """The JSON value of a payload; ValueError when it is not JSON (or nested too deep to read)."""
    try:
        return json.loads(payload)
    except RecursionError:
        raise ValueError("JSON nested too deep") from None
    except (ValueError, UnicodeDecodeError) as error:
        raise ValueError(f"not JSON ({str(error)[:80]})") from None


def decode(data: bytes, name: str = "events"):
    """Yield the valid events of one file's bytes, warning (with the byte offset) about the rest."""
    view, position = memoryview(data), [0]

    def read(n):
        chunk = bytes(view[position[0]:position[0] + n])
        position[0] += len(chunk)
        return chunk

    yield from _events_of(frames(read, name, _warn), name, _warn)


def _events_of(records, name: str, warn):
    for offset, payload in records:
        try:
            event = parse(payload)
        except ValueError as error:
            warn(f"{name}: unreadable record at byte {offset} ({error}); skipped")
            continue
        why = _events.problem(event)
        if why is not None:
            warn(f"{name}: record at byte {offset} skipped: {why}")
            continue
        yield event


def _warn(message: str) -> None:
    warnings.warn(message, stacklevel=3)


class JobEventStore:
    def __init__(self, path: str, write_buffer_size: int = 1 << 20, flush_interval: float = 1.0):
        self.storage = Storage(path)
        # Read through the folder above, so that the event folder itself is never a followed link.
        parent, self._folder = os.path.split(self.storage.base.rstrip("/"))
        self._parent = Storage(parent) if self.storage.local and parent and self._folder else None
        self.write_buffer_size = write_buffer_size
        self.flush_interval = flush_interval
        self._queue: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._reported = False
        self._index = -1
        self.skipped = 0  # records and files the last read_events() skipped

    # -- files --------------------------------------------------------------------------------

    def _indexes(self) -> list[int]:
        names = self._parent.listdir_inside(self._folder) if self._parent is not None else \
            self.storage.listdir(self.storage.base)
        return sorted(int(n[len(_PREFIX):]) for n in names if _INDEX.fullmatch(n))

    def has_events(self) -> bool:
        try:
            return bool(self._indexes())
        except OSError:
            return False

    @staticmethod
    def exists(path: str) -> bool:
        return JobEventStore(path).has_events()

    def read_events(self) -> list[dict]:
        """Every readable event, in write order (file index, then position).

        A file that cannot be read safely (a link, a FIFO, a folder) is skipped with a
        warning, and so is every record that does not fit (see the module docstring).
        """
        found: list[dict] = []
        budget = MAX_LOG_BYTES
        self.skipped = 0
        try:
            indexes = self._indexes()
        except (UnsafeFile, ValueError) as error:
            _warn(f"{self.storage.base}: the event folder is not read ({error})")
            self.skipped += 1
            return found
        for index in indexes:
            name = f"{self.storage.base}/{_PREFIX}{index}" if self.storage.local else f"{_PREFIX}{index}"
            if budget <= 0:
                _warn(f"{name}: not read, the job's events already took {MAX_LOG_BYTES} bytes")
                break
            try:
                handle = self._open(index)
            except FileNotFoundError:
                continue
            except OSError as error:
                _warn(f"{name}: skipped ({error})")
                self.skipped += 1
                continue
            with handle:
                left = [budget]

                def read(n, handle=handle, left=left):
                    chunk = handle.read(min(n, left[0]))
                    left[0] -= len(chunk)
                    return chunk

                warn = _Warnings(name)
                found.extend(_events_of(frames(read, name, warn), name, warn))
                warn.close()
                self.skipped += warn.count
                budget = left[0]
        return found

    def _open(self, index: int):
        if self._parent is not None:
            return self._parent.open_inside(f"{self._folder}/{_PREFIX}{index}")
        return self.storage.open(self.storage.path(f"{_PREFIX}{index}"))

    # -- writing ------------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            return
        indexes = self._indexes()
        self._index = (indexes[-1] + 1) if indexes else 0
        self._error = None
        self._reported = False
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
        self._raise_error(again=False)

    def _raise_error(self, again: bool = True) -> None:
        """Raise the writer thread's error: on every later write and flush (``again``), once on stop."""
        if self._error is not None and (again or not self._reported):
            self._reported = True
            raise JobStorageError(f"writing job events failed ({self.storage.base}): "
                                  f"{type(self._error).__name__}: {self._error}") from self._error

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
            handle = self.storage.open_append(self.storage.path(f"{_PREFIX}{self._index}"), new=True)
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


class _Warnings:
    """One warning per bad record of a file, up to MAX_WARNINGS; then one that counts the rest."""

    def __init__(self, name: str):
        self.name, self.count = name, 0

    def __call__(self, message: str) -> None:
        self.count += 1
        if self.count <= MAX_WARNINGS:
            warnings.warn(message, stacklevel=2)

    def close(self) -> None:
        if self.count > MAX_WARNINGS:
            warnings.warn(f"{self.name}: {self.count - MAX_WARNINGS} more bad records skipped", stacklevel=2)
