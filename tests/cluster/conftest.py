"""A real standalone cluster (a master, two workers) and a Spark Connect server of its own, for the run.

Both are started once per pytest session by ``scripts/cluster.py`` and always stopped by PID
(``finally`` and an ``atexit`` guard, so Ctrl-C or a failing test leaves nothing running).
The workers run in their own mount namespace with a tmpfs over ``PRIVATE``: a folder the
driver sees but the executors see as a different, empty one, as node-local disks on other
machines would be.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import shlex
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location("fw_cluster_script", os.path.join(ROOT, "scripts", "cluster.py"))
cluster_script = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cluster_script)


def _can_unshare() -> bool:
    if not shutil.which("unshare"):
        return False
    return subprocess.run(["unshare", "--mount", "true"], capture_output=True).returncode == 0


#: While developing: ``FW_TEST_CLUSTER=DIR`` reuses (or starts) the cluster and server whose
#: state is in DIR (``scripts/cluster.py start --state DIR --private DIR/driver-only``) and
#: leaves them running; stop them with ``scripts/cluster.py stop --state DIR``.
REUSE = os.environ.get("FW_TEST_CLUSTER")


@pytest.fixture(scope="session")
def cluster(tmp_path_factory):
    state = REUSE or str(tmp_path_factory.mktemp("standalone"))
    private = os.path.join(state, "driver-only") if _can_unshare() else None
    if not REUSE:
        atexit.register(cluster_script.stop, state)
    try:
        info = cluster_script.start(state, workers=2, private=private)
        yield info
    finally:
        if not REUSE:
            cluster_script.stop(state)


@pytest.fixture(scope="session")
def connect_server(cluster, tmp_path_factory):
    """A Spark Connect server in its own process, its executors on the standalone cluster."""
    state = REUSE or str(tmp_path_factory.mktemp("connect"))
    if not REUSE:
        atexit.register(cluster_script.connect_stop, state)
    try:
        info = cluster_script.connect_start(state, master=cluster["master"])
        yield dict(info, state=state)
    finally:
        if not REUSE:
            cluster_script.connect_stop(state)


def backend_env(cluster=None, connect=None) -> dict[str, str]:
    """The environment of a test subprocess driving the cluster (classic) or the Connect server."""
    env = dict(os.environ, PYTHONPATH=ROOT, FW_SPARK_LOG_LEVEL="FATAL")
    env.pop("SPARK_REMOTE", None)
    env.pop("FW_SPARK_MASTER", None)
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    if cluster is not None and cluster.get("private"):
        env["FW_TEST_PRIVATE_DIR"] = cluster["private"]
    if cluster is not None:  # each application (a classic driver, the Connect server) gets this many executors
        conf = cluster_script.APP_CONF
        env["FW_TEST_EXECUTORS"] = str(int(conf["spark.cores.max"]) // int(conf["spark.executor.cores"]))
    if connect is not None:
        env["SPARK_REMOTE"] = connect["url"]
    elif cluster is not None:
        env["FW_SPARK_MASTER"] = cluster["master"]
        conf = " ".join(f"--conf {shlex.quote(f'{k}={v}')}" for k, v in cluster_script.app_conf().items())
        env["PYSPARK_SUBMIT_ARGS"] = f"{conf} pyspark-shell"
    return env


def run_pytest(env: dict[str, str], *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-x", "--durations=5", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout,
    )
