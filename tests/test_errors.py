"""The error family, its wording helpers, and error_summary (the one line events and the panel show)."""

from fw_magics.errors import error_summary

WRAPPED = """An exception was thrown from the Python worker. Please see the stack trace below.
Traceback (most recent call last):
  File "/x/worker.py", line 3, in main
    raise InjectedFailure("boom")
fw_magics.teaching.testing.InjectedFailure: injected failure in partition 1, attempt 2

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
        "PythonException: fw_magics.teaching.testing.InjectedFailure: injected failure in partition 1, attempt 2")


PROXY = """An exception was raised by the Python Proxy. Return Message: Traceback (most recent call last):
  File "/v/py4j/clientserver.py", line 644, in _call_proxy
    return_value = getattr(self.pool[obj_id], method)(*params)
  File "/v/fw_magics/convert.py", line 102, in batch
    raise FullWindowError(self._message(index, misfit)) from None
fw_magics.errors.FullWindowError: reduce function 'badadd' produced a value that does not fit column 'v': expected bigint
"""
JVM = """An error occurred while calling o88.collectToPython.
: org.apache.spark.SparkException: [FAILED_READ_FILE.NO_HINT] Encountered error while reading file file:///s/notes.parquet.  SQLSTATE: KD001
	at org.apache.spark.sql.errors.QueryExecutionErrors$.cannotReadFilesError(QueryExecutionErrors.scala:1)
Caused by: java.lang.RuntimeException: file:/s/notes.parquet is not a Parquet file (length is too low: 11)
	at org.apache.parquet.hadoop.ParquetFileReader.readFooter(ParquetFileReader.java:1)
"""
PROXY_ERROR = """An exception was raised by the Python Proxy. Return Message: Traceback (most recent call last):
  File "/v/sink.py", line 3, in __call__
    self.sink(frame, batch_id)
ValueError: sink broke
"""


def test_a_python_proxy_error_gives_its_raised_line_and_a_worker_full_window_error_its_own_line():
    assert error_summary(RuntimeError(PROXY_ERROR)) == "RuntimeError: ValueError: sink broke"
    assert error_summary(RuntimeError(PROXY)) == (
        "FullWindowError: reduce function 'badadd' produced a value that does not fit column 'v': expected bigint")


def test_a_jvm_error_gives_its_innermost_cause_naming_the_file():
    assert error_summary(RuntimeError(JVM)) == (
        "RuntimeError: java.lang.RuntimeException: file:/s/notes.parquet is not a Parquet file (length is too low: 11)")


def test_a_failure_raised_again_is_fresh_and_a_worker_value_check_is_the_batch_apis_one_line():
    from fw_magics.errors import FullWindowError, JobFailedError, JobStorageError, raised_again

    again = raised_again(RuntimeError(PROXY), "job 'j' failed")
    assert type(again) is FullWindowError and str(again).startswith("reduce function 'badadd' produced")
    again = raised_again(RuntimeError(JVM), "job 'j' failed")
    assert type(again) is JobFailedError and str(again).startswith("job 'j' failed: RuntimeError: java.lang")
    first = JobStorageError("the disk is full")
    assert type(raised_again(first, "x")) is JobStorageError and raised_again(first, "x") is not first


def test_the_summary_is_bounded():
    assert len(error_summary(ValueError("x" * 5000))) == 500


# -- the family --------------------------------------------------------------------------------


def test_one_family_under_fw_magics_error_exported_from_the_package():
    import fw_magics as fw

    family = [fw.FullWindowError, fw.ResumeError, fw.JobLockedError, fw.SparkUnavailableError, fw.GraphvizNotFound]
    assert all(issubclass(kind, fw.FwMagicsError) for kind in family)
    assert issubclass(fw.FullWindowError, ValueError)  # misuse stays a ValueError
    assert not issubclass(fw.ResumeError, ValueError)  # a refused resume is a state conflict, not misuse
    assert all(issubclass(kind, RuntimeError) for kind in family[1:])  # what they were before the family
    assert {kind.__name__ for kind in family} | {"FwMagicsError"} <= set(fw.__all__)


def test_the_old_import_places_still_give_the_same_classes():
    from fw_magics import errors
    from fw_magics.recovery import JobLockedError
    from fw_magics.spark.session import SparkUnavailableError

    assert JobLockedError is errors.JobLockedError and SparkUnavailableError is errors.SparkUnavailableError


def test_an_injected_failure_stands_for_user_code_and_stays_outside_the_family():
    from fw_magics.errors import FwMagicsError
    from fw_magics.teaching.testing import InjectedFailure

    assert not issubclass(InjectedFailure, FwMagicsError) and issubclass(InjectedFailure, RuntimeError)


# -- wording -----------------------------------------------------------------------------------


def test_did_you_mean_names_the_closest_choice_whatever_its_case():
    from fw_magics.errors import did_you_mean

    assert did_you_mean("prize", ["id", "price"]) == "; did you mean 'price'?"
    assert did_you_mean("PRIZE", ["id", "price"]) == "; did you mean 'price'?"
    assert did_you_mean("xyz", ["id", "price"]) == ""
    assert did_you_mean("xyz", ["id"], otherwise="; columns are: id") == "; columns are: id"
    assert did_you_mean("idd", ["id"], form=" (did you mean {!r}?)") == " (did you mean 'id'?)"


def test_a_full_window_error_raised_in_a_worker_comes_back_as_one_line():
    import pytest

    from fw_magics.errors import FullWindowError
    from fw_magics.spark.actions import run_action

    def action():
        raise PythonException(WRAPPED.replace("fw_magics.teaching.testing.InjectedFailure", "fw_magics.errors.FullWindowError"))

    with pytest.raises(FullWindowError) as caught:
        run_action(action)
    assert str(caught.value) == "injected failure in partition 1, attempt 2"
    with pytest.raises(PythonException):  # anything else keeps its type and traceback
        run_action(lambda: (_ for _ in ()).throw(PythonException(WRAPPED)))
