"""Observation points of a running job: after each event, when a job vertex starts, and
Spark's task progress while it runs (see ``progress``).

The widgets watch a run through them, and ``fw_magics.testing`` uses them to kill the
driver at a chosen moment. A hook must not raise.
"""

from __future__ import annotations

from collections.abc import Callable

JOB_HOOKS: list[Callable] = []     # fn(run, recovered) when a run starts; recovered: (vertex, subtask) kept
EVENT_HOOKS: list[Callable] = []   # fn(store, event) after an event is queued
VERTEX_HOOKS: list[Callable] = []  # fn(vertex, subtasks, attempt) before a job vertex's Spark job
PROGRESS_HOOKS: list[Callable] = []  # fn(vertex_name, done_tasks, total_tasks) while its Spark job runs


def job_started(run, recovered) -> None:
    for hook in list(JOB_HOOKS):
        hook(run, recovered)


def event_written(store, event: dict) -> None:
    for hook in list(EVENT_HOOKS):
        hook(store, event)


def vertex_started(vertex, subtasks, attempt: int) -> None:
    for hook in list(VERTEX_HOOKS):
        hook(vertex, subtasks, attempt)


def vertex_progress(vertex_name: str, done: int, total: int) -> None:
    for hook in list(PROGRESS_HOOKS):
        hook(vertex_name, done, total)
