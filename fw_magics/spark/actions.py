"""The Spark actions fw-magics starts: each one tagged, and cancelled at once when the user stops it.

Every Spark job fw-magics runs (a preview, ``to_pandas``, ``collect_partitions``, each job
vertex of ``execute()``, and whatever the streaming side runs) goes through ``run_action``:

* the action's Spark jobs carry a tag of their own. On a classic session it is a
  SparkContext job tag (``sc.addJobTag``), which reaches the jobs Spark starts in its
  serving threads too, with interrupt-on-cancel; under Spark Connect it is ``spark.addTag``.
  Both are thread-local: another thread's actions are untouched. (The cancelled jobs are
  counted, on classic, as the jobs of this thread's job group that started during the action
  and were running; Structured Streaming runs its batches in groups of their own.)
* *Kernel > Interrupt* (SIGINT in the main thread) or ``Scope.cancel()`` from any thread
  cancels those jobs at once: ``sc.cancelJobsWithTag`` on classic, ``spark.interruptTag``
  under Connect. Spark kills the tasks and, within ``spark.python.task.killTimeout``, their
  Python workers; a worker Spark's monitor misses (a task killed while still feeding it
  input) kills itself on seeing the action's cancel mark (``cancel_marks``). The action
  then ends with ``Interrupted`` and one line, "interrupted: cancelled 2 Spark jobs", not
  the PySpark and Arrow frames the interrupt went through;
* a ``FullWindowError`` raised inside a worker comes back as that one line.

``Scope`` groups actions: ``execute()`` runs in one, and the recovery panel's Stop button
cancels the scope its Resume runs in. Code that runs Spark jobs on behalf of the user (the
streaming engine, say) wraps each of them in ``run_action(..., spark=session)``.

Why the cancel is done here rather than left to PySpark: in a kernel, ipykernel's SIGINT
handler replaces PySpark's, so an interrupt only stops the Python side. The Arrow reader
gives up, PySpark's ``finally`` waits for the job it no longer reads (a 120 s task takes
120 s), and the traceback runs through pyspark and pyarrow. The SIGINT handler installed
here while an action runs cancels the jobs first, from a helper thread (a Py4J call from a
signal handler could wait on the very connection the main thread is blocked in), waits a
few seconds for that, and then raises the KeyboardInterrupt.
"""

from __future__ import annotations

import signal
import threading
import uuid
from collections.abc import Callable

from ..errors import Interrupted, raised_in_worker
from .cancel_marks import mark
from .flavour import flavour_of

CANCEL_WAIT = 10.0  # seconds the cancel may take before the interrupt goes ahead anyway

_local = threading.local()  # .scopes: the Scopes this thread is inside, innermost last
_lock = threading.Lock()
_main_actions: list[_Action] = []  # actions running in the main thread (what SIGINT cancels)


def _active_session():
    """This thread's active session, else the default one (a thread of your own has no active
    session on classic Spark), else None."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        return None
    try:
        return SparkSession.active()
    except Exception:  # PySparkRuntimeError NO_ACTIVE_OR_DEFAULT_SESSION: no session yet
        return None


class _Action:
    """One running action: its tag, and how to cancel and count its Spark jobs (the session's flavour's)."""

    def __init__(self, spark):
        self.spark = spark
        self.flavour = flavour_of(spark)
        self.tag = f"fw-magics-{uuid.uuid4().hex[:12]}"
        self.cancelled = False
        self.count: int | None = None  # Spark jobs (classic) or operations (Connect) cancelled
        self._canceller: threading.Thread | None = None
        self._saved: dict = {}

    # -- around the action -----------------------------------------------------------------

    def start(self) -> None:
        self._saved = self.flavour.tag(self.spark, self.tag)

    def finish(self) -> None:
        self.flavour.untag(self.spark, self.tag, self._saved)

    # -- cancelling ------------------------------------------------------------------------------

    def cancel(self, wait: float | None = CANCEL_WAIT) -> None:
        """Cancel the action's running Spark jobs from a helper thread; wait up to ``wait`` s."""
        with _lock:
            if self.cancelled:
                thread = self._canceller
            else:
                self.cancelled = True
                thread = self._canceller = threading.Thread(target=self._cancel, name="fw-magics cancel",
                                                            daemon=True)
                thread.start()
        if thread is not None and wait:
            thread.join(wait)

    def _cancel(self) -> None:
        try:
            self.count = self.flavour.cancel(self.spark, self.tag, self._saved)
        except Exception:  # the session is gone: there is nothing left to cancel
            self.count = self.count or 0
        mark(self.tag)  # for the workers Spark's monitor misses (cancel_marks)

    def interrupted(self) -> Interrupted:
        if self._canceller is not None:
            self._canceller.join(CANCEL_WAIT)
        return Interrupted.cancelled(self.count or 0, self.flavour.unit)


