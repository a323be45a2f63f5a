"""error_summary: the one line that region_failed / job_failed events and the panel show."""

from fw_magics.errors import error_summary

WRAPPED = """An exception was thrown from the Python worker. Please see the stack trace below.
Traceback (most recent call last):
  File "/x/worker.py", line 3, in main
    raise InjectedFailure("boom")
fw_magics.testing.InjectedFailure: injected failure in partition 1, attempt 2

JVM stacktrace:
org.apache.spark.api.python.PythonException: Traceback (most recent call last):
\tat org.apache.spark.api.python.BasePythonRunner.handle(PythonRunner.scala:1)
"""


class PythonException(Exception):
    pass


def test_a_plain_error_gives_its_type_and_first_line():
    assert error_summary(ValueError("bad value\nmore")) == "ValueError: bad value"
    assert error_summary(RuntimeError()) == "RuntimeError: "


def test_a_wrapped_worker_error_gives_the_exception_raised_in_the_worker():
    assert error_summary(PythonException(WRAPPED)) == (
        "PythonException: fw_magics.testing.InjectedFailure: injected failure in partition 1, attempt 2")


def test_the_summary_is_bounded():
    assert len(error_summary(ValueError("x" * 5000))) == 500
