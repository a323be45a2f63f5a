"""What a Spark JVM started in this process may print: its logging, and its stderr filtered.

An embedded session (and the in-process Spark Connect server of ``SPARK_REMOTE=local``)
runs a JVM whose stderr is the notebook's: before this module, the first cell of every
notebook showed a red block of JVM and log4j start-up chatter, "SparkUI could not bind on
port 4040" when several notebooks were open, and a user's error in a worker came after a
``pyspark/daemon.py`` traceback about a connection reset. None of it is the user's business.

* ``LOG4J_CONFIG``, shipped in the package, is the JVM's log4j2 configuration (passed with
  ``-Dlog4j2.configurationFile`` in ``spark.driver.extraJavaOptions``): log lines at
  ``FW_SPARK_LOG_LEVEL`` (default FATAL) and above, from the first line on, so nothing is
  printed before ``setLogLevel`` could have quietened it;
* ``filtered_stderr()`` wraps the start of the JVM: the JVM (and every Python worker it
  forks, which inherit its stderr) writes into a pipe, and a thread passes every line on
  to this process's stderr except the JVM's note about incubator modules (Spark's launcher
  always adds ``--add-modules=jdk.incubator.vector``; the JVM prints it before any logging
  exists, so no log configuration can remove it) and the tracebacks Spark's worker daemon
  prints when the JVM closes the connection of a task it killed or abandoned
  (``BrokenPipeError``/``ConnectionResetError`` raised in ``pyspark/daemon.py`` only), and the
  lines pyspark's ``transformWithState`` Python workers print about themselves at every start
  ("Starting Streaming TransformWithStateInPandas Python worker", "... Received UDF from JVM",
  "... Completed execution of UDF", each followed by a blank line). What a user's own function
  prints to stderr in a worker still reaches the notebook, and so does any error.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import threading

LOG4J_CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")

INCUBATOR_NOTE = "WARNING: Using incubator modules"
_TRACEBACK = "Traceback (most recent call last):"
_FLUSH_NOTE = "PySpark daemon failed to flush the output to the worker process:"
_FRAME = re.compile(r'^  File "(?P<file>[^"]*)", line \d+')
_HANGUP = re.compile(r"^(BrokenPipeError|ConnectionResetError|ConnectionAbortedError)\b")
#: What pyspark's transformWithState workers print about themselves (pyspark/sql/streaming/
#: transform_with_state_driver_worker.py and its pandas worker), every line followed by a blank one.
WORKER_CHATTER = ("Starting Streaming TransformWithStateInPandas Python worker",
                  "Streaming TransformWithStateInPandas Python worker ")


def java_options(existing: str | None = None) -> str:
    """``spark.driver.extraJavaOptions`` with the shipped log4j2 configuration, then ``existing``."""
    option = "-Dlog4j2.configurationFile=" + (shlex.quote(LOG4J_CONFIG) if " " in LOG4J_CONFIG else LOG4J_CONFIG)
    return f"{option} {existing}".strip() if existing else option


def is_noise(block: list[str]) -> bool:
    """Whether a block of stderr lines (one line, or a whole traceback) is JVM or daemon chatter."""
    if len(block) == 1:
        return block[0].startswith((INCUBATOR_NOTE, *WORKER_CHATTER))
    lines = [line.rstrip("\n") for line in block]
    if lines[0] == _FLUSH_NOTE:
        lines = lines[1:]
    if not lines or lines[0] != _TRACEBACK:
        return False
    frames = [m["file"] for m in map(_FRAME.match, lines) if m]
    return bool(frames) and all(f.replace("\\", "/").endswith("pyspark/daemon.py") for f in frames) \
        and bool(_HANGUP.match(lines[-1]))


class _Filter:
    """Reads the JVM's stderr from a pipe, writes what is not noise to ``target`` (an fd)."""

    def __init__(self, read_fd: int, target: int):
        self.read_fd, self.target = read_fd, target
        self.pending = ""  # text after the last newline
        self.block: list[str] = []  # a traceback being read, decided when it ends
        self.chatter = False  # the last line was a worker's chatter: the blank line after it goes too

    def run(self) -> None:
        while True:
            try:
                data = os.read(self.read_fd, 65536)
            except OSError:
                break
            if not data:
                break
            try:
                self.feed(data.decode("utf-8", "replace"))
            except Exception:  # never stop draining: a full pipe would block the JVM
                self._write(data.decode("utf-8", "replace"))
        self._write("".join(self.block) + self.pending)
        os.close(self.read_fd)

    def feed(self, text: str) -> None:
        text = self.pending + text
        *lines, self.pending = text.split("\n")
        for line in lines:
            self.line(line + "\n")
        if self.pending and not self.block and not self._may_open_block(self.pending):
            self._write(self.pending)  # a partial line (print(..., end="")) goes on at once
            self.pending = ""

    @staticmethod
    def _may_open_block(text: str) -> bool:
        return any(marker.startswith(text) or text.startswith(marker)
                   for marker in (_TRACEBACK, _FLUSH_NOTE, INCUBATOR_NOTE, *WORKER_CHATTER))

    def line(self, line: str) -> None:
        bare = line.rstrip("\n")
        if self.block:
            self.block.append(line)
            if bare.startswith(" ") or bare == _TRACEBACK or not bare:
                return  # frames, or the traceback line after the daemon's note
            block, self.block = self.block, []  # the exception line ends the traceback
            if not is_noise(block):
                self._write("".join(block))
            return
        if bare in (_TRACEBACK, _FLUSH_NOTE):
            self.block = [line]
            return
        if not bare and self.chatter:
            self.chatter = False
            return
        self.chatter = bare.startswith(WORKER_CHATTER)
        if not is_noise([line]):
            self._write(line)

    def _write(self, text: str) -> None:
        if not text:
            return
        data = text.encode("utf-8", "replace")
        while data:
            try:
                written = os.write(self.target, data)
            except OSError:
                return
            data = data[written:]


@contextlib.contextmanager
def filtered_stderr():
    """Start a JVM inside this block: its stderr (and its workers') is filtered for good."""
    try:
        read_fd, write_fd = os.pipe()
        saved = os.dup(2)
    except OSError:  # no fds to spare: start the JVM unfiltered
        yield
        return
    sink = _Filter(read_fd, saved)
    thread = threading.Thread(target=sink.run, name="fw-magics JVM stderr", daemon=True)
    thread.start()
    os.dup2(write_fd, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)  # this process writes to its own stderr again; the JVM keeps the pipe
        os.close(write_fd)
        sink.target = 2  # from now on, wherever this process's stderr goes (a test's capture, say)
        os.close(saved)
