"""Finding or starting the Spark session fw-magics runs on.

Order of preference (``get_spark``):

1. the active SparkSession, whatever started it (classic or Spark Connect);
2. a Spark Connect session when ``SPARK_REMOTE`` is set (``sc://host:15002``, or
   ``local[2]`` for an in-process Connect server);
3. a classic session on the master named by ``FW_SPARK_MASTER``;
4. with ``FW_SPARK_SHARED=1`` (or ``shared=True``), a Spark Connect session on this user's warm
   Spark, a loopback server shared by their kernels (``shared``);
5. an embedded ``local[*]`` session inside this process.
"""

from __future__ import annotations

import json
import os
import sys

from ..errors import SparkUnavailableError
from . import jvm_archive, jvm_output
from .java import java_binary, java_version

#: Embedded sessions allow each task 4 attempts (``local[N,F]`` syntax), so a task
#: that fails once is retried as it would be on a cluster. ``FW_SPARK_TASK_ATTEMPTS``
#: changes the number (the test suite sets 1: a function that fails on purpose fails
#: the same way on every attempt, and four attempts cost four Python workers).
EMBEDDED_MASTER = "local[*,4]"


def embedded_master() -> str:
    """``local[*,F]`` with F from ``FW_SPARK_TASK_ATTEMPTS`` (an integer >= 1), else 4."""
    value = os.environ.get("FW_SPARK_TASK_ATTEMPTS", "").strip()
    if not value:
        return EMBEDDED_MASTER
    if not value.isdigit() or int(value) < 1:
        raise SparkUnavailableError(f"FW_SPARK_TASK_ATTEMPTS {value!r}; accepted: an integer >= 1")
    return f"local[*,{int(value)}]"

_EMBEDDED_CONF = {
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.pythonUDF.arrow.enabled": "true",
    "spark.driver.memory": "4g",
    "spark.sql.shuffle.partitions": "8",
    # Arrow batches to Python workers: Spark's 10,000 rows make narrow rows cost a round
    # trip per 80 KB; 100,000 rows, still capped at 8 MiB, halves the cost of a full window
    # over one column, and wide rows stay bounded by bytes.
    "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
    "spark.sql.execution.arrow.maxBytesPerBatch": "8m",
    # Every listener of a JVM started on this machine on loopback (issue 47, item 5): the driver's RPC and
    # its block manager (where they bind and the address they give), and no kill links in the UI, which
    # has no address setting of its own: it listens where SPARK_LOCAL_IP says (prepare_local_jvm). A
    # cluster's driver needs the opposite (docs/cluster.md).
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.ui.killEnabled": "false",
    # How long a Python process Spark starts (a streaming source's runner, a worker) has to connect back, and
    # the JVM waits for it: Spark's 15 s was missed on a loaded 2-core machine ("Python worker failed to
    # connect back", the query failed and its restart strategy ran it again); a slow start is not a failure.
    "spark.python.authenticate.socketTimeout": "120s",
}
#: Where the Spark UI of a JVM started here listens, unless the user's SPARK_LOCAL_IP says otherwise.
LOOPBACK = "127.0.0.1"


_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
SQL_PREFIX = "spark.sql."


def check_java() -> None:
    """Raise SparkUnavailableError with one line unless Java 17 or newer is present."""
    found = java_version()
    if found is None:
        raise SparkUnavailableError(
            "Spark 4 needs Java 17 or 21; found no java (set JAVA_HOME or install "
            "openjdk-17-jre-headless, e.g. `apt-get install openjdk-17-jre-headless`)"
        )
    major, banner = found
    if major < 17:
        raise SparkUnavailableError(
            f"Spark 4 needs Java 17 or 21; found {banner!r} (install openjdk-17-jre-headless "
            "and point JAVA_HOME at it)"
        )


def _local_server_settings(conf: dict[str, str] | None) -> dict[str, str]:
    """For a Connect server on this machine (in-process or shared): the JVM prepared, its JVM settings
    given through the variables PySpark reads when it starts a server (unless the user set them);
    returns the SQL settings, for the session's builder."""
    prepare_local_jvm()
    jvm, sql = split_settings(embedded_conf(conf))
    jvm.setdefault("spark.connect.grpc.binding.address", LOOPBACK)  # Spark's default: every interface
    if "PYSPARK_REMOTE_INIT_CONF_LEN" not in os.environ:
        os.environ["PYSPARK_REMOTE_INIT_CONF_LEN"] = "1"
        os.environ["PYSPARK_REMOTE_INIT_CONF_0"] = json.dumps(jvm)
    return sql


