"""The warm Spark shared by one user's kernels (``FW_SPARK_SHARED=1``, issue 34), with a real server.

One server start for the whole story, as a user meets it: a kernel gets its first result on a
server it starts; Kernel > Restart finds the same server warm, with a session of its own; a client
without the token, or with a wrong one, is refused; the folder and the token's file are the user's
only; once no kernel has lived for the idle timeout the watchdog stops the server and itself, and
nothing is left running. The fixture stops whatever is left by its PID.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time

import pytest

from fw_magics.spark import shared
from tests.kernels import Kernel, process_running
from tests.listeners import listening, off_loopback

pytestmark = [pytest.mark.slow, pytest.mark.extended]  # a server JVM and two kernels

CELL = """
import json, os
import fw_magics as fw
spark = fw.get_spark()
rows = fw.from_records([(3, 1.5), (1, 2.5), (2, 0.5)], "id long, v double", partitions=1)
got = [tuple(r) for r in rows.full_window_partition().sort_partition("id").collect()]
print(json.dumps({"got": got, "kernel": os.getpid(), "connect": type(spark).__module__,
                  "server": fw.spark.shared.status()["server_pid"], "views": spark.catalog.tableExists("mine")}))
"""


def _watchdogs(folder) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    words = f.read().split(b"\0")
            except OSError:
                continue
            if b"fw_magics.spark.shared" in words and str(folder).encode() in words:
                found.append(int(entry))
    return [pid for pid in found if process_running(pid)]


@pytest.fixture
def folder(tmp_path):
    path = tmp_path / "shared"
    yield path
    for pid in _watchdogs(path):
        os.kill(pid, signal.SIGKILL)
    discovery = path / shared.DISCOVERY
    if discovery.exists():
        pid = json.loads(discovery.read_text())["pid"]
        if process_running(pid):
            os.kill(pid, signal.SIGKILL)


def _commits(folder) -> int:
    return len(os.listdir(folder)) if folder.exists() else 0


def _grows(folder, within: float) -> bool:
    """Whether ``folder`` gains a file within ``within`` seconds (a live query's next commit)."""
    deadline, seen = time.monotonic() + within, _commits(folder)
    while time.monotonic() < deadline:
        if _commits(folder) > seen:
            return True
        time.sleep(0.25)
    return False


def _log(folder) -> str:
    path = folder / "watchdog.log"
    return path.read_text() if path.exists() else ""


def _refused(port: int, token: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "SPARK_CONNECT_AUTHENTICATE_TOKEN"}
    if token is not None:
        env["SPARK_CONNECT_AUTHENTICATE_TOKEN"] = token
    code = ("from pyspark.sql import SparkSession\n"
            f"SparkSession.builder.remote('sc://localhost:{port}').getOrCreate().range(1).count()\n")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0, "a client without the server's token was let in"
    return done.stderr


def _ui_properties(pid: int) -> dict:
    """The Spark properties the UI of JVM ``pid`` reports (its REST API), found among its listeners."""
    import http.client
    import urllib.request

    for _, port in listening(pid):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/applications", timeout=60) as answer:
                app = json.loads(answer.read())[0]["id"]
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/applications/{app}/environment",
                                        timeout=60) as answer:
                return dict(json.loads(answer.read())["sparkProperties"])
        except (OSError, http.client.HTTPException, ValueError, KeyError, IndexError):
            continue  # not the UI (gRPC, the driver's RPC, the block manager)
    raise AssertionError(f"no Spark UI among the listeners of {pid}: {listening(pid)}")


def test_a_kernel_restart_finds_the_shared_spark_warm_and_the_idle_server_stops_itself(tmp_path, folder):
    env = {shared.ENV: "1", shared.DIR_ENV: str(folder), shared.IDLE_ENV: "8"}
    kernel = Kernel(tmp_path, env)
    try:
        first = json.loads(kernel.ok(CELL, timeout=240).stdout.strip().splitlines()[-1])
        assert first["got"] == [[1, 2.5], [2, 0.5], [3, 1.5]]
        assert first["connect"].startswith("pyspark.sql.connect") and first["server"] is not None
        kernel.ok("spark.range(3).createOrReplaceTempView('mine')")

        # the server is the user's only: loopback, a token in a 0600 file inside a 0700 folder
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
        recorded = json.loads((folder / shared.DISCOVERY).read_text())
        assert stat.S_IMODE(os.stat(folder / shared.DISCOVERY).st_mode) == 0o600
        assert "UNAUTHENTICATED" in _refused(recorded["port"], None)
        began = time.monotonic()
        assert "UNAUTHENTICATED" in _refused(recorded["port"], "not-the-token")
        assert time.monotonic() - began < 30  # refused at once (at sc://127.0.0.1 PySpark's TLS retries: docs)
        # issue 47, item 5: no listener of the server's JVM off loopback (its UI listened on every interface,
        # its driver and block manager on the host's address), and the UI's kill links are off
        assert off_loopback(recorded["pid"]) == [], listening(recorded["pid"])
        ui = _ui_properties(recorded["pid"])
        assert ui["spark.ui.killEnabled"] == "false" and ui["spark.driver.bindAddress"] == "127.0.0.1"

        # a streaming query the kernel leaves running: on a server that outlives kernels it must end with it
        commits = tmp_path / "checkpoint" / "commits"
        kernel.ok(f"""
query = (spark.readStream.format("rate").option("rowsPerSecond", 5).load().writeStream.format("parquet")
         .option("path", {str(tmp_path / 'out')!r}).option("checkpointLocation", {str(tmp_path / 'checkpoint')!r})
         .trigger(processingTime="500 milliseconds").start())
""")
        assert _grows(commits, within=60), "the query never committed a micro-batch"

        kernel.manager.restart_kernel(now=True)  # Kernel > Restart
        kernel.client.wait_for_ready(timeout=120)
        deadline = time.monotonic() + 60  # the watchdog looks every 2 s (a quarter of the idle timeout)
        while "a kernel ended" not in _log(folder) and time.monotonic() < deadline:
            time.sleep(0.25)
        assert not _grows(commits, within=5), "the restarted kernel's streaming query ran on headless"
        assert "a kernel ended: its session released, 1 streaming queries stopped" in _log(folder), _log(folder)
        again = json.loads(kernel.ok(CELL, timeout=240).stdout.strip().splitlines()[-1])
        assert again["kernel"] != first["kernel"] and again["server"] == first["server"]  # the same, warm
        assert again["got"] == first["got"] and again["views"] is False  # a session of its own
        status = subprocess.run([sys.executable, "-m", "fw_magics.spark.shared", "--status"], capture_output=True,
                                text=True, env={**os.environ, **env}, timeout=60)
        said = json.loads(status.stdout)
        assert said["server_pid"] == first["server"] and said["kernels"] == [again["kernel"]]
    finally:
        kernel.stop()

    # no kernel left: after the idle timeout (8 s) the watchdog stops the server, then itself
    deadline = time.monotonic() + 90
    while (process_running(first["server"]) or _watchdogs(folder)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not process_running(first["server"]), "the shared server outlived its idle timeout"
    assert not _watchdogs(folder) and not (folder / shared.DISCOVERY).exists()
    assert "no kernel for 8 s: stopping the shared Spark" in _log(folder), _log(folder)
