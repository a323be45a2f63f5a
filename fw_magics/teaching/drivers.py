"""A driver that dies: a job run in a second Python process, killed with SIGKILL at a chosen
moment, as when a kernel dies or a laptop sleeps mid-job (tutorials 4, 5 and 6)::

    def run():   # what the second driver runs, defined in the notebook
        fw.execute(orders_job(), job_dir=job_dir, job_name="orders")

    run_and_kill_driver(run, vertex="v2")                             # as job vertex v2 starts
    run_and_kill_driver(run, event="subtask_finished", subtask=0)     # once that event is durable

``run`` goes to the process by value (cloudpickle, as Spark ships a notebook's functions to its
workers) with the functions and values it refers to, so the job it builds is the notebook's own:
started again in the notebook, it is the same job (its content fingerprint agrees) and resumes.
``run`` builds its job itself, from the notebook's functions and values: a stream already made in
the notebook holds the notebook's Spark session, which cannot be sent.
The process starts its own embedded Spark (also when the kernel's is Spark Connect), with
``spark_conf``; its Spark JVM dies with it. No cleanup, no goodbye: that is the point.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from .testing import embedded_spark_env

__all__ = ["KilledDriver", "run_and_kill_driver"]

#: what the second driver runs: argv = the pickled function's path, the moment, the Spark options
_SCRIPT = """
import json, os, signal, sys
from pyspark import cloudpickle
import fw_magics as fw
from fw_magics import hooks
from fw_magics.teaching import testing

path, moment, conf = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
with open(path, "rb") as f:
    run = cloudpickle.load(f)
if moment.get("vertex"):
    def die(vertex, subtasks, attempt):
        if vertex.name == moment["vertex"]:
            os.kill(os.getpid(), signal.SIGKILL)
    hooks.register("vertex_started", die)
else:
    testing.kill_driver_on_event(moment["event"], **moment["match"])
if conf is not None:
    fw.get_spark(conf)
run()
"""


@dataclass(frozen=True)
class KilledDriver:
    """How the second driver ended: killed by SIGKILL at ``moment``, after ``seconds``."""

    moment: str
    seconds: float
    exit_code: int = -signal.SIGKILL

    def __repr__(self) -> str:
        return f"the driver was killed by SIGKILL {self.moment} (exit code {self.exit_code}, after {self.seconds:.0f} s)"


def _moment(vertex, event, match) -> tuple[dict, str]:
    if (vertex is None) == (event is None):
        raise ValueError("run_and_kill_driver needs exactly one of vertex= (a job vertex, such as 'v2') or event= "
                         "(an event type, such as 'subtask_finished')")
    if vertex is not None:
        if match:
            raise ValueError(f"run_and_kill_driver(vertex=...) takes no {', '.join(sorted(match))}=; "
                             "only event= is narrowed by the event's fields")
        return {"vertex": vertex}, f"as job vertex {vertex} started"
    said = ", ".join(f"{k}={v!r}" for k, v in match.items())
    return {"event": event, "match": match}, f"once a {event} event{f' ({said})' if said else ''} was recorded"


def run_and_kill_driver(run, *, vertex: str | None = None, event: str | None = None,
                        spark_conf: dict | None = None, timeout: float = 600, **match) -> KilledDriver:
    """Run ``run()`` in a new Python process with its own embedded Spark and kill that process
    (SIGKILL) as job vertex ``vertex`` starts, or once an event of type ``event`` whose fields
    match ``match`` is durable in the job's log. ``spark_conf``: Spark options the process starts its
    Spark with before ``run()`` (``fw.get_spark(spark_conf)``, the Spark UI off unless they turn
    it on); None: ``run()`` starts Spark as it would anywhere.

    Returns a :class:`KilledDriver`; a process that ends any other way is a ``RuntimeError``
    with its exit code and the end of what it printed."""
    from pyspark import cloudpickle

    moment, said = _moment(vertex, event, match)
    conf = None if spark_conf is None else {"spark.ui.enabled": "false", **spark_conf}
    env = dict(embedded_spark_env(), FW_SPARK_LOG_LEVEL="FATAL")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fw-driver-") as folder:
        path = os.path.join(folder, "run.pickle")
        with open(path, "wb") as f:
            cloudpickle.dump(run, f)
        done = subprocess.run([sys.executable, "-c", _SCRIPT, path, json.dumps(moment), json.dumps(conf)],
                              capture_output=True, text=True, env=env, timeout=timeout, cwd=os.getcwd())
    if done.returncode != -signal.SIGKILL:
        last = (done.stderr.strip() or done.stdout.strip() or "nothing")[-1500:]
        raise RuntimeError(f"the driver was not killed {said}: it ended with exit code {done.returncode}; "
                           f"its last words: {last}")
    return KilledDriver(said, time.monotonic() - started)
