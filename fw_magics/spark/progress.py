"""Spark's task progress for the job vertex running now, for whoever watches a run.

How it is read is the session's flavour's (``fw_magics.spark.flavour``). Under Spark Connect it comes from ``spark.registerProgressHandler``: the server reports every
``spark.connect.progress.reportInterval`` (2 s by default, so a vertex shorter than that was
often never reported on; set to the classic poll's 0.25 s while a view follows a vertex, and put
back after); a stage counts once a task of it has finished; a block that returns completes the
count of the stages reported, which the server's last report may not. On a
classic session the vertex's Spark jobs run in a job group of their own and a daemon
thread polls the status tracker for it (tasks of the stages started so far, so the total
grows as later stages start). Nothing is registered and no thread starts unless a
vertex_progress hook is registered (a graph view following runs).
"""

from __future__ import annotations

import contextlib

from .. import hooks
from .flavour import flavour_of


@contextlib.contextmanager
def reporting(spark, vertex_name: str):
    """Report ``hooks.vertex_progress(vertex_name, done, total)`` while the block runs."""
    if not hooks.registered("vertex_progress"):
        yield
        return
    with flavour_of(spark).progress(spark, lambda done, total: hooks.vertex_progress(vertex_name, done, total)):
        yield
