"""Keyed state handed to the stream lazily, partition by partition: the switch without a pass over every key.

Spark's ``initialState`` calls Python once per key, with state-server round trips for each
(about 1.25 ms a key: 21 minutes at 1,000,000 keys, measured). Instead, the stream's processor
reads a key's state from the files the state was handed over in the first time the key shows up
in the stream (``PartitionSeed.state``), and writes it to Spark's state store only then, with
whatever the key's fresh records changed. Keys the stream never meets never pass through Python.

**Partitioned.** The files are one per state partition, each sorted by key: the backlog engine
hash-partitions keys exactly as the stream's ``transformWithState`` does (``repartition(n, key)``
and the stateful operator's exchange use the same hash of the same columns, ``n`` the job's
parallelism), and sorts each partition by key. So the Python worker running stream
partition ``p`` opens only file ``p``: memory-mapped, never read whole, searched by bisection over
its sorted key columns (``keys.normal``: Spark's grouping and order, for every key type, floats'
NaN and -0.0 included). No worker holds a dict of keys, nor anything that grows with the number
of keys: the pages of the mapped file it touched are let go of as it goes (``RELEASE_EVERY``). Where the stream's partitions need not be
the files' (on a remote Spark Connect server a ``foreachBatch`` query may run at a
``spark.sql.shuffle.partitions`` the server sets: ``fw_magics.spark.flavour``), the handover says
``aligned: false`` and a worker searches every file for the key, each by bisection.

**Layered.** A restored job's handover has two layers (``Handed``): the savepoint's base (the
first job's backlog files, shared: aligned when there are as many as the restored job's
partitions, else each searched) and over it the keys its stream wrote since (re-partitioned to
the new parallelism by one Spark job: small). A key is looked up in the newer layer first; a
``TOMBSTONE`` there ends the search (the key was cleared).

The store then stays the truth for every key it holds: a key whose state the stream cleared is
written as the empty document ``TOMBSTONE`` (never read from the files again), and a savepoint
writes the store's keys over the files, which it shares as its base (``savepoints``).

A query started while the backlog still runs cannot know the files yet: its seed reads them
from the handover file (``backlog/handover.json``, written at the switch, before the stream reads
any fresh record) when a worker first needs them. Keys whose state holds event-time timers after
W still go through ``initialState``: Spark must know a key's timers before its first fresh
record, and a processor can register a timer only for the key it is called for.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import mmap
import os
from collections import OrderedDict
from dataclasses import dataclass, field

import pyarrow as pa
from pyspark.sql import functions as F

from ....errors import JobStorageError
from ....recovery.filesystem import Storage
from ....recovery.integrity import cut_short, unreadable
from ....recovery.paths import HANDOVER
from .changelog import ROW, STATE, STATE_ROW, TOMBSTONE
from .keys import normal
from .spark_hash import partition as partition_of

#: The largest handover file read back (it names one file per state partition).
MAX_HANDOVER_BYTES = 16 << 20
#: How many files a worker keeps open (mapped) at once: a restored job's task may search every file of
#: its base (when their count is not its parallelism) besides its own partition's newer layer.
OPEN_FILES = 32
#: How many lookups a mapped file serves before its pages are dropped from the worker's memory
#: (``SortedStates.release``): each lookup faults in a few pages (the kernel maps up to 16 around each
#: fault), all distinct when the keys are many, so without this a worker's resident set would grow
#: towards the size of the files it searches.
RELEASE_EVERY = 128
#: The environment variable naming a folder where workers report their lookups (tests).
STATS = "FW_SEED_STATS"

_CACHE: OrderedDict = OrderedDict()  # (root, path, sha256) -> SortedStates


@dataclass(frozen=True)
class Handed:
    """What a handover names: ``base`` files, one per partition of Spark's hash of the key into
    ``len(base)`` (a backlog's results, or a restored savepoint's), ``aligned`` if those are the
    stream's state partitions; ``over``: files whose word wins over the base's (a restored
    savepoint's keys written since its base: a ``TOMBSTONE`` there hides a base key), likewise
    one per partition, ``over_aligned`` if they are the stream's. Paths inside the job's folder."""

    base: list
    aligned: bool
    over: list = field(default_factory=list)
    over_aligned: bool = False

    def to_json(self) -> dict:
        def files(records):
            return [{"path": path, "sha256": sha} for path, sha in records]
        return {"seed": files(self.base), "aligned": self.aligned, "over": files(self.over),
                "over_aligned": self.over_aligned}


def write_handover(root: str, handed: Handed) -> None:
    """Record the handover (atomically) in ``backlog/handover.json`` (``Handed.to_json``): the files the
    lazy seed reads. A held query's fresh source reads nothing before it exists."""
    storage = Storage(root)
    storage.write_bytes(storage.path(HANDOVER), json.dumps(handed.to_json()).encode())


def _records(value) -> list | None:
    if not isinstance(value, list) or not all(
            isinstance(d, dict) and isinstance(d.get("path"), str) and isinstance(d.get("sha256"), str) for d in value):
        return None
    return [(d["path"], d["sha256"]) for d in value]


def read_handover(root: str) -> Handed:
    """The handover the job's folder records; checked, one line when it is not one fw-magics wrote (a
    job directory is untrusted)."""
    with Storage(root).open_inside(HANDOVER, MAX_HANDOVER_BYTES) as f:
        try:
            doc = json.loads(f.read())
        except (ValueError, UnicodeDecodeError):
            doc = None
    base = _records(doc.get("seed")) if isinstance(doc, dict) else None
    over = _records(doc.get("over", [])) if isinstance(doc, dict) else None
    if base is None or over is None:
        raise JobStorageError(f"{Storage(root).path(HANDOVER)} is not a handover fw-magics wrote; the job "
                              "directory is damaged")
    return Handed(base, doc.get("aligned", False) is True, over, doc.get("over_aligned", False) is True)


class SortedStates:
    """One partition's state rows in its file (Arrow IPC), memory-mapped and searched by bisection.

    The file's record batches are either all output rows or all state rows (the backlog engine and
    the re-partitioning job write them so), the state batches in ascending key order. Only the
    batches' first keys are read when it opens; a lookup bisects over them, then inside one batch.
    A worker keeps it open for the tasks it runs next (``_CACHE``).
    """

    def __init__(self, root: str, path: str, key_names: tuple):
        self.key_names = key_names
        where = Storage(root).path(path)
        self._file = self._map = None
        try:  # read to its end-of-stream marker: a file damaged since it was committed is named, never half-read
            self._file = Storage(root).open_inside(path)
            if cut_short(self._file):
                raise JobStorageError(unreadable(where, "no end-of-stream marker: it was cut short"))
            size = os.fstat(self._file.fileno()).st_size
            self._map = mmap.mmap(self._file.fileno(), size, access=mmap.ACCESS_READ)
            self.batches = [batch for batch in pa.ipc.open_stream(pa.BufferReader(pa.py_buffer(self._map)))
                            if batch.num_rows and batch.column(ROW)[0].as_py() == STATE_ROW]
        except (OSError, ValueError, pa.ArrowException, JobStorageError) as error:
            if self._map is not None:
                with contextlib.suppress(BufferError):  # Arrow may still hold a view of it: then it goes with it
                    self._map.close()
            if self._file is not None:
                self._file.close()  # a file refused is not left open in the worker
            if isinstance(error, JobStorageError):
                raise
            raise JobStorageError(unreadable(where, error)) from None
        self._columns = [[b.column(k) for k in key_names] for b in self.batches]
        self.firsts = [self._key(i, 0) for i in range(len(self.batches))]
        self.rows = sum(b.num_rows for b in self.batches)
        self._lookups = 0
        self.release()  # the scan of the batches' headers touched pages all over the file

    def release(self) -> None:
        """Drop the pages this process mapped in from its resident set (a read-only file mapping:
        they are read again from the page cache when next touched)."""
        if self._map is not None:
            self._map.madvise(mmap.MADV_DONTNEED)
        self._lookups = 0

    def _key(self, batch: int, row: int) -> tuple:
        return normal(tuple(column[row].as_py() for column in self._columns[batch]))

    def state(self, key_normal: tuple) -> str | None:
        """The state text of the key whose ``normal`` form is ``key_normal``, or None."""
        self._lookups += 1
        if self._lookups >= RELEASE_EVERY:
            self.release()
        at = bisect.bisect_right(self.firsts, key_normal) - 1
        if at < 0:
            return None
        lo, hi = 0, self.batches[at].num_rows
        while lo < hi:  # the first row whose key is not below the one looked for
            mid = (lo + hi) // 2
            if self._key(at, mid) < key_normal:
                lo = mid + 1
            else:
                hi = mid
        if lo < self.batches[at].num_rows and self._key(at, lo) == key_normal:
            return self.batches[at].column(STATE)[lo].as_py()
        return None


def _states(root: str, path: str, sha: str, key_names: tuple) -> SortedStates:
    entry = (root, path, sha)  # the digest tells a rewritten file apart
    found = _CACHE.get(entry)
    if found is None:
        found = _CACHE[entry] = SortedStates(root, path, key_names)
        while len(_CACHE) > OPEN_FILES:
            _CACHE.popitem(last=False)
    _CACHE.move_to_end(entry)
    return found


def integer_widths(key_schema) -> tuple:
    """For each key column of ``key_schema`` (pyarrow): True if a 64-bit integer, False if a narrower one,
    None if not an integer (what ``spark_hash.partition`` needs to hash a Python int as Spark does)."""
    return tuple((f.type.bit_width == 64) if pa.types.is_integer(f.type) else None for f in key_schema)


class _Layer:
    """One layer's files as one stream partition searches them: its own file when the layer's files are
    the stream's partitions, else every file, each opened when first searched; then the file Spark's hash
    partitioning put the key in first (``spark_hash``: a hint; the others follow if it is not there)."""

    def __init__(self, seed: PartitionSeed, files: list, aligned: bool, partition: int):
        self.seed = seed
        self.files = [files[partition]] if aligned and partition < len(files) else list(files)
        self.opened: dict[int, SortedStates] = {}

    def _at(self, i: int) -> SortedStates:
        found = self.opened.get(i)
        if found is None:
            path, sha = self.files[i]
            found = self.opened[i] = _states(self.seed.root, path, sha, self.seed.key_names)
        return found

    def find(self, key: tuple, key_normal: tuple) -> str | None:
        order = range(len(self.files))
        if len(self.files) > 1 and self.seed.widths:
            first = partition_of(key, self.seed.widths, len(self.files))
            if first is not None:
                order = [first, *(i for i in order if i != first)]
        for i in order:
            text = self._at(i).state(key_normal)
            if text is not None:
                return text
        return None


class PartitionSeed:
    """Where a stream worker finds keys' handed-over state (pickled into the query's tasks): the files
    the handover file names, one per state partition, read from it when a worker first needs them
    (a query started during the backlog is pickled before they exist). ``widths``: the key columns'
    ``integer_widths``, for the hint of an unaligned layer (empty: no hint)."""

    def __init__(self, root: str, key_names, widths: tuple = ()):
        self.root = root
        self.key_names = tuple(key_names)
        self.widths = tuple(widths)
        self.stats = os.environ.get(STATS)  # set on the driver: where workers say what they looked up
        self._layers: list[_Layer] = []
        self.found = 0  # the keys this task found state for

    def __getstate__(self) -> dict:
        return {"root": self.root, "key_names": self.key_names, "widths": self.widths, "stats": self.stats}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state, _layers=[], found=0)

    def open(self, partition: int) -> None:
        """Lay out what stream partition ``partition`` looks keys up in: the newer layer, then the base."""
        handed = read_handover(self.root)
        self._layers = [_Layer(self, handed.over, handed.over_aligned, partition),
                        _Layer(self, handed.base, handed.aligned, partition)]

    def state(self, key) -> str | None:
        """The key's handed-over state text, or None (a key with no state there)."""
        text = self._find(key)
        self.found += text is not None
        return text

    def holds(self, key) -> bool:
        """Whether the files hold state for the key (a key the stream clears must then say so)."""
        return self._find(key) is not None

    def _find(self, key) -> str | None:
        key = tuple(key)
        key_normal = normal(key)
        over, base = self._layers
        text = over.find(key, key_normal)  # the newer layer's word wins, a tombstone included
        if text is not None:
            return None if text == TOMBSTONE else text
        return base.find(key, key_normal)

    def close(self, partition: int) -> None:
        """At the task's end: report (``report``), then let go of the pages every file this worker keeps
        open touched (another job's included: a reused worker keeps them for its next task)."""
        self.report(partition)
        for states in _CACHE.values():
            states.release()

    def report(self, partition: int) -> None:
        """With ``FW_SEED_STATS`` set on the driver (a folder): write what this task looked up there, for
        the tests that hold a worker's work to its own partition's keys."""
        opened = [states for layer in self._layers for states in layer.opened.values()]
        if not self.stats or not opened:
            return
        doc = {"rows": sum(s.rows for s in opened), "found": self.found, "partition": partition,
               "pid": os.getpid(), "files": len(opened)}
        name = f"{partition}-{os.getpid()}-{id(self)}.json"
        with open(os.path.join(self.stats, name), "w") as f:
            json.dump(doc, f)


def timer_keys(initial):
    """Of the handed-over state rows (key columns, ``__fw_state``), those of keys holding timers."""
    return initial.where(F.get_json_object(F.col(STATE), "$.t").isNotNull())


def overlaid(newer, older, key_names):
    """Every key of ``newer`` (its tombstones kept), and each key of ``older`` that ``newer`` lacks (a
    Spark join). Both frames: the key columns and ``__fw_state``."""
    on = [newer[k].eqNullSafe(older[k]) for k in key_names]
    return newer.unionByName(older.join(newer, on, "left_anti"))


def merged_state(store, seed, key_names):
    """A key's state: every key in the store, and each handed-over key the stream has not touched;
    the keys cleared (tombstones) dropped."""
    return overlaid(store, seed, key_names).where(F.col(STATE) != F.lit(TOMBSTONE))
