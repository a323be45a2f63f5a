"""Bytecode in the zips Spark's Python processes import: added after the sources, used, checked.

``make``'s deps compiles the real pyspark.zip (``python -m fw_magics.spark.pyspark_bytecode``) before
the suite runs; the last test checks that Spark's Python workers import pyspark's bytecode.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile

from fw_magics.spark import pyspark_bytecode as pb

SOURCES = {"pkg/__init__.py": b"", "pkg/mod.py": b"VALUE = 42\ndef where():\n    pass\n", "pkg/data.txt": b"not python",
           "pkg/broken.py": b"def (:\n"}


def _zip(path, entries, comment=b""):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
        archive.comment = comment
    return str(path)


def _import(path, module="pkg.mod"):
    """(module.__file__, module.VALUE) as a fresh Python with the zip first on its path sees them;
    its code must be named as a traceback shows it, by the path of its source in the zip."""
    code = f"import {module} as m; print(m.__file__); print(m.VALUE); print(m.where.__code__.co_filename)"
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": path}, check=True)
    where, value, traced = ran.stdout.split()
    assert traced == os.path.join(path, *module.split(".")) + ".py"
    return where, int(value)


def test_bytecode_is_appended_after_the_sources_and_a_fresh_python_imports_it(tmp_path):
    path = _zip(tmp_path / "lib.zip", SOURCES)
    with zipfile.ZipFile(path) as archive:
        before = {i.filename: (i.header_offset, archive.read(i)) for i in archive.infolist()}
    assert _import(path) == (os.path.join(path, "pkg", "mod.py"), 42)

    assert pb.add_bytecode(path) is True
    with zipfile.ZipFile(path) as archive:
        after = {i.filename: (i.header_offset, archive.read(i)) for i in archive.infolist()}
        assert archive.comment == pb.MARK
    assert {n: after[n] for n in before} == before  # every original entry where it was, byte for byte
    assert sorted(set(after) - set(before)) == ["pkg/__init__.pyc", "pkg/mod.pyc"]  # broken.py: source only
    assert _import(path) == (os.path.join(path, "pkg", "mod.pyc"), 42)

    stamp = os.stat(path).st_mtime_ns
    assert pb.add_bytecode(path) is False  # up to date: untouched
    assert os.stat(path).st_mtime_ns == stamp


def test_a_source_that_differs_from_its_bytecode_wins(tmp_path):
    compiled = _zip(tmp_path / "old.zip", SOURCES)
    pb.add_bytecode(compiled)
    with zipfile.ZipFile(compiled) as archive:
        entries = {i.filename: archive.read(i) for i in archive.infolist()}
    entries["pkg/mod.py"] = SOURCES["pkg/mod.py"].replace(b"42", b"43")  # the source changed, its bytecode did not
    changed = _zip(tmp_path / "changed.zip", entries, pb.MARK)
    assert _import(changed) == (os.path.join(changed, "pkg", "mod.py"), 43)  # compiled from the source


def test_bytecode_of_another_python_or_an_older_fw_magics_is_replaced(tmp_path):
    foreign = b"\x00\x00\r\n" + bytes(12) + b"garbage"
    path = _zip(tmp_path / "lib.zip", {**SOURCES, "pkg/mod.pyc": foreign},
                comment=b"fw-magics bytecode for Python magic " + pb.importlib.util.MAGIC_NUMBER.hex().encode())
    assert not pb.has_bytecode(path)
    assert pb.add_bytecode(path) is True
    with zipfile.ZipFile(path) as archive:
        assert archive.namelist().count("pkg/mod.pyc") == 1
        assert archive.comment == pb.MARK
        assert archive.read("pkg/mod.pyc").startswith(pb.importlib.util.MAGIC_NUMBER)
    assert _import(path) == (os.path.join(path, "pkg", "mod.pyc"), 42)


def test_the_zips_are_the_ones_spark_puts_on_its_python_path(tmp_path):
    lib = tmp_path / "python" / "lib"
    lib.mkdir(parents=True)
    for name in ("pyspark.zip", "py4j-0.10.9.9-src.zip", "other.zip"):
        _zip(lib / name, {"x.py": b""})
    assert pb.worker_zips(str(tmp_path)) == [str(lib / "py4j-0.10.9.9-src.zip"), str(lib / "pyspark.zip")]
    assert pb.worker_zips(str(tmp_path / "nowhere")) == []


def test_spark_python_workers_import_pyspark_from_its_bytecode(spark):
    """Needs ``make deps`` (or ``python -m fw_magics.spark.pyspark_bytecode``) to have run, as both README commands do."""
    assert all(pb.has_bytecode(z) for z in pb.worker_zips()), "run: python -m fw_magics.spark.pyspark_bytecode"

    def where(batches):
        import pandas as pd
        import pyspark

        for _ in batches:
            pass
        yield pd.DataFrame({"file": [pyspark.__file__]})

    files = {row.file for row in spark.range(2).mapInPandas(where, "file string").collect()}
    assert files and all(f.endswith(os.path.join("pyspark.zip", "pyspark", "__init__.pyc")) for f in files), files
