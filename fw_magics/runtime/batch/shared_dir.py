"""Is the job directory shared? A probe before the first vertex of ``execute()`` on a cluster.

Executors write the result files, the driver writes the event log and checks the results on
resume: the job directory must be storage both see at the same path. On a cluster with a
node-local directory (or a Spark Connect server whose executors run elsewhere), tasks would
write where the driver never looks. The probe runs one tiny task per executor core (one
Spark job): each reads a file the driver wrote into the job directory and writes one back;
the driver reads them all and removes the lot. Anything else is refused in one line before
the job writes anything. The answer is cached per (Spark session, job directory), so it
costs one small Spark job once.

Every executor must be asked, not one: a directory one node mounts and another does not is
as bad as one no node mounts. Spark offers a job's tasks to its executors round-robin, so as
many tasks as the application has cores (``defaultParallelism``) give each registered
executor at least one. Under Spark Connect the client cannot ask how many cores there are:
the server's ``spark.default.parallelism`` when set, else ``CONNECT_TASKS`` tasks. Each task
also reports where it ran (host and working directory: one per executor on a standalone
cluster, YARN or Kubernetes), which :func:`reached` returns.

A classic session on a ``local`` master runs its executors in the driver's own process,
where the directory is shared by construction: no probe there.
"""

from __future__ import annotations

import contextlib
import functools
import os
import uuid

from ...errors import JobDirNotSharedError
from ...recovery.filesystem import Storage
from ...spark.flavour import flavour_of

PROBE_DIR = ".fw-probe"
#: Probe tasks under Spark Connect when the server does not set spark.default.parallelism.
CONNECT_TASKS = 8
#: At most this many probe tasks, however many cores (they are spread round-robin over executors).
MAX_TASKS = 1024
_SHARED: dict[tuple[int, str], list[str]] = {}  # (session, job dir) -> where the probe's tasks ran

ADVICE = ("on a cluster use a folder every node mounts at the same path (file:// on a shared mount) "
          "or an object store pyarrow reads (s3://, gs://, hdfs://), via execute(job_dir=...) or FW_JOB_DIR")


def _probe_task(root: str, name: str, token: str, batches):
    """Inside a task: read the driver's token, write ours beside it; yield what happened, and where."""
    import socket

    import pyarrow as pa
    from pyspark import TaskContext

    for _ in batches:
        pass
    storage = Storage(root)
    message = "ok"
    where = f"{socket.gethostname()}:{os.getcwd()}"  # an executor's own working directory on a cluster
    try:
        with storage.open(storage.path(PROBE_DIR, name, "driver")) as f:
            found = f.read().decode()
        if found != token:
            message = "a task read another driver's probe file"
        else:
            storage.write_bytes(storage.path(PROBE_DIR, name, f"executor-{TaskContext.get().partitionId()}"),
                                token.encode())
    except FileNotFoundError:
        message = "a task could not see the file the driver wrote there"
    except OSError as error:
        message = f"a task could not use it ({type(error).__name__}: {str(error).splitlines()[0][:200]})"
    yield pa.RecordBatch.from_pylist([{"message": message, "where": where}],
                                     schema=pa.schema([("message", pa.string()), ("where", pa.string())]))


def local_master(spark) -> bool:
    return flavour_of(spark).runs_here(spark)


def probed(spark, root: str) -> bool:
    """Whether ``root`` was found shared for ``spark`` (and will not be probed again)."""
    return (id(spark), root) in _SHARED


def reached(spark, root: str) -> list[str]:
    """Where the probe of ``root`` ran its tasks (``host:working directory``, one per executor), sorted."""
    return list(_SHARED.get((id(spark), root), []))


def probe_tasks(spark) -> int:
    """How many probe tasks: the application's cores (``defaultParallelism``), so every executor gets one."""
    cores = flavour_of(spark).cores(spark) or CONNECT_TASKS
    return max(1, min(int(cores), MAX_TASKS))


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
        tasks = probe_tasks(spark)
        rows = spark.range(0, tasks, 1, tasks).mapInArrow(task, "message string, where string").collect()
        message = next((row.message for row in rows if row.message != "ok"), "ok")
        for partition in range(tasks) if message == "ok" else ():
            try:
                with storage.open(storage.path(PROBE_DIR, name, f"executor-{partition}")) as f:
                    if f.read().decode() != token:
                        message = "the driver read another task's probe file"
            except FileNotFoundError:
                message = "a task wrote there but the driver cannot see what it wrote"
            if message != "ok":
                break
    finally:
        storage.remove_tree(folder)
        if storage.local:  # the empty parent too (another probe's files keep it)
            with contextlib.suppress(OSError):
                os.rmdir(storage.path(PROBE_DIR))
    if message != "ok":
        raise JobDirNotSharedError(f"job directory {root} is not shared by the driver and Spark's executors: "
                                   f"{message}; {ADVICE}")
    _SHARED[key] = sorted({row.where for row in rows})
