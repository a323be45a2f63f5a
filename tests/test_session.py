"""The Java check gives one line naming what was found and what to install."""

import os
import stat

import pytest

from fw_magics.spark.session import SparkUnavailableError, check_java, java_version


def fake_java(tmp_path, banner):
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text(f"#!/bin/sh\necho '{banner}' >&2\n")
    java.chmod(java.stat().st_mode | stat.S_IEXEC)
    return str(home)


def test_old_java_is_refused_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("JAVA_HOME", fake_java(tmp_path, 'openjdk version "11.0.21" 2023-10-17'))
    with pytest.raises(SparkUnavailableError) as caught:
        check_java()
    assert str(caught.value).startswith("Spark 4 needs Java 17 or 21; found 'openjdk version \"11.0.21\"")
    assert "\n" not in str(caught.value)


def test_java_8_banner_parses(tmp_path, monkeypatch):
    monkeypatch.setenv("JAVA_HOME", fake_java(tmp_path, 'java version "1.8.0_392"'))
    assert java_version()[0] == 8


def test_a_banner_after_picked_up_java_tool_options_parses(tmp_path, monkeypatch):
    banner = 'Picked up JAVA_TOOL_OPTIONS: -Xss4m\nopenjdk version "17.0.15" 2025-04-15'
    monkeypatch.setenv("JAVA_HOME", fake_java(tmp_path, banner))
    assert java_version() == (17, 'openjdk version "17.0.15" 2025-04-15')
    check_java()


def test_missing_java(tmp_path, monkeypatch):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nowhere"))
    with pytest.raises(SparkUnavailableError, match="found no java"):
        check_java()


def test_this_machine_has_a_usable_java():
    if os.environ.get("JAVA_HOME") is None:
        check_java()


def test_task_attempts_come_from_the_environment(monkeypatch):
    from fw_magics.spark.session import EMBEDDED_MASTER, embedded_master

    monkeypatch.delenv("FW_SPARK_TASK_ATTEMPTS", raising=False)
    assert embedded_master() == EMBEDDED_MASTER == "local[*,4]"
    monkeypatch.setenv("FW_SPARK_TASK_ATTEMPTS", "1")
    assert embedded_master() == "local[*,1]"
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("FW_SPARK_TASK_ATTEMPTS", bad)
        with pytest.raises(SparkUnavailableError, match=f"FW_SPARK_TASK_ATTEMPTS '{bad}'; accepted: an integer >= 1"):
            embedded_master()


def test_the_test_session_does_not_retry_failing_tasks(spark):
    from .conftest import is_connect

    if is_connect(spark):
        assert os.environ["SPARK_REMOTE"] == "local[2]"  # local[N]: one attempt per task
    else:
        assert spark.sparkContext.master == "local[*,1]"
