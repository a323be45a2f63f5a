"""Observation points of a running job: a small registry of hooks, called by kind.

The kinds and what each hook is called with:

* ``"job_started"``: ``fn(run, recovered)`` when a run starts; ``recovered``: the
  ``(vertex, subtask)`` pairs kept from an earlier run;
* ``"event_written"``: ``fn(store, event)`` after a job event is queued (``store.flush()``
  makes it durable);
* ``"vertex_started"``: ``fn(vertex, subtasks, attempt)`` before a job vertex's Spark job;
* ``"vertex_progress"``: ``fn(vertex_name, done_tasks, total_tasks)`` while it runs (see
  ``progress``: nothing polls Spark unless such a hook is registered).

Streaming jobs (``fw_magics.runtime.streaming``) add three kinds, called with the running
``StreamingJob``:

* ``"stream_phase"``: ``fn(job, phase, detail)`` when the job enters a phase ("backlog",
  "switching", "stream", "finished", "stopped", "failed"); ``detail`` is a dict (the switch's
  ``watermark``, a failure's ``cause``);
* ``"backlog_progress"``: ``fn(job, done, total)``: Spark tasks of the backlog's batch job
  done so far, out of those started (and ``done == total == subtasks`` when it has finished);
* ``"micro_batch"``: ``fn(job, info)`` after each committed micro-batch: ``info`` has
  ``batch``, ``input_rows``, ``state_rows_updated``, ``dropped_by_watermark``, ``watermark``
  (epoch ms or None) and ``duration_ms``.

``register(kind, fn)`` returns a handle; ``handle.unregister()`` (or ``unregister(handle)``,
or leaving ``with register(...):``) removes exactly that hook, never anyone else's. Hooks of
a kind are called in the order they were registered. A hook that raises is logged, as one
warning with its traceback on the ``fw_magics.hooks`` logger, and the job goes on (IPython's
``EventManager.trigger`` behaves alike): watching a job must never fail it. Only an
``Exception`` is caught; a ``KeyboardInterrupt`` still stops the run, and a hook that kills
the process (``fw_magics.teaching.testing``) kills it, since a kill is no exception.

The widgets follow runs through these hooks; ``define(kind, signature)`` adds a kind, as
the streaming side does for phase changes and micro-batch progress.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from .errors import FullWindowError, did_you_mean

_log = logging.getLogger("fw_magics.hooks")
_lock = threading.Lock()

#: kind -> how its hooks are called (for messages and documentation)
KINDS: dict[str, str] = {}
_hooks: dict[str, tuple[Hook, ...]] = {}


class Hook:
    """The handle ``register`` returns: unregisters its one hook (again: nothing happens)."""

    __slots__ = ("kind", "fn")

    def __init__(self, kind: str, fn: Callable):
        self.kind, self.fn = kind, fn

    @property
    def registered(self) -> bool:
        return self in _hooks.get(self.kind, ())

    def unregister(self) -> None:
        with _lock:
            _hooks[self.kind] = tuple(h for h in _hooks.get(self.kind, ()) if h is not self)

    def __enter__(self) -> Hook:
        return self

    def __exit__(self, *exc) -> None:
        self.unregister()

    def __repr__(self) -> str:
        state = "registered" if self.registered else "unregistered"
        return f"<{self.kind} hook {getattr(self.fn, '__qualname__', self.fn)!r}, {state}>"


def define(kind: str, signature: str) -> None:
    """Add a kind of hook; ``signature`` says what its hooks are called with, e.g. "fn(job, phase)"."""
    if not isinstance(kind, str) or not kind.isidentifier():
        raise FullWindowError(f"hook kind {kind!r}; accepted: an identifier such as 'phase_changed'")
    with _lock:
        KINDS.setdefault(kind, signature)
        _hooks.setdefault(kind, ())


def _check_kind(kind) -> None:
    if kind not in KINDS:
        raise FullWindowError(
            f"unknown hook kind {kind!r}" + did_you_mean(kind, KINDS, otherwise=f"; accepted: {', '.join(KINDS)}")
        )


def register(kind: str, fn: Callable) -> Hook:
    """Call ``fn`` at every observation point of ``kind``; returns the handle that removes it."""
    _check_kind(kind)
    if not callable(fn):
        raise FullWindowError(f"a {kind} hook must be callable, {KINDS[kind]}; got {type(fn).__name__}")
    hook = Hook(kind, fn)
    with _lock:
        _hooks[kind] = (*_hooks[kind], hook)
    return hook


def unregister(hook: Hook) -> None:
    """Remove the hook ``register`` returned this handle for."""
    hook.unregister()


def registered(kind: str) -> bool:
    """Whether any hook of ``kind`` is registered (so an observation worth its cost is made)."""
    _check_kind(kind)
    return bool(_hooks[kind])


def trigger(kind: str, *args) -> None:
    """Call every hook of ``kind`` with ``args``; a hook that raises is logged, and the rest still run."""
    for hook in _hooks[kind]:
        try:
            hook.fn(*args)
        except Exception:
            _log.warning("fw-magics: a %s hook (%s) raised; the job goes on", kind,
                         getattr(hook.fn, "__qualname__", repr(hook.fn)), exc_info=True)


define("job_started", "fn(run, recovered)")
define("event_written", "fn(store, event)")
define("vertex_started", "fn(vertex, subtasks, attempt)")
define("vertex_progress", "fn(vertex_name, done_tasks, total_tasks)")
define("stream_phase", "fn(job, phase, detail)")
define("backlog_progress", "fn(job, done, total)")
define("micro_batch", "fn(job, info)")


# -- what the runtime calls ----------------------------------------------------------------------


def job_started(run, recovered) -> None:
    trigger("job_started", run, recovered)


def event_written(store, event: dict) -> None:
    trigger("event_written", store, event)


def vertex_started(vertex, subtasks, attempt: int) -> None:
    trigger("vertex_started", vertex, subtasks, attempt)


def vertex_progress(vertex_name: str, done: int, total: int) -> None:
    trigger("vertex_progress", vertex_name, done, total)
