"""The error family, its wording helpers, and error_summary (the one line events and the panel show)."""

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
    from fw_magics.testing import InjectedFailure

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

    from fw_magics.actions import run_action
    from fw_magics.errors import FullWindowError

    def action():
        raise PythonException(WRAPPED.replace("fw_magics.testing.InjectedFailure", "fw_magics.errors.FullWindowError"))

    with pytest.raises(FullWindowError) as caught:
        run_action(action)
    assert str(caught.value) == "injected failure in partition 1, attempt 2"
    with pytest.raises(PythonException):  # anything else keeps its type and traceback
        run_action(lambda: (_ for _ in ()).throw(PythonException(WRAPPED)))
