"""The Java check gives one line naming what was found and what to install."""

import json
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


@pytest.mark.parametrize("local, inherited, aligned", [
    ("1", {"spark.driver.memory": "4g"}, True),  # get_spark()'s in-process server: no SQL settings inherited
    (None, {"spark.driver.memory": "4g"}, False),  # a remote server: its environment is not ours to see
    ("1", {"spark.sql.shuffle.partitions": "8"}, False),  # re-set by pyspark's foreachBatch worker at each start
    ("1", "not json", False),
])
def test_a_connect_session_is_aligned_only_on_an_in_process_server_that_inherits_no_partitions(
        monkeypatch, local, inherited, aligned):
    from fw_magics.spark import flavour

    class FakeConnectSession:  # only its module is looked at
        pass

    FakeConnectSession.__module__ = "pyspark.sql.connect.session"
    if local is None:
        monkeypatch.delenv("SPARK_LOCAL_REMOTE", raising=False)
    else:
        monkeypatch.setenv("SPARK_LOCAL_REMOTE", local)
    monkeypatch.setenv("PYSPARK_REMOTE_INIT_CONF_LEN", "1")
    monkeypatch.setenv("PYSPARK_REMOTE_INIT_CONF_0", inherited if isinstance(inherited, str) else json.dumps(inherited))
    chosen = flavour.flavour_of(FakeConnectSession())
    assert chosen.connect and chosen.sets_state_partitions is aligned
