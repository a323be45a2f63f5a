"""Keys holding state, per state partition, after each micro-batch: what ``job.metrics()`` shows of state skew.

Spark's progress reports one ``numRowsTotal`` for the whole store, and counts neither the keys the
backlog handed over that the stream has not met yet (``seed``: they are read lazily) nor a cleared
key as gone (its tombstone is a row). So the job counts keys itself:

* **in the tasks** (``PartitionCounts``): the stream's processor knows, for each key it runs, whether
  the key held state before and after; at the end of its partition's task (``close()``, called in
  every partition of every micro-batch) it writes the keys gained and lost, when any, to
  ``metrics/state/batch=<id>/<partition>.json`` in the job's folder (atomically: a task run again
  writes the same file again). The batch id is Spark's (the task's ``streaming.sql.batchId``);
* **on the driver** (``StateCounts``): when the follower records micro-batch ``b``, the files of every
  batch after the last one recorded, up to ``b``, are added to the counts the log last held (the
  backlog's keys per partition at the switch, zeros in mode "stream", the last micro-batch's on a
  restart) and go into ``b``'s event; a batch's files are removed once the next batch is recorded.

Counts are unknown (None) where the start is: a job restored from a savepoint (its base is the
savepoint's files, not counted per partition), a backlog whose files are not the stream's partitions
(``Handed.aligned`` false), and a log written before these counts existed.
"""

from __future__ import annotations

import json
import re

from ....recovery.filesystem import Storage, UnsafeFile
from ....recovery.paths import STATE_COUNTS
from .changelog import TOMBSTONE

#: The task's local property that names its micro-batch.
BATCH_PROPERTY = "streaming.sql.batchId"
_FOLDER = re.compile(r"batch=(\d{1,18})\Z")
_FILE = re.compile(r"(\d{1,9})\.json\Z")
_MAX_BYTES = 4096


def holds(text) -> bool:
    """Whether a key's state text is state (not none, not the tombstone of a cleared key)."""
    return text is not None and text != TOMBSTONE


class PartitionCounts:
    """In one task: the keys its partition gained and lost, written at its end (see the module docstring)."""

    def __init__(self, folder: str):
        self.folder = folder
        self.gained = self.lost = 0

    def note(self, before, after) -> None:
        """A key ran: its state text before and after."""
        was, now = holds(before), holds(after)
        if now and not was:
            self.gained += 1
        elif was and not now:
            self.lost += 1

    def write(self, partition: int) -> None:
        """Write what changed (nothing when nothing did); called once, at the end of the task."""
        if not (self.gained or self.lost):
            return
        from pyspark import TaskContext

        context = TaskContext.get()
        batch = context.getLocalProperty(BATCH_PROPERTY) if context is not None else None
        if batch is None or not batch.isdigit():
            return
        storage = Storage(self.folder)
        doc = {"partition": partition, "gained": self.gained, "lost": self.lost}
        storage.write_bytes(storage.path(f"batch={batch}", f"{partition}.json"), json.dumps(doc).encode())
        self.gained = self.lost = 0


class StateCounts:
    """On the driver: the keys each state partition holds after each recorded micro-batch."""

    def __init__(self, storage: Storage, parallelism: int, per_partition: list[int] | None, last_batch: int | None):
        self.storage, self.parallelism = storage, parallelism
        self.counts = None if per_partition is None or len(per_partition) != parallelism else list(per_partition)
        self.last = last_batch  # the last batch whose counts are in the log
        self._drop(lambda b: last_batch is not None and b <= last_batch)  # left by a run that recorded them

    @classmethod
    def resume(cls, storage: Storage, state, parallelism: int, restored: bool) -> StateCounts:
        """Counts as the log (``replay.JobState``) left them: the last micro-batch's, else the switch's, else
        (a stream from the first file) zeros; unknown for a restored job."""
        last = max(state.batches, default=None)
        if last is not None:
            counts = state.batches[last].get("state_rows_per_partition")
        elif restored or state.switch_event is not None:
            counts = None if state.switch_event is None else state.switch_event.get("state_rows_per_partition")
        else:
            counts = [0] * parallelism
        return cls(storage, parallelism, None if restored and counts is None else counts, last)

    def switched(self, per_partition: list[int] | None) -> None:
        """The backlog left ``per_partition`` keys (None: not counted per partition)."""
        self.counts = None if per_partition is None or len(per_partition) != self.parallelism else list(per_partition)

    def after(self, batch: int) -> dict:
        """``state_rows`` and ``state_rows_per_partition`` after ``batch`` (None when unknown), the counts of
        every batch since the last recorded added; the folders before the last recorded removed."""
        found = [b for b in self._batches() if (self.last is None or b > self.last) and b <= batch]
        for b in found:
            for partition, gained, lost in self._read(b):
                if self.counts is not None:
                    self.counts[partition] += gained - lost
        previous, self.last = self.last, batch if self.last is None else max(self.last, batch)
        if previous is not None:
            self._drop(lambda b: b <= previous)
        if self.counts is None:
            return {"state_rows": None, "state_rows_per_partition": None}
        self.counts = [max(0, n) for n in self.counts]
        return {"state_rows": sum(self.counts), "state_rows_per_partition": list(self.counts)}

    def _batches(self) -> list[int]:
        names = self.storage.listdir_inside(STATE_COUNTS)
        return sorted(int(m[1]) for m in map(_FOLDER.fullmatch, names) if m)

    def _read(self, batch: int) -> list[tuple[int, int, int]]:
        """(partition, gained, lost) of each file of ``batch`` that is one the tasks wrote; others ignored."""
        folder = f"{STATE_COUNTS}/batch={batch}"
        found = []
        for name in self.storage.listdir_inside(folder):
            match = _FILE.fullmatch(name)
            if not match:
                continue
            try:
                with self.storage.open_inside(f"{folder}/{name}", _MAX_BYTES) as f:
                    doc = json.loads(f.read())
            except (OSError, UnsafeFile, ValueError, UnicodeDecodeError):
                continue
            partition = int(match[1])
            if (isinstance(doc, dict) and doc.get("partition") == partition and partition < self.parallelism
                    and all(type(doc.get(k)) is int and 0 <= doc[k] < 2**62 for k in ("gained", "lost"))):
                found.append((partition, doc["gained"], doc["lost"]))
        return found

    def _drop(self, old) -> None:
        for batch in self._batches():
            if old(batch):
                self.storage.remove_tree(self.storage.path(STATE_COUNTS, f"batch={batch}"))
