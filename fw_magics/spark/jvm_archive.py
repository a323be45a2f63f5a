"""A class-data-sharing archive of Spark's classes: an embedded session starts 6 s sooner.

Most of an embedded Spark's start is its JVM loading, parsing and verifying thousands of
classes from pyspark's jars, one at a time, on one core. Measured on the 2-core VM from a
fresh process: ``fw.get_spark()`` 11.0 s, a first full-window result 17.6 s; with this
archive 7.3-7.5 s and 11.6-11.9 s (under the in-process Spark Connect server of
``SPARK_REMOTE=local[2]``, a first ``count()`` at 11.8-13.5 s instead of 19.0 s). Java's dynamic
AppCDS keeps those classes, parsed and verified, in a file a JVM maps at start
(``-XX:SharedArchiveFile``); JDK 17 writes one when a JVM started with
``-XX:ArchiveClassesAtExit`` exits.

Writing it takes about 90 s (the jobs, then the JVM's exit), so never in a user's kernel:
``python -m fw_magics.spark.jvm_archive`` (run by ``make``'s ``deps``, so by both README commands)
starts Spark in a child process, runs a small job of each kind fw-magics runs (full window,
keyed, Parquet, a mixed stream), stops it, waits for the JVM to write the archive and moves it
into place. An embedded session (``session.embedded_conf``, classic or the in-process Spark
Connect server) then starts with it when there is one for its Java and Spark jars
(``archive_path``: the file name holds a hash of the java binary, its version, the jars' folder
and their names, sizes and times). A folder of archives keeps ``KEEP``: an archive whose jars'
folder is gone goes first (a deleted checkout's or CI clone's), then the least recently used
(each use touches its file), so fresh clones do not push out the archive of the checkout in
use. The JVM checks the archive again itself; one it cannot use (another class path, say
``spark.driver.extraClassPath``) is skipped without a word, and Spark starts as it would have.
``FW_JVM_ARCHIVE=off`` starts without it; ``FW_JVM_ARCHIVE_DIR`` moves it (default ``$XDG_CACHE_HOME/fw-magics``, else
``~/.cache/fw-magics``; about 200 MB each).
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import hashlib
import os
import subprocess
import sys
import tempfile
import time

from .java import java_binary, java_version, spark_home

PREFIX = "spark-classes-"
KEEP = 3  # archives kept in the folder, the newest
#: How a JVM uses the archive: quietly, whether it can or not.
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"

# The child's work: each kind of job, so their classes are in the archive; then the JVM exits.
_WORKLOAD = r"""
import os, shutil, sys, tempfile
import fw_magics as fw
from pyspark import SparkContext
from pyspark.sql import functions as F

spark = fw.get_spark({"spark.driver.extraJavaOptions": sys.argv[1]})
folder = tempfile.mkdtemp(prefix="fw-jvm-archive-")
try:
    df = spark.range(0, 20000, 1, 2).select("id", (F.col("id") % 50).alias("k"), (F.col("id") * 0.5).alias("v"),
                                            F.timestamp_seconds(F.col("id")).alias("ts"))
    ds = fw.from_dataframe(df)
    ds.full_window_partition().sort_partition("v").to_dataframe().collect()
    ds.key_by("k").full_window_partition().reduce(lambda a, b: a if a.v >= b.v else b).to_dataframe().collect()
    os.makedirs(os.path.join(folder, "files"))
    df.toPandas().to_parquet(os.path.join(folder, "files", "part-0.parquet"), coerce_timestamps="us")
    stream = fw.from_files(os.path.join(folder, "files"), "parquet", "id long, k long, v double, ts timestamp",
                           event_time="ts")
    job = stream.key_by("k").reduce(lambda a, b: a if a.v >= b.v else b).start(job_dir=os.path.join(folder, "jobs"))
    try:
        job.process_all_available()
        job.latest()
    finally:
        job.stop()
finally:  # the JVM exits on its stdin's end and writes the archive as it exits: wait for that, always
    spark.stop()
    shutil.rmtree(folder, ignore_errors=True)
    proc = SparkContext._gateway.proc
    proc.stdin.close()
    proc.wait(timeout=600)
