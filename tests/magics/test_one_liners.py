"""The promised one-liners (issue 16, item 11), through the real magic in an IPython shell and through the API."""

import re

import pytest
from IPython.core.error import UsageError

import fw_magics as fw
from tests.magics.conftest import run

pytestmark = [pytest.mark.spark, pytest.mark.core]


def usage_line(shell, source: str) -> str:
    result = run(shell, source)
    assert isinstance(result.error_before_exec or result.error_in_exec, UsageError), repr(
        result.error_before_exec or result.error_in_exec)
    message = str(result.error_before_exec or result.error_in_exec)
    assert "\n" not in message and len(message) < 400, message[:500]
    return message


def test_an_integer_of_5000_digits_is_one_line(shell):
    digits = "1" * 5000
    assert "has 5000 digits; accepted: at most 18" in usage_line(shell, f"%fullwindow sort field={digits} --in orders")
    assert "has 5000 digits" in usage_line(shell, f"%fullwindow sort field=price --show {digits} --in orders")
    assert "has 5000 digits" in usage_line(shell, f"%%fullwindow aggregate percentile(price, {digits})\norders")


def test_a_lambda_only_compiling_refuses_is_one_line(shell):
    message = usage_line(shell, '%%fullwindow map fn="lambda x, x: x"\norders')
    assert message == "fn=\"lambda x, x: x\" is not valid Python: duplicate argument 'x' in function definition"


@pytest.mark.parametrize("line", [
    "sort field=price " + "b" * 100_000,
    "map fn=" + "x" * 100_000,
    "bogus" * 20_000,
    "sort field=price --in " + "v" * 100_000,
])
def test_a_quoted_token_is_cut_to_about_60_characters(shell, line):
    message = usage_line(shell, f"%fullwindow {line} --in orders" if "--in" not in line else f"%fullwindow {line}")
    assert "..." in message and max(len(word) for word in message.split()) < 80


def test_a_literal_of_the_wrong_kind_in_a_spark_aggregate_is_one_line(shell):
    message = usage_line(shell, "%%fullwindow aggregate first(price, 1)\norders")
    assert message == "first(price, 1): argument 'ignorenulls' takes true/false; got 1"
    assert "max_by(price, qty, 2.5): argument 'k' takes a whole number; got 2.5" == usage_line(
        shell, "%%fullwindow aggregate max_by(price, qty, 2.5)\norders")


def test_a_map_function_returning_no_records_is_one_line(shell, spark):
    message = usage_line(shell, '%%fullwindow map fn="lambda rs: 5"\norders')
    assert message.endswith("map_partition function '<lambda>' returned int 5; it must yield records (or return a "
                            "list of them): tuples, dicts or records")
    orders = shell.user_ns["orders"]
    with pytest.raises(fw.FullWindowError, match="returned int 5; it must yield records") as caught:
        orders.full_window_partition().map_partition(lambda rs: 5).collect()
    assert "\n" not in str(caught.value)


def test_a_reduce_function_taking_one_argument_is_one_line(shell):
    message = usage_line(shell, "%%fullwindow reduce fn=len\norders")
    assert message == "reduce function 'len' takes (obj, /); reduce calls it as fn(a, b) with two records"
    orders = shell.user_ns["orders"]
    with pytest.raises(fw.FullWindowError, match=r"map_partition function 'f' takes \(a, b\); map_partition "
                                                 r"calls it as fn\(records\)"):
        orders.full_window_partition().map_partition(two_arguments)
    with pytest.raises(fw.FullWindowError, match="reduce function 'len' takes"):
        orders.key_by("customer").full_window_partition().reduce(len)


def two_arguments(a, b):
    return a


two_arguments.__name__ = "f"


def test_from_records_of_none_is_one_line(shell):
    with pytest.raises(fw.FullWindowError) as caught:
        fw.from_records(None, "a long")
    assert str(caught.value) == ("from_records takes an iterable of records (tuples, dicts or records); "
                                 "got NoneType None")
    assert usage_line(shell, '%%fullwindow sort field=a\nfw.from_records(None, "a long")') == str(caught.value)


def test_a_schema_naming_a_column_twice_is_one_line(shell):
    with pytest.raises(fw.FullWindowError) as caught:
        fw.from_records([(1, 2)], "a long, a long")
    assert str(caught.value) == "schema 'a long, a long' names the column 'a' twice; accepted: distinct column names"
    with pytest.raises(fw.FullWindowError, match=r"names the column 'n' twice \(also as 'N'\)"):
        fw.from_records([(1, 2)], "n long, N long")
    message = usage_line(shell, "%%fullwindow map fn=\"lambda rs: rs\" schema=\"x long, x double\"\norders")
    assert message == "schema 'x long, x double' names the column 'x' twice; accepted: distinct column names"


def _shown(capsys) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)


def test_an_api_call_refused_in_a_cell_shows_the_cell_line_and_its_one_line_not_the_library_frames(shell, capsys):
    capsys.readouterr()
    result = run(shell, "schema = 'id long, price dubble'\nfw.from_records([(1, 2.0)], schema)")
    error = result.error_in_exec
    assert isinstance(error, fw.FullWindowError)
    shown = _shown(capsys)
    lines = [line for line in shown.splitlines() if line.strip() and not set(line) <= {"-"}]
    assert lines[-1] == f"FullWindowError: {error}"  # the one line, last
    assert "----> 2 fw.from_records([(1, 2.0)], schema)" in shown  # the cell's line that called fw-magics
    assert "site-packages" not in shown and "fw_magics/" not in shown and "pyspark" not in shown.lower()
    assert "The above exception" not in shown and len(lines) <= 6, shown
    assert error.__cause__ is not None or error.__context__ is not None  # the library error is still chained


def test_a_job_failure_keeps_its_whole_traceback_with_the_cause_chained(shell, capsys):
    capsys.readouterr()
    result = run(shell, "def boom():\n    raise ValueError('my bug')\n"
                        "try:\n    boom()\nexcept ValueError as e:\n    raise fw.JobFailedError('job failed') from e")
    assert isinstance(result.error_in_exec, fw.JobFailedError)
    shown = _shown(capsys)
    assert "ValueError: my bug" in shown and "The above exception was the direct cause" in shown
    assert shown.rstrip().endswith("JobFailedError: job failed")