def get_spark(conf: dict[str, str] | None = None, shared: bool | None = None):
    """Return the SparkSession fw-magics should use, starting one if needed.

    ``conf`` adds settings to a session this function starts; it is ignored when a
    session is already active. ``shared=True`` (or ``FW_SPARK_SHARED=1``) connects to this
    user's warm Spark shared by their kernels, started on first use (``fw_magics.spark.shared``).
    """
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    remote = os.environ.get("SPARK_REMOTE")
    builder = SparkSession.builder.appName("fw-magics")
    if remote:
        if not remote.startswith("local"):
            return builder.remote(remote).getOrCreate()
        # An in-process Connect server: its JVM starts with these settings. The JVM's own
        # (static) ones go through the variable PySpark reads at the server's start; the SQL
        # ones through the builder, which sets them on the JVM and on this session only: every
        # process the server starts inherits the variable, and pyspark's foreachBatch worker
        # sets its spark.sql.* settings again on this session while a query starts, so a
        # streaming query would get the variable's spark.sql.shuffle.partitions, not the one
        # start(parallelism=N) set (fw_magics.spark.flavour: InProcessConnect).
        sql = _local_server_settings(conf)
        for key, value in sql.items():
            builder = builder.config(key, value)
        with jvm_output.filtered_stderr():
            return builder.remote(remote).getOrCreate()
    master = os.environ.get("FW_SPARK_MASTER")
    if master:
        # The executors' Python workers: this interpreter unless told otherwise (the cluster's
        # nodes need the same Python environment at the same path; see docs/cluster.md).
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = builder.master(master)
        for key, value in (conf or {}).items():
            builder = builder.config(key, value)
        return builder.getOrCreate()
    from . import shared as shared_server

    if shared_server.wanted(shared):
        return shared_server.session(embedded_master(), _local_server_settings(conf))
    prepare_local_jvm()
    builder = builder.master(embedded_master())
    for key, value in embedded_conf(conf).items():
        builder = builder.config(key, value)
    with jvm_output.filtered_stderr():
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("FW_SPARK_LOG_LEVEL", "FATAL"))
    return spark


def embedded_conf(conf: dict[str, str] | None = None) -> dict[str, str]:
    """The settings of a JVM started in this process: ours, the caller's, and the shipped
    log4j2 configuration and the class archive (``jvm_archive``), if there is one, in front of
    any Java options the caller gives."""
    merged = {**_EMBEDDED_CONF, **(conf or {})}
    java = java_binary()
    found = java_version(java) if java else None
    archive = jvm_archive.java_options(java, found[1] if found else None)
    given = " ".join(filter(None, (archive, merged.get(_JAVA_OPTIONS))))
    merged[_JAVA_OPTIONS] = jvm_output.java_options(given or None)
    return merged


def split_settings(settings: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(the JVM's settings, the ``spark.sql.*`` ones): a Connect server's JVM starts with the first,
    each client's session gets the second."""
    sql = {k: v for k, v in settings.items() if k.startswith(SQL_PREFIX)}
    return {k: v for k, v in settings.items() if k not in sql}, sql


#: This process's environment when it started a JVM (``prepare_local_jvm``), None before: the JVM, and the
#: Python workers it starts, keep that environment (a variable set later is not theirs).
_ENVIRONMENT_AT_JVM_START: dict[str, str] | None = None


def environment_at_jvm_start() -> dict[str, str] | None:
    """The environment Spark's Python workers see when this process started their JVM; None when it did not."""
    return _ENVIRONMENT_AT_JVM_START


def prepare_local_jvm() -> None:
    """Java check and worker interpreter for a JVM started inside this process."""
    global _ENVIRONMENT_AT_JVM_START
    check_java()
    # Spark's Python workers must be this interpreter, or they start a Python without pyarrow.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # The Spark UI binds to SPARK_LOCAL_IP, else to every interface (Spark's WebUI): loopback, as the rest.
    os.environ.setdefault("SPARK_LOCAL_IP", LOOPBACK)
    if _ENVIRONMENT_AT_JVM_START is None:
        _ENVIRONMENT_AT_JVM_START = dict(os.environ)