"""


def archive_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.environ.get("FW_JVM_ARCHIVE_DIR") or os.path.join(base, "fw-magics")


def jars_dir() -> str:
    """The Spark jars an embedded session's JVM runs (``$SPARK_HOME/jars``, else pyspark's own)."""
    return os.path.join(spark_home(), "jars")


def archive_key(java: str, banner: str, jars: str) -> str:
    """A hash of what the archive is good for: the java binary, its version, the jars (name, size, time)."""
    digest = hashlib.sha256(f"{os.path.realpath(java)}\n{banner}\n{os.path.realpath(jars)}\n".encode())
    try:
        entries = sorted(os.scandir(jars), key=lambda e: e.name)
    except OSError:
        entries = []
    for entry in entries:
        stat = entry.stat()
        digest.update(f"{entry.name}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def archive_path(java: str, banner: str) -> str:
    return os.path.join(archive_dir(), f"{PREFIX}{archive_key(java, banner, jars_dir())}.jsa")


def java_options(java: str | None, banner: str | None) -> str:
    """The JVM options that use this Java's archive, or "" (none built, or ``FW_JVM_ARCHIVE=off``)."""
    if java is None or banner is None or os.environ.get("FW_JVM_ARCHIVE", "").lower() in ("off", "0", "false"):
        return ""
    path = archive_path(java, banner)
    if not os.path.isfile(path):
        return ""
    with contextlib.suppress(OSError):  # used now: the last to go (``evict``)
        os.utime(path)
    return f"-XX:SharedArchiveFile={path} {QUIET}"


def _jars_note(archive: str) -> str:
    """The file beside an archive naming the jars' folder it was written for."""
    return archive[: -len(".jsa")] + ".jars"


def evict(folder: str, keep: int = KEEP) -> list[str]:
    """Remove all but ``keep`` archives of ``folder``: first those whose jars' folder is gone, then the
    least recently used. Returns the archives removed."""
    archives = glob.glob(os.path.join(folder, f"{PREFIX}*.jsa"))

    def gone(archive: str) -> bool:
        try:
            with open(_jars_note(archive)) as f:
                return not os.path.isdir(f.read().strip())
        except OSError:  # written before the note existed: judged by its use alone
            return False

    ranked = sorted(archives, key=lambda a: (not gone(a), os.path.getmtime(a)), reverse=True)
    removed = ranked[keep:]
    for archive in removed:
        for stale in (archive, _jars_note(archive)):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(stale)
    return removed


def build(java: str, banner: str, force: bool = False) -> tuple[str, float | None]:
    """Write the archive for ``java`` unless it exists; (its path, seconds taken or None if it was there)."""
    path = archive_path(java, banner)
    if os.path.isfile(path) and not force:
        return path, None
    os.makedirs(archive_dir(), exist_ok=True)
    for partial in glob.glob(os.path.join(archive_dir(), ".partial-*.jsa")):  # a build that was killed
        if time.time() - os.path.getmtime(partial) > 3600:
            os.unlink(partial)
    started = time.monotonic()
    fd, partial = tempfile.mkstemp(prefix=".partial-", suffix=".jsa", dir=archive_dir())
    os.close(fd)
    os.unlink(partial)  # the JVM creates it
    # the child starts an embedded Spark (not the one SPARK_REMOTE or FW_SPARK_MASTER name) without an
    # archive, and writes one
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "FW_SPARK_MASTER")}
    env["FW_JVM_ARCHIVE"] = "off"
    log = os.path.join(archive_dir(), "last-build.log")
    try:
        with open(log, "w") as out:
            done = subprocess.run([sys.executable, "-c", _WORKLOAD, f"-XX:ArchiveClassesAtExit={partial}"],
                                  stdout=out, stderr=subprocess.STDOUT, env=env, timeout=900)
        if done.returncode != 0 or not os.path.isfile(partial) or os.path.getsize(partial) < 1 << 20:
            raise RuntimeError(f"the JVM wrote no archive (exit {done.returncode}; see {log})")
        os.replace(partial, path)
        with open(_jars_note(path), "w") as note:
            note.write(os.path.realpath(jars_dir()))
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
    evict(archive_dir())  # other Javas', Sparks' or virtualenvs': a few stay (two checkouts need not take turns)
    return path, time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fw_magics.spark.jvm_archive", description=__doc__.split("\n")[0])
    parser.add_argument("--force", action="store_true", help="write it again even if it is there")
    args = parser.parse_args(argv)
    java, found = java_binary(), java_version()
    if java is None or found is None:
        print("fw-magics: no JVM class archive: no java found (Spark cannot start either)")
        return 1
    try:
        path, seconds = build(java, found[1], args.force)
    except Exception as error:
        print(f"fw-magics: no JVM class archive ({error}); Spark starts without it, only slower")
        return 1
    size = os.path.getsize(path) / 2**20
    what = "up to date" if seconds is None else f"written in {seconds:.0f} s"
    print(f"fw-magics: Spark's JVM class archive {what}: {path} ({size:.0f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
