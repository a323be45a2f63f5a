"""How a keyed job's state reaches its streaming query: one named strategy, chosen at start.

The backlog engine leaves each key's state in its committed result files, one per state
partition, sorted by key; a restored job finds it in its savepoint, which the restore
re-partitions to the new parallelism the same way (``savepoints``). The streaming query must start
from it. ``choose()`` picks the way where the job starts (from the mode, the operator and whether
it was restored); nothing below it asks again:

* ``NONE``: no state to hand over (``mode="stream"`` has no backlog, ``mode="batch"`` no stream,
  a non-keyed operator job keeps operator state of its own);
* ``LAZY``: the query reads a key's state from its partition's file on the key's first fresh
  record (``seed.PartitionSeed``); only keys holding timers after W go in through Spark's
  ``initialState`` (Spark must know their timers first). A process function's way, and a
  restored job's (its files: the savepoint's state, re-partitioned);
* ``HELD``: ``LAZY``, and the query starts *while the backlog runs*, its fresh source held until
  the handover file (``backlog/handover.json``) exists: Spark's ~7 s of planning and starting a
  query no longer wait for the backlog. A reduce's or an aggregate's way (no timers).

No way depends on the number of keys or their types: the files are searched, never loaded.
The strategy owns what the query's source and sink wait for (``hold``) and writes the handover
file (``hand_over``).
"""

from __future__ import annotations

from ..recovery.paths import HANDOVER
from . import seed
from .phases import Mode


class Handover:
    """One way of handing keyed state to the streaming query (see the module docstring)."""

    name = "none"
    warm = False  # the query starts while the backlog runs, its fresh source held until the handover
    lazy = False  # keys' state is read on their first fresh record (a savepoint merges the others)

    def hold(self, storage) -> str | None:
        """The file the query's fresh source and its sink wait for (the handover), or None."""
        return None

    def hand_over(self, storage, files, aligned: bool = True) -> None:
        """Record the handover file: the state's files, one per partition, sorted by key; ``aligned``:
        they are the stream's state partitions. Once (idempotent: a restart finds it written)."""

    def query_state(self, states, kind: str, root: str, key_names):
        """(``initialState`` rows or None, a ``PartitionSeed`` or None) for the query about to start.

        ``states``: the handed-over state rows as a DataFrame (key columns, ``__fw_state``), or
        None when the handover is not written yet (a query started during the backlog).
        """
        return None, None

    def __repr__(self) -> str:
        return f"<handover {self.name}>"


class _Lazy(Handover):
    name = "lazy"
    lazy = True

    def hand_over(self, storage, files, aligned=True) -> None:
        if not storage.exists(storage.path(HANDOVER)):
            seed.write_handover(storage.root, files, aligned)

    def query_state(self, states, kind, root, key_names):
        # only keys with timers go in now (only a process function has timers); the others are read
        # on their first fresh record
        initial = seed.timer_keys(states) if kind == "process" and states is not None else None
        return initial, seed.PartitionSeed(root, key_names)


class _Held(_Lazy):
    name = "held"
    warm = True

    def hold(self, storage):
        return storage.path(HANDOVER)


NONE, LAZY, HELD = Handover(), _Lazy(), _Held()


def choose(mode: Mode, kind: str, restored: bool) -> Handover:
    """The handover of a job in ``mode`` running ``kind`` ("reduce", "aggregate", "process" or
    "operator"); ``restored``: started from a savepoint (its state's files exist before the query)."""
    if mode is not Mode.MIXED or kind == "operator":
        return NONE
    if restored or kind == "process":
        return LAZY
    return HELD
