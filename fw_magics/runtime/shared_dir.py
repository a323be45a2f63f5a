"""Is the job directory shared? A probe before the first vertex of ``execute()`` on a cluster.

Executors write the result files, the driver writes the event log and checks the results on
resume: the job directory must be storage both see at the same path. On a cluster with a
node-local directory (or a Spark Connect server whose executors run elsewhere), tasks would
write where the driver never looks. The probe runs one tiny task: it reads a file the
driver wrote into the job directory and writes one back; the driver reads that and removes
both. Anything else is refused in one line before the job writes anything. The answer is
cached per (Spark session, job directory), so it costs one small Spark job once.

A classic session on a ``local`` master runs its executors in the driver's own process,
where the directory is shared by construction: no probe there.
"""

from __future__ import annotations

import contextlib
import functools
import os
import uuid

from ..errors import JobDirNotSharedError
from ..recovery.filesystem import Storage

PROBE_DIR = ".fw-probe"
_SHARED: set[tuple[int, str]] = set()

ADVICE = ("on a cluster use a folder every node mounts at the same path (file:// on a shared mount) "
          "or an object store pyarrow reads (s3://, gs://, hdfs://), via execute(job_dir=...) or FW_JOB_DIR")


def _probe_task(root: str, name: str, token: str, batches):
    """Inside a task: read the driver's token, write ours beside it; yield what happened."""
    import pyarrow as pa

    for _ in batches:
        pass
    storage = Storage(root)
    message = "ok"
    try:
        with storage.open(storage.path(PROBE_DIR, name, "driver")) as f:
            found = f.read().decode()
        if found != token:
            message = "a task read another driver's probe file"
        else:
            storage.write_bytes(storage.path(PROBE_DIR, name, "executor"), token.encode())
    except FileNotFoundError:
        message = "a task could not see the file the driver wrote there"
    except OSError as error:
        message = f"a task could not use it ({type(error).__name__}: {str(error).splitlines()[0][:200]})"
    yield pa.RecordBatch.from_pylist([{"message": message}], schema=pa.schema([("message", pa.string())]))


def local_master(spark) -> bool:
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        return False  # the Connect server may run anywhere: its executors are not this process
    return spark.sparkContext.master.startswith("local")


def probed(spark, root: str) -> bool:
    """Whether ``root`` was found shared for ``spark`` (and will not be probed again)."""
    return (id(spark), root) in _SHARED


def check_shared(spark, root: str) -> None:
    """Raise JobDirNotSharedError unless Spark's executors and this driver share ``root``."""
    key = (id(spark), root)
    if key in _SHARED or local_master(spark):
        return
    storage = Storage(root)
    name, token = uuid.uuid4().hex, uuid.uuid4().hex
    folder = storage.path(PROBE_DIR, name)
    try:
        storage.write_bytes(storage.path(PROBE_DIR, name, "driver"), token.encode())
        task = functools.partial(_probe_task, root, name, token)
        message = spark.range(0, 1, 1, 1).mapInArrow(task, "message string").collect()[0].message
        if message == "ok":
            try:
                with storage.open(storage.path(PROBE_DIR, name, "executor")) as f:
                    if f.read().decode() != token:
                        message = "the driver read another task's probe file"
            except FileNotFoundError:
                message = "a task wrote there but the driver cannot see what it wrote"
    finally:
        storage.remove_tree(folder)
        if storage.local:  # the empty parent too (another probe's files keep it)
            with contextlib.suppress(OSError):
                os.rmdir(storage.path(PROBE_DIR))
    if message != "ok":
        raise JobDirNotSharedError(f"job directory {root} is not shared by the driver and Spark's executors: "
                                   f"{message}; {ADVICE}")
    _SHARED.add(key)
