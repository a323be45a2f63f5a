"""One Spark session for the whole run (classic, or Spark Connect when SPARK_REMOTE is set)."""

import atexit
import os
import shutil
import tempfile

import pytest

os.environ.setdefault("FW_SPARK_LOG_LEVEL", "FATAL")
# Jobs the tests run (here and in the kernels they start) are indexed in a file of this run,
# never in the user's own job index (fw_magics.recovery.index).
_INDEX = tempfile.mkdtemp(prefix="fw-test-index-")
atexit.register(shutil.rmtree, _INDEX, True)
os.environ["FW_JOB_INDEX"] = os.path.join(_INDEX, "jobs.json")
# One attempt per Spark task (kernels and subprocesses the tests start inherit it): the tests'
# failing functions fail on every attempt, and the default four attempts cost four workers each.
os.environ.setdefault("FW_SPARK_TASK_ATTEMPTS", "1")
# Spark's Python workers unpickle test classes by reference: let them import `tests`.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [_ROOT, os.environ.get("PYTHONPATH")]))


def _own_connect_port() -> None:
    """Under pytest-xdist with ``SPARK_REMOTE=local[...]``, each worker's in-process Spark Connect
    server listens on a free port of its own instead of the fixed 15002 of every local server (two
    workers cannot share it): the worker's JVM gets the port as a ``--conf``, and PySpark's client,
    which looks for a local server on 15002 only (unless ``SPARK_TESTING``, which also changes
    Spark's own behaviour), is pointed at it. Nothing else about the session changes."""
    if not os.environ.get("PYTEST_XDIST_WORKER") or not os.environ.get("SPARK_REMOTE", "").startswith("local"):
        return
    import socket

    from pyspark.sql.connect.client.core import DefaultChannelBuilder

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = os.environ.get("PYSPARK_SUBMIT_ARGS", "pyspark-shell")
    os.environ["PYSPARK_SUBMIT_ARGS"] = f"--conf spark.connect.grpc.binding.port={port} {args}"
    DefaultChannelBuilder.default_port = staticmethod(lambda: port)


_own_connect_port()


@pytest.fixture(scope="session")
def spark():
    import fw_magics as fw

    session = fw.get_spark({"spark.sql.shuffle.partitions": "4", "spark.ui.enabled": "false"})
    yield session


def is_connect(session) -> bool:
    return type(session).__module__.startswith("pyspark.sql.connect")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``make test`` runs on two xdist workers: files as units, the browser tests on one worker,
    the tutorials split, the longest first (tests/scheduling.py)."""
    if config.getvalue("dist") in ("load", "loadscope"):
        from tests.scheduling import SuiteScheduling

        return SuiteScheduling(config, log)
    return None


@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL server (Debian's) on loopback for the run, stopped by its PID at the end."""
    from fw_magics.teaching.scratch_postgres import ScratchPostgres, binaries

    if binaries() is None:
        why = "no PostgreSQL server: apt-get install postgresql (as root, make deps installs it)"
        pytest.fail(why) if os.environ.get("CI") else pytest.skip(why)
    server = ScratchPostgres(logical=True).start()  # wal_level = logical: from_table(..., changes=True) too
    yield server
    server.stop()


def pytest_collection_modifyitems(config, items):
    """Mark ``spark`` every case that uses the run's Spark session (the ``spark`` fixture, itself or through
    another fixture), and ``connect`` the core cases that tests/connect_cases.py names (make test-extended runs them under
    Spark Connect); in that run, an entry of the list that names no core case fails the run."""
    from .connect_cases import CONNECT_CASES, connect_case

    used = set()
    for item in items:
        if "spark" in item.fixturenames:  # make test runs these in one process, the others beside it
            item.add_marker(pytest.mark.spark)
        entry = connect_case(item.nodeid) if item.get_closest_marker("core") else None
        if entry is not None:
            item.add_marker(pytest.mark.connect)
            used.add(entry)
    whole_run = not [a for a in config.args if os.path.abspath(a) != os.path.abspath(str(config.rootpath))]
    if whole_run and "connect" in (config.getoption("markexpr") or ""):
        stale = sorted(set(CONNECT_CASES) - used)
        if stale:
            raise pytest.UsageError(f"tests/connect_cases.py names no core case: {stale}")


def _cpu_times() -> tuple[float, float] | None:
    """(busy, all) CPU seconds of the whole machine since boot (/proc/stat), None where there is none."""
    try:
        with open("/proc/stat") as stat:
            fields = [float(x) for x in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)  # idle and iowait
    return (sum(fields) - idle) / ticks, sum(fields) / ticks


def pytest_sessionstart(session):
    session.config._fw_cpu_at_start = _cpu_times()


def pytest_terminal_summary(terminalreporter, config):
    """How busy the machine's cores were over the run: a CI part whose cores were mostly idle waits on
    something (a sleep, a timeout, a slow start) and would gain from running its cases side by side; one
    near 100% would not (issue 53)."""
    start, end = getattr(config, "_fw_cpu_at_start", None), _cpu_times()
    if start is None or end is None or end[1] <= start[1]:
        return
    busy = (end[0] - start[0]) / (end[1] - start[1])
    terminalreporter.write_line(f"machine CPU busy over this run: {busy:.0%} of {os.cpu_count()} cores "
                                f"(/proc/stat; the other processes of the machine included)")
    xml = getattr(config.option, "xmlpath", None)
    if xml:  # beside the run's JUnit file, for .ci/run's table (scripts/ci_report.py)
        with open(os.path.splitext(xml)[0] + ".cpu", "w") as out:
            out.write(f"{busy:.3f}\n")
