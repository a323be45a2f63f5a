"""Compiled bytecode in the pyspark.zip Spark's Python processes import: each starts ~0.6 s sooner.

Spark starts its Python processes with ``$SPARK_HOME/python/lib/pyspark.zip`` (and py4j's zip)
first on their ``PYTHONPATH``, so they import pyspark from that zip, not from site-packages. The
zip pip installs holds only ``.py`` sources, and Python never writes bytecode back into a zip:
every such process compiles the pyspark modules it imports, again. Measured on the 2-core VM:
importing what a streaming source process needs took 1.2 CPU-seconds from the zip as shipped,
0.55 with bytecode in it (0.45 from site-packages). A mixed job starts two fresh ones while its
backlog runs (the Python data source's streaming runner and ``transformWithState``'s planning
process), and every session starts a worker daemon and three data-source planners.

``python -m fw_magics.spark.pyspark_bytecode`` (run by ``make``'s ``deps``, so by both README commands)
adds a ``.pyc`` beside every ``.py`` in those zips, for the Python that runs it: checked-hash
bytecode (PEP 552), so Python compares each with its source and falls back to the source when
they differ, and a Python of another version ignores it (another magic number). The original
entries stay byte for byte where they were (the new ones are appended to a copy, which then
replaces the zip whole), so a Spark session already running keeps reading its modules where it
found them; only a zip holding another Python's bytecode is written again from its sources. The
zip's comment names the bytecode's Python; a second run finds it and does nothing. Without write
access to the zips (or with a zip it cannot read) it says so and Spark runs as before, only slower.
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import marshal
import os
import shutil
import sys
import tempfile
import time
import warnings
import zipfile

from .java import spark_home

#: The zip comment that says whose bytecode the zip holds (2: code named by its full path).
MARK = b"fw-magics bytecode 2 for Python magic " + importlib.util.MAGIC_NUMBER.hex().encode()
_CHECKED_HASH = (0b11).to_bytes(4, "little")  # PEP 552 flags: hash-based, checked against the source


def worker_zips(home: str | None = None) -> list[str]:
    """The zips Spark puts on its Python processes' path: pyspark's and py4j's."""
    lib = os.path.join(home or spark_home(), "python", "lib")
    return sorted(glob.glob(os.path.join(lib, "pyspark.zip")) + glob.glob(os.path.join(lib, "py4j-*-src.zip")))


def pyc(source: bytes, filename: str) -> bytes | None:
    """Checked-hash bytecode of ``source`` for this Python, or None when it does not compile.

    ``filename`` is the path tracebacks show (zipimport keeps the one compiled in): the zip's
    path, then the entry's, as Python names a module it compiles from a zip itself."""
    try:
        with warnings.catch_warnings():  # pyspark's own tests hold a few SyntaxWarnings
            warnings.simplefilter("ignore")
            code = compile(source, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return None
    return importlib.util.MAGIC_NUMBER + _CHECKED_HASH + importlib.util.source_hash(source) + marshal.dumps(code)


def has_bytecode(path: str) -> bool:
    with zipfile.ZipFile(path) as archive:
        return archive.comment == MARK


def add_bytecode(path: str) -> bool:
    """Give the zip at ``path`` this Python's bytecode; False if it had it already."""
    if has_bytecode(path):
        return False
    path = os.path.abspath(path)
    folder = os.path.dirname(path)
    fd, partial = tempfile.mkstemp(prefix=".partial-", suffix=".zip", dir=folder)
    os.close(fd)
    try:
        shutil.copy2(path, partial)
        with zipfile.ZipFile(partial) as archive:
            names = set(archive.namelist())
            stale = archive.comment.startswith(b"fw-magics bytecode") or any(n.endswith(".pyc") for n in names)
        if stale:  # bytecode of another Python: start again from the sources
            _copy_sources(path, partial)
        with zipfile.ZipFile(partial, "a") as archive:  # appended: the entries already there keep their offsets
            for info in archive.infolist():
                if not info.filename.endswith(".py"):
                    continue
                code = pyc(archive.read(info), os.path.join(path, info.filename))
                if code is not None:
                    entry = zipfile.ZipInfo(info.filename + "c", info.date_time)
                    entry.external_attr = info.external_attr
                    archive.writestr(entry, code, compress_type=zipfile.ZIP_STORED)  # stored: read at import
            archive.comment = MARK
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
    return True


def _copy_sources(path: str, target: str) -> None:
    """Write ``path``'s entries without its bytecode to ``target``."""
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(target, "w") as out:
        for info in source.infolist():
            if not info.filename.endswith(".pyc"):
                out.writestr(info, source.read(info))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fw_magics.spark.pyspark_bytecode", description=__doc__.split("\n")[0])
    parser.parse_args(argv)
    zips = worker_zips()
    if not zips:
        print(f"fw-magics: no pyspark.zip in {spark_home()}/python/lib: nothing to compile")
        return 1
    status = 0
    for path in zips:
        started = time.monotonic()
        try:
            added = add_bytecode(path)
        except (OSError, zipfile.BadZipFile) as error:  # read-only install, full disk: Spark works without it
            print(f"fw-magics: no bytecode added to {path} ({error}); Spark's Python processes start slower")
            status = 1
            continue
        what = f"added in {time.monotonic() - started:.1f} s" if added else "up to date"
        print(f"fw-magics: bytecode in {path} {what}")
    return status


if __name__ == "__main__":
    sys.exit(main())
