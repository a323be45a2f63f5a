"""The state inspector's reads: one key's state at each committed micro-batch still kept and in each of the
job's savepoints (``key_history``), and a few keys to pick from (``key_choices``).

The key is read by the key columns' Spark types (``values.key_text``: a bad key is one line, nothing read).
Each micro-batch is read as ``job.state(batch=N)`` reads its keyed state (``reader.keyed_state_of``: the
store at that batch over the handed-over files; no positions, no W), each savepoint as
``fw.read_savepoint(path)`` reads it, the key's row only (the filter applied before the states are typed):
one Spark job over the union of the readings, never a collect of every key. At most ``limit``
micro-batches and ``limit`` savepoints are read, the newest; the note names the rest. A job that is
not running has no micro-batches to read (its query's state versions are read only while it runs):
its savepoints alone are.
"""

from __future__ import annotations

import functools
import os

from pyspark.sql import functions as F

from ....errors import FullWindowError, FwMagicsError, error_summary
from ....state.key_history import DEFAULT_LIMIT, MICRO_BATCH, SAVEPOINT, KeyHistory, Reading, history, newest
from ....values.key_text import key_text, parse_key
from . import KEYED, batches
from .files import list_savepoints
from .reader import keyed_state_of, read_savepoint

#: How many keys ``key_choices`` offers unless told otherwise.
CHOICES = 10
_RUNNING = ("switching", "stream")
_SOURCE = "__fw_source"


def _keyed(job) -> None:
    if job.state_kind is not KEYED:
        raise FullWindowError(f"job {job.job_name!r} runs a non-keyed operator ({job.spec.label}): its state is "
                              "operator state, one per subtask, not per key; accepted: a keyed job "
                              "(key_by(...).reduce/aggregate/process(...).start())")


def _kept(job) -> dict | None:
    """The micro-batches the running ``job`` still keeps (``batches.kept``); None when it is not running."""
    return batches.kept(job) if job.query is not None and job.phase in _RUNNING else None


def key_history(job, key, limit: int = DEFAULT_LIMIT) -> KeyHistory:
    """``key``'s state (text as typed, or its value; a tuple for several key columns) at each of the newest
    ``limit`` committed micro-batches ``job`` still keeps and in each of its newest ``limit`` savepoints."""
    _keyed(job)
    if type(limit) is not int or limit < 1:
        raise FullWindowError(f"limit={limit!r:.40}; accepted: how many micro-batches (and savepoints) to read, "
                              "an integer >= 1")
    names, types = list(job.spec.key_names), list(job.spec.key.spark_types)
    values = parse_key(key, names, [t.simpleString() for t in types])
    match = functools.reduce(lambda a, b: a & b, [F.col(f"`{n}`").eqNullSafe(F.lit(v).cast(t))
                                                  for n, v, t in zip(names, values, types)])
    sources, notes = [], []  # ((at, batch, savepoint name), reader) each
    kept = _kept(job)
    if kept is None:
        notes.append(f"no micro-batch read: job {job.job_name!r} is in phase {job.phase!r} (they are read while "
                     "its query runs in this kernel)")
    else:
        read, left = newest(kept, limit)
        sources += [((MICRO_BATCH, b, None), keyed_state_of(job, b)) for b in read]
        if left:
            notes.append(f"micro-batches {batches.in_words(left)} not read (the newest {limit} are)")
    read, left = newest(list_savepoints(job.storage.base), limit)
    for path in read:
        try:
            reader = read_savepoint(path)
        except FwMagicsError as error:
            notes.append(f"{os.path.basename(path)} not read: {error_summary(error)}")
            continue
        sources.append(((SAVEPOINT, reader.document.get("batch"), os.path.basename(path)), reader))
    if left:
        notes.append(f"savepoints {', '.join(os.path.basename(p) for p in left)} not read (the newest {limit} are)")
    found = _found(sources, match, names) if sources else {}
    readings = [Reading(at, batch, found.get(i), name) for i, ((at, batch, name), _) in enumerate(sources)]
    return history(dict(zip(names, values)), readings, "; ".join(notes))


def _found(sources, match, key_names) -> dict:
    """Source index -> the key's state columns in that reader's keyed state, for those that hold it: one Spark
    job over the union of each reader's rows of that key."""
    frames = [reader.keyed_state(where=match).withColumn(_SOURCE, F.lit(i)) for i, (_, reader) in enumerate(sources)]
    union = functools.reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), frames)
    return {row[_SOURCE]: {c: v for c, v in row.asDict().items() if c != _SOURCE and c not in key_names}
            for row in union.collect()}


def key_choices(job, n: int = CHOICES) -> list[str]:
    """Up to ``n`` keys of ``job``'s latest state, as ``key_history`` reads them (``key_text``): the newest kept
    micro-batch's while it runs, else its newest savepoint's; a Spark job that stops at ``n`` keys."""
    _keyed(job)
    kept, paths = _kept(job), list_savepoints(job.storage.base)
    if kept:
        reader = keyed_state_of(job, max(kept))
    elif paths:
        reader = read_savepoint(paths[-1])
    else:
        return []
    rows = reader.states().select(*[F.col(f"`{k}`") for k in job.spec.key_names]).limit(n).collect()
    return [key_text(list(row)) for row in rows]
