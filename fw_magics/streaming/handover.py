"""How a keyed job's state reaches its streaming query: one named strategy, chosen at start.

The backlog engine leaves each key's state in its committed result files; a restored job finds
it in its savepoint's copy. The streaming query must start from it. There are four ways, and
``choose()`` picks one where the job starts (from the mode, the operator, the key's types and
whether the job was restored); nothing below it asks again:

* ``NONE``: no state to hand over (``mode="stream"`` has no backlog, ``mode="batch"`` no stream,
  a non-keyed operator job keeps operator state of its own);
* ``EAGER``: every key's state goes in through Spark's ``initialState`` (pyspark calls Python
  once per key: about 1.25 ms a key) -- keys of a type the lazy lookup cannot match (floats,
  decimals, binary, nested), or more than ``seed.MAX_KEYS`` of them;
* ``LAZY``: the query reads a key's backlog state from the backlog's files on the key's first
  fresh record (``seed.BacklogSeed``); only keys holding timers after W go in through
  ``initialState`` (Spark must know their timers first). A process function's way;
* ``HELD``: ``LAZY``, and the query starts *while the backlog runs*, its fresh source held
  until the handover file (``backlog/handover.json``) exists: Spark's ~7 s of planning and
  starting a query no longer wait for the backlog. A reduce's or an aggregate's way (no timers);
* ``RESTORED``: a job started from a savepoint: its keyed state goes in through
  ``initialState`` at the new parallelism (Spark re-splits it by key).

Above ``MAX_KEYS`` backlog keys the lazy ways turn eager at the switch (``at_switch``): a
worker would hold too much. The strategy owns what the query's source and sink wait for
(``hold``) and writes the handover file (``hand_over``).
"""

from __future__ import annotations

import pyarrow as pa

from ..recovery.paths import HANDOVER
from . import seed
from .phases import Mode


class Handover:
    """One way of handing the backlog's keyed state to the streaming query (see the module docstring)."""

    name = "none"
    warm = False  # the query starts while the backlog runs, its fresh source held until the handover
    lazy = False  # keys' backlog state is read on their first fresh record (a savepoint merges the others)

    def hold(self, storage) -> str | None:
        """The file the query's fresh source and its sink wait for (the handover), or None."""
        return None

    def at_switch(self, state_writes: int | None) -> Handover:
        """The way to hand over once the backlog's size is known."""
        return self

    def hand_over(self, storage, files) -> None:
        """Record the handover for a held query: the backlog's committed files, once (idempotent)."""

    def query_state(self, backlog, restored, warm: bool):
        """(``initialState`` rows or None, a ``BacklogSeed`` or None) for the query about to start.

        ``backlog``: the job's ``Backlog``; ``restored``: a restored job's keyed-state frame;
        ``warm``: the query starts during the backlog (its files are not known yet).
        """
        return None, None

    def __repr__(self) -> str:
        return f"<handover {self.name}>"


class _Eager(Handover):
    name = "eager"

    def query_state(self, backlog, restored, warm):
        return backlog.states(), None


class _Lazy(Handover):
    name = "lazy"
    lazy = True

    def at_switch(self, state_writes):
        return EAGER if state_writes is not None and state_writes > seed.MAX_KEYS else self

    def query_state(self, backlog, restored, warm):
        if warm:  # the backlog's files come with the handover file
            return None, seed.BacklogSeed(backlog.root, None, backlog.spec.key_names)
        states = backlog.states()
        if states is None:
            return None, None
        # only keys with timers go in now (only a process function has timers); the others are read
        # on their first fresh record
        initial = seed.timer_keys(states) if backlog.spec.kind == "process" else None
        return initial, seed.BacklogSeed(backlog.root, backlog.files(), backlog.spec.key_names)


class _Held(_Lazy):
    name = "held"
    warm = True

    def hold(self, storage):
        return storage.path(HANDOVER)

    def at_switch(self, state_writes):
        # too many keys for the lazy seed: the warm query goes, and its state through initialState after all
        return EAGER_AFTER_HOLD if _Lazy.at_switch(self, state_writes) is EAGER else self

    def hand_over(self, storage, files) -> None:
        if not storage.exists(storage.path(HANDOVER)):
            seed.write_handover(storage.root, files)


class _EagerAfterHold(_Eager):
    """A held job whose backlog left too many keys: its handover file says so (``seed: null``)."""

    name = "eager (held)"

    def hold(self, storage):
        return storage.path(HANDOVER)

    def hand_over(self, storage, files) -> None:
        if not storage.exists(storage.path(HANDOVER)):
            seed.write_handover(storage.root, None)


class _Restored(Handover):
    name = "restored"

    def query_state(self, backlog, restored, warm):
        return restored, None


NONE, EAGER, LAZY, HELD, RESTORED = Handover(), _Eager(), _Lazy(), _Held(), _Restored()
EAGER_AFTER_HOLD = _EagerAfterHold()


def choose(mode: Mode, kind: str, key_schema: pa.Schema | None, restored: bool,
           state_writes: int | None = None) -> Handover:
    """The handover of a job in ``mode`` running ``kind`` ("reduce", "aggregate", "process" or
    "operator"), keyed by ``key_schema``; ``restored``: started from a savepoint;
    ``state_writes``: the backlog's size when the log already says it (a restart after the switch)."""
    if mode is not Mode.MIXED or kind == "operator":
        return NONE
    if restored:
        return RESTORED
    if key_schema is None or not seed.lazy_key_types(key_schema):
        return EAGER
    way = HELD if kind in ("reduce", "aggregate") else LAZY
    return way.at_switch(state_writes)
