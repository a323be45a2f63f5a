"""The backlog's keyed state handed to the stream lazily: the switch without a pass over every key.

Spark's ``initialState`` calls Python once per key, with state-server round trips for each
(about 1.25 ms a key: 12.5 s at 10,000 keys, measured). Instead, the stream's processor reads a
key's backlog state from the backlog's committed result files the first time the key shows up
in the stream (``BacklogSeed.state``), and writes it to Spark's state store only then, with
whatever the key's fresh records changed. Keys the stream never sees never pass through Python.

A Python worker reads the state rows of every backlog subtask's file once and keeps them in a
dict (cached per process). Every file, not only the task's own subtask's: the backlog engine
and the query both hash-partition by key, but under Spark Connect a ``foreachBatch`` query runs
its state at the server's default ``spark.sql.shuffle.partitions``, not the session's, so a
stream partition need not be a backlog subtask. Above ``MAX_KEYS`` keys the job hands its state
over through ``initialState`` instead (slow, but no worker holds it all).

The store then stays the truth for every key it holds: a key whose state the stream cleared is
written as the empty document ``TOMBSTONE`` (never read from the backlog again), and a
savepoint takes the store's keys and the backlog's others (``merged_state``).

A query started while the backlog still runs (see ``job``) cannot know the files yet: its seed
is made with ``files=None`` and reads them from the handover file (``HANDOVER``, written at
the switch, before the stream reads any fresh record) when a worker first needs them.

Only keys whose backlog state holds event-time timers after W still go through
``initialState`` (Spark must know their timers before their first fresh record), and only keys
of types whose values compare equal as Python values are looked up (strings, integers,
booleans, dates, timestamps); with another key type every key goes through ``initialState``.
"""

from __future__ import annotations

import json
from collections import OrderedDict

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import functions as F

from ..recovery.filesystem import Storage
from ..recovery.paths import HANDOVER
from .changelog import ROW, STATE, STATE_ROW

#: A key's state once the stream cleared it, where the backlog had some: the store's word wins.
TOMBSTONE = "{}"
#: Backlog keys with state above which the state is handed over eagerly (a worker would hold too much).
MAX_KEYS = 1_000_000
#: The largest handover file read back (it names one file per backlog subtask).
MAX_HANDOVER_BYTES = 16 << 20

_CACHE: OrderedDict = OrderedDict()  # (root, ((path, sha256), ...)) -> {key: state text}; the last few jobs


def lazy_key_types(key_schema: pa.Schema) -> bool:
    """Whether every key column is of a type the lazy lookup handles.

    Both sides hold a key as Arrow's ``as_py()`` values (the stream's Row API converts its keys so);
    these types compare and hash equal there. Floats are left out (NaN is not equal to itself).
    """
    return all(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_integer(t)
               or pa.types.is_boolean(t) or pa.types.is_date32(t) or pa.types.is_timestamp(t)
               for t in key_schema.types)


def _load(root: str, path: str, key_names: tuple) -> dict:
    """Every key's state text in one backlog result file."""
    seeds: dict = {}
    with Storage(root).open_inside(path) as f:
        for batch in pa.ipc.open_stream(f):
            batch = batch.filter(pc.equal(batch.column(ROW), STATE_ROW))
            if batch.num_rows == 0:
                continue
            keys = zip(*(batch.column(k).to_pylist() for k in key_names))
            seeds.update(zip(keys, batch.column(STATE).to_pylist()))
    return seeds


def write_handover(root: str, files: list[dict] | None) -> None:
    """Record the handover (atomically) in ``backlog/handover.json``: ``{"seed": [{"path", "sha256"},
    ...] | null}``, the backlog's committed files for the lazy seed, or null (the state went through
    initialState). A held query's fresh source reads nothing before it exists."""
    storage = Storage(root)
    seed = None if files is None else [{"path": f["path"], "sha256": f["sha256"]} for f in files]
    storage.write_bytes(storage.path(HANDOVER), json.dumps({"seed": seed}).encode())


def read_handover(root: str) -> list[tuple[str, str]]:
    """The backlog's files the handover names, as (path, sha256); checked, one line when it is not
    one fw-magics wrote (a job directory is untrusted)."""
    from ..errors import JobStorageError

    with Storage(root).open_inside(HANDOVER, MAX_HANDOVER_BYTES) as f:
        try:
            doc = json.loads(f.read())
        except (ValueError, UnicodeDecodeError):
            doc = None
    files = doc.get("seed") if isinstance(doc, dict) else None
    if not isinstance(files, list) or not all(
            isinstance(d, dict) and isinstance(d.get("path"), str) and isinstance(d.get("sha256"), str) for d in files):
        raise JobStorageError(f"{Storage(root).path(HANDOVER)} is not a handover fw-magics wrote (or the state went "
                              "through initialState); the job directory is damaged")
    return [(d["path"], d["sha256"]) for d in files]


class BacklogSeed:
    """The committed backlog result files, one per subtask (pickled into the query's tasks);
    ``files=None``: read from the handover file when first needed."""

    def __init__(self, root: str, files: list[dict] | None, key_names):
        self.root = root
        self.files = None if files is None else [(f["path"], f["sha256"]) for f in files]
        self.key_names = tuple(key_names)
        self._states = None

    def __getstate__(self) -> dict:
        return {"root": self.root, "files": self.files, "key_names": self.key_names}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state, _states=None)

    def open(self) -> None:
        """Read the backlog's states, once per worker process."""
        if self.files is None:
            self.files = read_handover(self.root)
        entry = (self.root, tuple(self.files))  # the digests tell a rewritten file apart
        states = _CACHE.get(entry)
        if states is None:
            states = {}
            for path, _ in self.files:
                states.update(_load(self.root, path, self.key_names))
            _CACHE[entry] = states
            while len(_CACHE) > 2:
                _CACHE.popitem(last=False)
        _CACHE.move_to_end(entry)
        self._states = states

    def state(self, key) -> str | None:
        """The key's state text at the end of the backlog, or None (a key the backlog left without state)."""
        return self._states.get(tuple(key))


def timer_keys(initial):
    """Of the backlog's state rows (key columns, ``__fw_state``), those of keys holding timers."""
    return initial.where(F.get_json_object(F.col(STATE), "$.t").isNotNull())


def merged_state(store, seed, key_names):
    """A savepoint's keyed state: every key in the store (tombstones dropped), and each backlog key
    the stream has not touched. Both frames: the key columns and ``__fw_state``."""
    on = [store[k].eqNullSafe(seed[k]) for k in key_names]
    untouched = seed.join(store, on, "left_anti")
    return store.unionByName(untouched).where(F.col(STATE) != F.lit(TOMBSTONE))
