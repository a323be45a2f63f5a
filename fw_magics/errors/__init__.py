"""The exceptions of fw-magics, one family under ``FwMagicsError``, and the helpers that word them.

Every error fw-magics raises on purpose is an ``FwMagicsError`` with a one-line message that
names the culprit; the ``%%fullwindow`` magic turns any of them into one ``UsageError`` line:

* ``FullWindowError`` (also a ``ValueError``): a misuse of the API, raised before any Spark
  job starts (or, for a record that does not fit its schema, when the job runs);
* ``ResumeError``: a resume that is refused because of what the job directory holds (no event
  log to resume, a log recorded for another graph): a state conflict, not a misuse;
* ``JobLockedError``: another live process is running the job;
* ``JobStorageError``: the job directory cannot be written (a full disk, a read-only
  folder) or holds what fw-magics did not write; when a job's own failure came first, the
  message names both;
* ``JobFailedError``: a running (streaming) job failed; the cause is chained to it;
* ``JobDirNotSharedError``: Spark's executors cannot reach the job directory (a cluster);
* ``SparkUnavailableError``: Spark cannot start on this machine (no or wrong Java);
* ``GraphvizNotFound``: Graphviz's ``dot`` is not installed (as the graphviz package's
  ``ExecutableNotFound``).

All but ``FullWindowError`` are also ``RuntimeError``, as they were before the family existed.

``Interrupted`` is outside the family on purpose: it is a ``KeyboardInterrupt`` (the user
stopped Spark work fw-magics started, and its Spark jobs were cancelled: see
``fw_magics.spark.actions``), so ``except Exception`` never swallows it, and IPython shows its
one line instead of a traceback.
``fw_magics.teaching.testing.InjectedFailure`` is deliberately outside the family: it stands for a
failure of the user's own code, which keeps its traceback and goes through failover like any
other; the magic must not shorten it to one line.

Internal errors are not in the family either: they keep their traceback.
"""

from __future__ import annotations

import difflib
import re


class FwMagicsError(Exception):
    """Base class of every error fw-magics raises on purpose; its message is one line.

    In IPython (a notebook) it is shown as the user's own frames, the cell line that called
    fw-magics, then that one line (``_render_traceback_``): not the frames inside fw-magics,
    PySpark or pyarrow it went through, nor the library error it was worded from (still chained,
    for ``%debug`` and ``__cause__``). ``JobFailedError`` keeps IPython's whole traceback: its
    chained cause is the failure of the user's own code.
    """

    def _render_traceback_(self) -> list[str]:
        from IPython import get_ipython  # IPython is the caller

        from .frames import user_traceback

        shell = get_ipython()
        kept = self.__cause__, self.__suppress_context__
        self.__cause__, self.__suppress_context__ = None, True  # drawn without the error it was worded from
        try:
            lines = user_traceback(self, shell) if shell is not None else None
        finally:
            self.__cause__, self.__suppress_context__ = kept
        return lines or [f"{type(self).__name__}: {self}"]


class FullWindowError(FwMagicsError, ValueError):
    """A misuse of the fw-magics API, reported as one line.

    The message names the culprit (the column, position, value or function) and what
    would have been accepted. It is raised before any Spark job starts, except for
    problems only visible in the data (a record that does not fit the declared schema),
    which are raised when the job runs, with the same one-line message.
    """


class ResumeError(FwMagicsError, RuntimeError):
    """A resume refused because of the job directory's state (no event log, another graph)."""


class JobLockedError(FwMagicsError, RuntimeError):
    """Another live process is running this job (or the lock cannot be taken safely)."""


class JobLockLostError(JobLockedError):
    """This process held the job's lock and lost it to another process while running."""


class JobStorageError(FwMagicsError, RuntimeError):
    """The job directory cannot be written or read as a run needs (a full disk, a read-only folder)."""


