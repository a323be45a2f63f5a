"""Errors from the user's own code, shown with the user's frames only.

An exception raised by a user's function keeps its traceback, minus the frames of
fw-magics, PySpark, IPython and the standard library. IPython asks an exception for
``_render_traceback_()`` before formatting it, so the trimmed lines are attached there
and the exception itself (its type, message and chain) is re-raised unchanged. When the
function failed inside a Spark worker, its traceback arrives as text in PySpark's
``PythonException``; the same trimming applies to that text, and a frame in a notebook
cell is named the IPython way (``Cell In[18], line 3, in top3``), not by the temporary file
``ipykernel_…/….py`` the kernel compiled the cell under.
"""

from __future__ import annotations

import linecache
import re

from .frames import is_user_file, user_traceback

_WORKER_TRACEBACK = "Traceback (most recent call last):"
#: Where the error's own lines end in PySpark's text: the JVM's stack, a streaming query's description.
_AFTER_MESSAGE = ("JVM stacktrace", "=== Streaming Query ===")
_FRAME = re.compile(r'^  File "(?P<file>.*)", line (?P<line>\d+), in (?P<name>.*)$')


def trim(error: BaseException, shell) -> bool:
    """Show ``error`` with the user's frames only, if it came from user code; say whether it did."""
    lines = worker_lines(error, shell) or user_traceback(error, shell)
    if lines is None:
        return False
    error._render_traceback_ = lambda: lines
    return True


def worker_lines(error: BaseException | None, shell=None) -> list[str] | None:
    """A Spark worker's traceback, cut to the user's frames: a header line, the user's frames, then the
    error's own lines; None when ``error`` carries no worker traceback with a frame of the user's. The
    traceback is text inside PySpark's ``PythonException``, or inside the ``StreamingQueryException`` of a
    streaming query whose micro-batch it failed (its query's description after it is left out)."""
    from pyspark.errors import PythonException, StreamingQueryException

    if not isinstance(error, (PythonException, StreamingQueryException)):
        return None
    text = str(error)
    start = text.rfind(_WORKER_TRACEBACK)
    if start < 0:
        return None
    body = text[start + len(_WORKER_TRACEBACK):].strip("\n").splitlines()
    frames: list[list[str]] = []
    index = 0
    while index < len(body) and _FRAME.match(body[index]):
        frame = [body[index]]
        index += 1
        while index < len(body) and body[index].startswith("    "):
            frame.append(body[index])
            index += 1
        frames.append(frame)
    user = [frame for frame in frames if is_user_file(_FRAME.match(frame[0])["file"])]
    if not user:
        return None
    message = [line for line in body[index:] if line.strip()]
    message = message[: next((i for i, line in enumerate(message) if line.startswith(_AFTER_MESSAGE)), len(message))]
    if message:
        message[-1] = re.sub(r"\s*SQLSTATE: \w+$", "", message[-1])
    out = ["Traceback (most recent call last), from a Spark worker running your function:"]
    for frame in user:
        head = _cell_name(frame[0], shell)
        out += [head, *frame[1:]] if len(frame) > 1 else [head, *_source(frame[0])]
    return out + message


def _cell_name(frame_line: str, shell) -> str:
    """``  Cell In[18], line 3, in top3`` for a frame in a notebook cell (as IPython names them)."""
    match = _FRAME.match(frame_line)
    compiler = getattr(shell, "compile", None)
    named = compiler.format_code_name(match["file"]) if hasattr(compiler, "format_code_name") else None
    if not named:
        return frame_line
    label, name = named
    return f"  {label} {name}, line {match['line']}, in {match['name']}"


def _source(frame_line: str) -> list[str]:
    """The source line of a frame from the driver's line cache (workers have no IPython cells)."""
    match = _FRAME.match(frame_line)
    line = linecache.getline(match["file"], int(match["line"])).strip()
    return [f"    {line}"] if line else []
