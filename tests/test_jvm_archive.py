"""The JVM class archive: keyed by Java and Spark's jars, used by an embedded Spark, skipped quietly.

The archive itself is written by ``make``'s deps (``python -m fw_magics.spark.jvm_archive``) before
the suite runs; the last test checks that a fresh embedded Spark maps it.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from fw_magics.spark import jvm_archive, session

JAVA = session.java_binary()
BANNER = session.java_version()[1] if JAVA else None


def _jars(folder, **sizes):
    folder.mkdir(exist_ok=True)
    for name, size in sizes.items():
        (folder / f"{name}.jar").write_bytes(b"x" * size)
        os.utime(folder / f"{name}.jar", ns=(1, 1))
    return str(folder)


def test_the_key_changes_with_the_java_its_version_and_any_jar(tmp_path):
    jars = _jars(tmp_path / "jars", spark_core=10, scala=20)
    key = jvm_archive.archive_key("/usr/bin/java", "openjdk 17", jars)
    assert key == jvm_archive.archive_key("/usr/bin/java", "openjdk 17", jars)
    assert key != jvm_archive.archive_key("/usr/bin/java", "openjdk 21", jars)
    assert key != jvm_archive.archive_key(str(tmp_path / "other-java"), "openjdk 17", jars)
    assert key != jvm_archive.archive_key("/usr/bin/java", "openjdk 17", _jars(tmp_path / "jars", scala=21))
    assert key != jvm_archive.archive_key("/usr/bin/java", "openjdk 17", _jars(tmp_path / "jars", kafka=1))
    moved = _jars(tmp_path / "venv2", spark_core=10, scala=21, kafka=1)  # the same jars in another virtualenv
    assert jvm_archive.archive_key("/usr/bin/java", "openjdk 17", moved) != jvm_archive.archive_key(
        "/usr/bin/java", "openjdk 17", jars)


def test_options_only_for_an_archive_that_exists_and_not_when_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv("FW_JVM_ARCHIVE_DIR", str(tmp_path))
    monkeypatch.delenv("FW_JVM_ARCHIVE", raising=False)
    assert jvm_archive.java_options("/usr/bin/java", "openjdk 17") == ""
    path = jvm_archive.archive_path("/usr/bin/java", "openjdk 17")
    assert os.path.dirname(path) == str(tmp_path)
    open(path, "wb").close()
    assert jvm_archive.java_options("/usr/bin/java", "openjdk 17") == f"-XX:SharedArchiveFile={path} {jvm_archive.QUIET}"
    assert jvm_archive.java_options(None, None) == ""
    monkeypatch.setenv("FW_JVM_ARCHIVE", "off")
    assert jvm_archive.java_options("/usr/bin/java", "openjdk 17") == ""


def test_eviction_drops_archives_of_gone_jars_first_then_the_least_recently_used(tmp_path, monkeypatch):
    """A fresh clone's archive must not push out the one of the checkout in use (each use touches it)."""
    monkeypatch.setenv("FW_JVM_ARCHIVE_DIR", str(tmp_path))
    monkeypatch.delenv("FW_JVM_ARCHIVE", raising=False)
    in_use = jvm_archive.archive_path("/usr/bin/java", "openjdk 17")
    archives = {name: str(tmp_path / f"{jvm_archive.PREFIX}{name}.jsa") for name in ("clone1", "clone2", "gone")}
    for moment, path in enumerate([in_use, *archives.values()]):  # in_use written first: the oldest
        open(path, "wb").close()
        os.utime(path, (1000 + moment, 1000 + moment))
    for name in ("clone1", "clone2"):
        with open(archives[name][:-4] + ".jars", "w") as note:
            note.write(str(tmp_path))  # their jars' folder exists
    with open(archives["gone"][:-4] + ".jars", "w") as note:
        note.write(str(tmp_path / "deleted-clone" / "jars"))
    assert jvm_archive.java_options("/usr/bin/java", "openjdk 17")  # a kernel starts with it: now the newest
    removed = jvm_archive.evict(str(tmp_path), keep=2)
    assert sorted(removed) == sorted([archives["gone"], archives["clone1"]])
    assert os.path.isfile(in_use) and os.path.isfile(archives["clone2"])
    assert not os.path.exists(archives["gone"][:-4] + ".jars")


def test_an_archive_the_jvm_cannot_use_is_skipped_without_a_word(tmp_path):
    broken = tmp_path / "broken.jsa"
    broken.write_bytes(b"not an archive" * 1000)
    ran = subprocess.run([JAVA, f"-XX:SharedArchiveFile={broken}", *jvm_archive.QUIET.split(), "-version"],
                         capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0
    assert "version" in ran.stderr and "archive" not in ran.stderr.lower() and "cds" not in ran.stderr.lower()


@pytest.mark.slow
def test_a_fresh_embedded_spark_maps_the_archive_make_wrote(tmp_path):
    path = jvm_archive.archive_path(JAVA, BANNER)
    assert os.path.isfile(path), f"no archive at {path}: `make deps` writes it (python -m fw_magics.spark.jvm_archive)"
    log = tmp_path / "classes.log"
    code = ("import fw_magics as fw; import sys\n"
            f"spark = fw.get_spark({{'spark.driver.extraJavaOptions': '-Xlog:class+load=info:file={log}'}})\n"
            "print(spark.range(3).count())\n")
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "FW_SPARK_MASTER", "FW_JVM_ARCHIVE")}
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert ran.returncode == 0 and ran.stdout.split() == ["3"], ran.stderr[-2000:]
    loaded = log.read_text().splitlines()
    from_archive = [line for line in loaded if "source: shared objects file (top)" in line]
    assert len(from_archive) > 0.5 * len(loaded), f"{len(from_archive)} of {len(loaded)} classes from the archive"
    assert any("org.apache.spark.SparkContext " in line for line in from_archive)