class JobFailedError(FwMagicsError, RuntimeError):
    """A running job failed; the message says why in one line, and the failure itself is chained to it.

    In IPython: when the failure is the user's function raising in a Spark worker, the user's frames of
    the worker's traceback (the failing line of their function), then this one line, as a ``%%fullwindow``
    cell shows it; any other failure keeps IPython's whole traceback, its cause chained."""

    def _render_traceback_(self) -> list[str]:
        from IPython import get_ipython

        from .tracebacks import worker_lines

        shell = get_ipython()
        if shell is None:
            return [f"{type(self).__name__}: {self}"]
        lines = worker_lines(self.__cause__, shell)
        if lines:
            frames = lines[:1] + [line for line in lines[1:] if line.startswith("  ")]
            return frames + [f"{type(self).__name__}: {self}"]
        return shell.InteractiveTB.structured_traceback(type(self), self, self.__traceback__)


class JobDirNotSharedError(FwMagicsError, RuntimeError):
    """Spark's executors cannot write the job directory, or the driver cannot read what they wrote."""


class SparkUnavailableError(FwMagicsError, RuntimeError):
    """Spark cannot start on this machine (no or wrong Java); the message says what to install."""


class GraphvizNotFound(FwMagicsError, RuntimeError):
    """Graphviz's ``dot`` executable is not installed; the message says how to install it."""


class Interrupted(KeyboardInterrupt):
    """The user stopped Spark work fw-magics started (Kernel > Interrupt, a Stop button).

    Its Spark jobs were cancelled; the message says how many, in one line, and IPython shows
    only that line (``_render_traceback_``), not the PySpark and Arrow frames the interrupt
    went through.
    """

    @classmethod
    def cancelled(cls, count: int, unit: str = "job") -> Interrupted:
        """``interrupted: cancelled 2 Spark jobs`` (``unit`` "operation" under Spark Connect)."""
        if count == 0:
            return cls("interrupted (no Spark job was running)")
        return cls(f"interrupted: cancelled {count} Spark {unit}{'s' * (count != 1)}")

    def _render_traceback_(self) -> list[str]:
        return [str(self)]


# -- wording -------------------------------------------------------------------------------------


def closest(word, choices) -> str | None:
    """The choice nearest to ``word`` (case ignored; a choice equal but for case comes first), or None."""
    same = [str(c) for c in choices if str(c).lower() == str(word).lower()]
    if same:
        return same[0]
    lowered = {str(c).lower(): str(c) for c in choices}
    close = difflib.get_close_matches(str(word).lower(), list(lowered), n=1)
    return lowered[close[0]] if close else None


def did_you_mean(word, choices, otherwise: str = "", form: str = "; did you mean {!r}?") -> str:
    """The hint for a misspelled ``word``: ``form`` filled with the closest choice, else ``otherwise``.

    Every "did you mean" of fw-magics comes from here::

        f"no such variable{did_you_mean(name, names)}"                  # "; did you mean 'orders'?"
        f"no column {c!r}{did_you_mean(c, columns, form=' (did you mean {!r}?)')}; columns are: ..."
    """
    near = closest(word, choices)
    return form.format(near) if near is not None else otherwise


_TRACEBACK = "Traceback (most recent call last):"
_FW_LINE = re.compile(r"(?:fw_magics\.errors\.)?FullWindowError: (.+)")
_CAUSE = re.compile(r"(?:Caused by: )?((?:[\w$]+\.)+[\w$]*(?:Exception|Error)(?:: .*)?)$")


