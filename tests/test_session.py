"""The Java check gives one line naming what was found and what to install."""

import json
import os
import stat
import time

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
    from tests.conftest import is_connect

    if is_connect(spark):
        assert os.environ["SPARK_REMOTE"] == "local[2]"  # local[N]: one attempt per task
    else:
        assert spark.sparkContext.master == "local[*,1]"


@pytest.mark.spark
def test_the_embedded_spark_listens_on_loopback_only(spark):
    """Issue 47, item 5: the driver's RPC and block manager listened on the host's external address (the UI,
    off in the test session, on every interface: tests/test_shared_spark.py reads a JVM with its UI)."""
    from tests.listeners import java_children, listening, off_loopback

    jvms = java_children()
    assert len(jvms) == 1, jvms
    assert listening(jvms[0]), "no listener found: /proc not read right"
    assert off_loopback(jvms[0]) == []


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


# -- the shared warm Spark's settings and leases (fw_magics.spark.shared; the server itself: test_shared_spark.py)

@pytest.mark.parametrize("value, want", [("", False), ("0", False), ("no", False), ("1", True), ("TRUE", True),
                                         ("yes", True)])
def test_the_shared_spark_is_asked_for_by_the_environment_or_the_argument(monkeypatch, value, want):
    from fw_magics.spark import shared

    monkeypatch.setenv(shared.ENV, value)
    assert shared.wanted(None) is want
    assert shared.wanted(True) is True and shared.wanted(False) is False


@pytest.mark.parametrize("variable, value, said", [
    ("FW_SPARK_SHARED", "maybe", "FW_SPARK_SHARED='maybe'; accepted: 1, true or yes (shared), 0, false or no"),
    ("FW_SPARK_SHARED_IDLE", "-5", "FW_SPARK_SHARED_IDLE='-5'; accepted: a number of seconds > 0"),
    ("FW_SPARK_SHARED_IDLE", "soon", "FW_SPARK_SHARED_IDLE='soon'; accepted: a number of seconds > 0"),
])
def test_a_bad_shared_spark_setting_is_one_line(monkeypatch, variable, value, said):
    from fw_magics.spark import shared

    monkeypatch.setenv(variable, value)
    with pytest.raises(SparkUnavailableError) as raised:
        shared.wanted(None) if variable == shared.ENV else shared.idle_seconds()
    assert str(raised.value) == said


def test_the_shared_folder_is_the_users_only(tmp_path, monkeypatch):
    from fw_magics.spark import shared

    given = tmp_path / "mine"
    given.mkdir(mode=0o755)
    monkeypatch.setenv(shared.DIR_ENV, str(given))
    assert shared.folder() == str(given) and stat.S_IMODE(os.stat(given).st_mode) == 0o700
    if os.getuid() == 0:  # as root a folder can be given to another user: refused, not used
        os.chown(given, 65534, 65534)
        with pytest.raises(SparkUnavailableError, match="belongs to another user; set FW_SPARK_SHARED_DIR"):
            shared.folder()


def test_a_lease_lasts_while_its_process_lives_and_not_for_a_process_given_its_pid_later(tmp_path):
    import subprocess
    import sys

    from fw_magics.spark import shared

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        shared.take_lease(str(tmp_path), child.pid)
        shared.take_lease(str(tmp_path))  # this process
        assert sorted(shared.live_leases(str(tmp_path))) == sorted([child.pid, os.getpid()])
        shared.take_lease(str(tmp_path), child.pid, session_id="its-session")
        (tmp_path / shared.LEASES / str(os.getpid())).write_text('{"started": "1", "session": "mine"}')
        ended = []  # as if this pid had been given to this process after the leased one ended
        assert shared.live_leases(str(tmp_path), ended) == [child.pid] and ended == ["mine"]
        assert not (tmp_path / shared.LEASES / str(os.getpid())).exists()
    finally:
        child.kill()
        child.wait()
    ended = []
    assert shared.live_leases(str(tmp_path), ended) == [] and os.listdir(tmp_path / shared.LEASES) == []
    assert ended == ["its-session"]


def test_a_watchdog_whose_folder_is_removed_ends_without_making_it_again(tmp_path):
    import threading

    from fw_magics.spark import shared

    folder = tmp_path / "shared"
    folder.mkdir()
    # a server recorded as running (this process stands for it): the watchdog keeps watching
    (folder / shared.DISCOVERY).write_text(json.dumps({"host": "localhost", "port": 1, "token": "t",
                                                       "pid": os.getpid(), "spark_version": "4"}))
    watching = threading.Thread(target=shared.watch, args=(str(folder), 60.0, 0.1))
    watching.start()
    time.sleep(1.0)
    assert watching.is_alive()
    for entry in folder.iterdir():
        entry.unlink()
    folder.rmdir()
    watching.join(timeout=10)
    assert not watching.is_alive() and not folder.exists()
    shared.watch(str(folder), 60.0, 0.1)  # a folder that is not there: returns at once
    assert not folder.exists()


def test_the_server_is_kept_as_long_as_the_longest_idle_a_live_kernel_asked_for(tmp_path):
    from fw_magics.spark import shared

    directory = str(tmp_path)
    assert shared.longest_idle(directory, 30.0) == 30.0  # no lease yet: the watchdog's own
    shared.take_lease(directory, idle=600.0)  # this kernel asked for 10 minutes
    assert shared.longest_idle(directory, 30.0) == 600.0
    assert shared.longest_idle(directory, 1800.0) == 1800.0  # never shorter than the watchdog's
    (tmp_path / shared.LEASES / "1").write_text('{"started": null, "session": null}')  # an older fw-magics' lease
    (tmp_path / shared.LEASES / "2").write_text('{"idle": "forever"}')  # not a number: ignored
    assert shared.longest_idle(directory, 30.0) == 600.0