class Scope:
    """Actions started inside ``with scope:``, in whichever thread enters it; ``cancel()`` stops them.

    ``cancel()`` may be called from any thread (a Stop button's): the actions running in
    the scope are cancelled, and any action started in it afterwards raises ``Interrupted``
    before it runs, so a multi-job run (``execute()``) stops instead of going on to its next
    Spark job.
    """

    def __init__(self):
        self.cancelled = False
        self._running: set[_Action] = set()
        self._counts: list[_Action] = []

    def __enter__(self) -> Scope:
        stack = getattr(_local, "scopes", None)
        if stack is None:
            stack = _local.scopes = []
        stack.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _local.scopes.remove(self)

    def cancel(self) -> int:
        """Cancel every running action of the scope; returns how many Spark jobs that cancelled."""
        with _lock:
            self.cancelled = True
            running = list(self._running)
        for action in running:
            action.cancel()
        return sum(action.count or 0 for action in running)


def _scopes() -> list[Scope]:
    return list(getattr(_local, "scopes", ()))


def run_action(action: Callable, spark=None):
    """Run ``action()`` (a Spark action on ``spark``, by default the active session), tagged.

    Interrupting it (SIGINT in the main thread, or ``cancel()`` of an enclosing ``Scope``)
    cancels its Spark jobs and raises ``Interrupted``; a FullWindowError raised in a worker
    (any fw-magics error: a JobStorageError naming a file)
    comes back as itself, one line; any other error keeps its type and traceback.
    """
    scopes = _scopes()
    if any(scope.cancelled for scope in scopes):
        raise Interrupted.cancelled(0, "job")
    spark = spark if spark is not None else _active_session()
    if spark is None:  # nothing to tag (no session yet): the action starts one or fails on its own
        return _with_one_line_errors(action)
    running = _Action(spark)
    running.start()
    main = threading.current_thread() is threading.main_thread()
    previous = _installed
    with _lock:
        for scope in scopes:
            scope._running.add(running)
        if main:
            _main_actions.append(running)
    try:
        if any(scope.cancelled for scope in scopes):  # cancelled while it was being set up
            raise Interrupted.cancelled(0, "job")
        if main:
            previous = _install_sigint()
        try:
            return _with_one_line_errors(action)
        except Interrupted:
            raise
        except KeyboardInterrupt:
            running.cancel()
            raise running.interrupted() from None
        except Exception:
            if running.cancelled:
                raise running.interrupted() from None
            raise
    finally:
        _restore_sigint(previous)
        with _lock:
            for scope in scopes:
                scope._running.discard(running)
            if main:
                _main_actions.remove(running)
        running.finish()


def _with_one_line_errors(action: Callable):
    try:
        return action()
    except Exception as error:
        raised = raised_in_worker(error)
        if raised is not None:
            raise raised from None
        raise


# -- SIGINT while an action runs in the main thread ----------------------------------------------

_installed = object()  # marks "ours" in _restore_sigint: the outermost action restores


def _on_sigint(signum, frame):
    for action in list(_main_actions):
        action.cancel()
    raise KeyboardInterrupt


def _install_sigint():
    """Our SIGINT handler while the main thread runs an action; returns what to restore."""
    try:
        current = signal.getsignal(signal.SIGINT)
        if current is _on_sigint:
            return _installed  # an outer action installed it
        if current in (signal.SIG_IGN, None):
            return _installed  # interrupts are ignored on purpose: leave it so
        signal.signal(signal.SIGINT, _on_sigint)
        return current
    except ValueError:  # not the main interpreter's main thread after all
        return _installed


def _restore_sigint(previous) -> None:
    if previous is None or previous is _installed:
        return
    try:
        signal.signal(signal.SIGINT, previous)
    except ValueError:
        pass