def error_summary(error: BaseException, limit: int = 500) -> str:
    """One line saying what went wrong: ``Type: message``.

    Spark wraps what actually failed: an error raised in a Python worker comes as "An exception
    was thrown from the Python worker" (or "raised by the Python Proxy") with the worker's
    traceback inside, a JVM error as "An error occurred while calling o42.collect" with the JVM's
    exception chain after it. The line that matters is the one a traceback ends in (the last
    traceback whose raised line is there), else the innermost exception of the JVM's chain (its
    last ``Caused by:``); it is given after the wrapper's type. A FullWindowError raised in a
    worker comes back as its own one line.
    """
    text = str(error).strip()
    fw_line = next((m.group(1).strip() for m in map(_FW_LINE.search, text.splitlines()) if m), None)
    if fw_line is not None and not isinstance(error, FwMagicsError):
        return f"FullWindowError: {fw_line}"[:limit]
    lines = text.splitlines()
    for k in reversed([k for k, line in enumerate(lines) if line.rstrip().endswith(_TRACEBACK)]):
        raised = next((line for line in lines[k + 1:] if line.strip() and not line[0].isspace()), None)
        if raised is not None and not raised.strip().startswith(("JVM stacktrace", "at ")):
            return f"{type(error).__name__}: {raised.strip()}"[:limit]
    first = lines[0] if lines else ""
    if first.startswith("An error occurred while calling") or first.startswith("[STREAM_FAILED]"):
        causes = [m.group(1) for m in map(_CAUSE.match, (line.strip().lstrip(": ") for line in lines[1:])) if m]
        if causes:
            return f"{type(error).__name__}: {causes[-1]}"[:limit]
    return f"{type(error).__name__}: {first}"[:limit]


#: Spark's driver-side Python workers (a Python source's reader, its planner) get a fixed 10 s to connect back
#: (``PythonWorkerFactory.createSimpleWorker``, not configurable): on a busy machine a query's start can miss it,
#: and nothing has run.
WORKER_START_MISSED = "Python worker failed to connect back"


def worker_start_missed(error: BaseException) -> bool:
    """Whether ``error`` is a Spark Python worker that did not start in time (``WORKER_START_MISSED`` is Spark's
    own message, on its first line: a user function's error that quotes it is not)."""
    return WORKER_START_MISSED in str(error).partition("\n")[0]


#: Known start-up failures of Spark's Python workers, and what to do (appended to their one line).
HINTS = {
    WORKER_START_MISSED: "the machine was too busy for Spark's Python worker to start in time: run it again, "
                         "or give Spark fewer cores (FW_SPARK_MASTER=local[1])",
    "Python worker exited unexpectedly": "a Python worker crashed (out of memory?): its own error is above in the "
                                         "log; run it again with smaller partitions",
}


def hinted(summary: str) -> str:
    """``summary`` with what to do when it is a known Spark start-up failure."""
    hint = next((h for mark, h in HINTS.items() if mark in summary), None)
    return summary if hint is None or hint in summary else f"{summary} ({hint})"


def _error_classes(base=None) -> dict:
    base = base or FwMagicsError
    found = {base.__name__: base}
    for sub in base.__subclasses__():
        found.update(_error_classes(sub))
    return found


def raised_in_worker(error: BaseException) -> FwMagicsError | None:
    """The fw-magics error a Spark worker raised (a FullWindowError checking a value, a JobStorageError
    naming a file it cannot read), as itself: its type and its one line, without PySpark's wrapper and the
    worker's frames; None when ``error`` carries none."""
    if isinstance(error, FwMagicsError):
        return None
    classes = _error_classes()
    raised = re.compile(rf"\b({'|'.join(map(re.escape, classes))}): (.+)$")
    for line in reversed(str(error).splitlines()):
        match = raised.search(line)
        if match:
            return classes[match.group(1)](re.sub(r"\s*SQLSTATE: \w+$", "", match.group(2).strip()))
    return None


def raised_again(error: BaseException, context: str) -> FwMagicsError:
    """A fresh one-line error for a failure raised again later (``raise raised_again(e, ...) from e``):
    the same one for an FwMagicsError or a FullWindowError raised in a worker, else a JobFailedError
    saying ``context: Type: what went wrong``.
    Raising the first object again would pile every later call's frames onto its traceback."""
    if isinstance(error, FwMagicsError):
        return type(error)(str(error))
    summary = error_summary(error)
    if summary.startswith("FullWindowError: "):  # a value check in a worker: the batch API's one line
        return FullWindowError(summary[len("FullWindowError: "):])
    return JobFailedError(f"{context}: {hinted(summary)}")
