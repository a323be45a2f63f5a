"""How a keyed job's state reaches its streaming query: one named strategy, chosen at start.

The backlog engine leaves each key's state in its committed result files, one per state
partition, sorted by key; a restored job finds it in its savepoint: the base (those same files,
shared) and the keys written since, which the restore re-partitions to the new parallelism the
same way (``savepoints``). The streaming query must start
from it. ``choose()`` picks the way where the job starts (from the mode, the operator and whether
it was restored); nothing below it asks again:

* ``NONE``: no state to hand over (a fresh job in ``mode="stream"`` has no backlog: its query
  reads from the first file, without W; ``mode="batch"`` has no stream; a non-keyed operator job
  keeps operator state of its own);
* ``LAZY``: the query reads a key's state from its partition's file on the key's first fresh
  record (``seed.PartitionSeed``); only keys holding timers after W go in through Spark's
  ``initialState`` (Spark must know their timers first). A process function's way, and a
  restored job's in either mode with a stream (its files: the savepoint's base, and over it the
  keys written since; in ``mode="stream"`` too, as Flink restores a savepoint in either mode);
* ``HELD``: ``LAZY``, and the query starts *while the backlog runs*, its fresh source held until
  the handover file (``backlog/handover.json``) exists: Spark's ~7 s of planning and starting a
  query no longer wait for the backlog. A reduce's or an aggregate's way (no timers);
* ``INITIAL_STATE``: a job restored by an earlier fw-magics (its savepoint's state whole in
  ``restored/keyed-state.parquet``, no handover file) goes on through ``initialState``.

No way depends on the number of keys or their types: the files are searched, never loaded.
The strategy owns what the query's source and sink wait for (``hold``) and writes the handover
file (``hand_over``).
"""

from __future__ import annotations

from ....recovery.paths import HANDOVER, RESTORED_KEYED
from ..driver.phases import Mode
from . import seed, state_files


class Handover:
    """One way of handing keyed state to the streaming query (see the module docstring)."""

    name = "none"
    warm = False  # the query starts while the backlog runs, its fresh source held until the handover
    lazy = False  # keys' state is read on their first fresh record (a savepoint merges the others)
    continues = False  # the query goes on from handed state: only input after it (fresh), from its W

    def hold(self, storage) -> str | None:
        """The file the query's fresh source and its sink wait for (the handover), or None."""
        return None

    def hand_over(self, storage, handed: seed.Handed) -> None:
        """Record the handover file (``seed.Handed``: the state's files, one per partition, sorted by
        key). Once (idempotent: a restart finds it written)."""

    def query_state(self, job, warm: bool):
        """(``initialState`` rows or None, a ``PartitionSeed`` or None) for ``job``'s query about to
        start; ``warm``: started during the backlog, before the handover is written."""
        return None, None

    def __repr__(self) -> str:
        return f"<handover {self.name}>"


class _Lazy(Handover):
    name = "lazy"
    lazy = continues = True

    def hand_over(self, storage, handed) -> None:
        if not storage.exists(storage.path(HANDOVER)):
            seed.write_handover(storage.root, handed)

    def query_state(self, job, warm):
        lazily = seed.PartitionSeed(job.root, job.spec.key_names, seed.integer_widths(job.spec.key.arrow_schema))
        if warm or not job.spec.timed:  # only a (co-)process function has timers
            return None, lazily
        # only keys with timers go in now; the others are read on their first fresh record
        states = state_files.handed_over(job.spark, job.root, job.output, job.spec.key_names)
        return seed.timer_keys(states), lazily


class _Held(_Lazy):
    name = "held"
    warm = True

    def hold(self, storage):
        return storage.path(HANDOVER)


class _InitialState(Handover):
    """A job restored by an earlier fw-magics, which kept the savepoint's keyed state whole in
    ``restored/keyed-state.parquet`` and gave it to Spark's ``initialState`` (which Spark ignores
    once the checkpoint holds state): it goes on that way."""

    name = "initial-state"
    continues = True

    def query_state(self, job, warm):
        path = job.storage.path(RESTORED_KEYED)
        return state_files.saved_states(job.spark, path, job.output, job.spec.key_names), None


NONE, LAZY, HELD, INITIAL_STATE = Handover(), _Lazy(), _Held(), _InitialState()


def choose(mode: Mode, kind, restored: bool, storage) -> Handover:
    """The handover of a job in ``mode`` running an operator of ``kind`` (``fw_magics.operators``: what is
    read is whether it is keyed and timed); ``restored``: started from a savepoint (its state's files exist
    before the query); ``storage``: the job's folder (a job restored by an earlier fw-magics has no handover
    file)."""
    if not mode.has_stream or not kind.keyed or (mode is Mode.STREAM and not restored):
        return NONE
    if restored and storage.present_inside(RESTORED_KEYED) and not storage.present_inside(HANDOVER):
        return INITIAL_STATE
    if restored or kind.timed:
        return LAZY
    return HELD
