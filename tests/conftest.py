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


@pytest.fixture(scope="session")
def spark():
    import fw_magics as fw

    session = fw.get_spark({"spark.sql.shuffle.partitions": "4", "spark.ui.enabled": "false"})
    yield session


def is_connect(session) -> bool:
    return type(session).__module__.startswith("pyspark.sql.connect")
