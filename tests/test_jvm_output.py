"""The embedded JVM's stderr filter and log configuration (issue 17, item 4). No Spark."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fw_magics.spark import jvm_archive, jvm_output, session

DAEMON_RESET = """Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/pyspark/python/lib/pyspark.zip/pyspark/daemon.py", line 264, in manager
  File "/venv/lib/python3.11/site-packages/pyspark/python/lib/pyspark.zip/pyspark/daemon.py", line 95, in worker
BrokenPipeError: [Errno 32] Broken pipe
"""
DAEMON_FLUSH = """PySpark daemon failed to flush the output to the worker process:
Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/pyspark/daemon.py", line 93, in worker
    outfile.flush()
ConnectionResetError: [Errno 104] Connection reset by peer
"""
USERS = """Traceback (most recent call last):
  File "/home/ada/notebook_helpers.py", line 3, in top3
    raise ValueError("no orders")
ValueError: no orders
"""
DAEMON_OTHER = DAEMON_RESET.replace("BrokenPipeError: [Errno 32] Broken pipe", "MemoryError")
NOTE = "WARNING: Using incubator modules: jdk.incubator.vector\n"
CHATTER = ("Starting Streaming TransformWithStateInPandas Python worker.\n\n"
           "Streaming TransformWithStateInPandas Python worker finish init stage of Python runner. Received UDF from "
           "JVM: <bound method f>, received return type of UDF: StructType([]).\n\n"
           "Streaming TransformWithStateInPandas Python worker Completed execution of UDF: <bound method f>.\n\n")


def filtered(chunks) -> str:
    read_fd, write_fd = os.pipe()
    out_read, out_write = os.pipe()
    sink = jvm_output._Filter(read_fd, out_write)
    for chunk in chunks:
        sink.feed(chunk)
    os.close(write_fd)
    sink.run()  # reads EOF at once, flushes what is held, closes read_fd
    os.close(out_write)
    data = b""
    while block := os.read(out_read, 65536):
        data += block
    os.close(out_read)
    return data.decode()


def test_the_jvm_note_and_the_daemons_hang_up_tracebacks_go_the_rest_stays():
    text = NOTE + "a worker's print\n" + DAEMON_RESET + USERS + DAEMON_FLUSH + DAEMON_OTHER + "last words\n"
    assert filtered([text]) == "a worker's print\n" + USERS + DAEMON_OTHER + "last words\n"


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from(["note", "reset", "flush", "user", "other", "line", "chatter", "blank"]), max_size=8),
       st.data())
def test_the_filter_gives_the_same_whatever_the_pipe_chunks(blocks, data):
    """Reference: the blocks that are not noise, in order; the pipe may cut anywhere."""
    texts = {"note": NOTE, "reset": DAEMON_RESET, "flush": DAEMON_FLUSH, "user": USERS, "other": DAEMON_OTHER,
             "line": "print from a worker\n", "chatter": CHATTER, "blank": "\n"}
    text = "".join(texts[b] for b in blocks)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=6)))
    chunks = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
    # a worker's chatter goes with the blank line it prints after each line; the user's blank lines stay
    assert filtered(chunks) == "".join(texts[b] for b in blocks if b in ("user", "other", "line", "blank"))


def test_a_partial_line_is_passed_on_at_once():
    read_fd, write_fd = os.pipe()
    out_read, out_write = os.pipe()
    sink = jvm_output._Filter(read_fd, out_write)
    sink.feed("progress: 10%")
    assert os.read(out_read, 100) == b"progress: 10%"
    for fd in (read_fd, write_fd, out_read, out_write):
        os.close(fd)


@pytest.mark.parametrize("given", [None, "-Xss4m", "-Dfoo=bar -Xss4m"])
def test_the_log4j_configuration_goes_in_front_of_the_callers_java_options(given):
    conf = session.embedded_conf({"spark.driver.extraJavaOptions": given} if given else None)
    options = conf["spark.driver.extraJavaOptions"]
    assert options.startswith(f"-Dlog4j2.configurationFile={jvm_output.LOG4J_CONFIG}")
    java = session.java_binary()  # between the two, only the class archive's options (jvm_archive), if any
    archive = jvm_archive.java_options(java, session.java_version(java)[1]) if java else ""
    assert options == " ".join(filter(None, [f"-Dlog4j2.configurationFile={jvm_output.LOG4J_CONFIG}", archive, given]))
    assert os.path.isfile(jvm_output.LOG4J_CONFIG)


def test_the_shipped_configuration_follows_fw_spark_log_level_from_the_first_line():
    with open(jvm_output.LOG4J_CONFIG) as f:
        text = f.read()
    assert "rootLogger.level = ${env:FW_SPARK_LOG_LEVEL:-FATAL}" in text
    # PySpark's entry point shares the root level, or Spark prints "Setting default log level"
    assert "logger.pygateway.name = org.apache.spark.api.python.PythonGatewayServer" in text
    assert "logger.pygateway.level = ${env:FW_SPARK_LOG_LEVEL:-FATAL}" in text
