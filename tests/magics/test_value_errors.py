"""%%fullwindow refuses a value that does not fit its column with the API's one line (issue 16, item 1)."""

import pytest
from IPython.core.error import UsageError

from tests.magics.conftest import ok, run

pytestmark = [pytest.mark.spark, pytest.mark.core]


def usage_line(shell, source: str) -> str:
    result = run(shell, source)
    assert isinstance(result.error_in_exec, UsageError), repr(result.error_in_exec)
    message = str(result.error_in_exec)
    assert "\n" not in message
    return message


def test_a_fraction_into_an_integer_column_is_one_line(shell):
    message = usage_line(shell, "%%fullwindow map fn=\"lambda rs: [(29.25,)]\" schema='n long'\norders")
    assert message.endswith(
        "does not fit column 'n': expected bigint, got float 29.25 (its fractional part would be lost)"), message


def test_a_whole_float_is_stored_as_its_integer(shell):
    stream = ok(shell, "%%fullwindow reduce fn=\"lambda a, b: (a.id, a.customer, a.price, a.qty * 1.0 + b.qty)\" -o totals;\norders")
    assert stream is None
    assert [tuple(r) for r in shell.user_ns["totals"].collect()] == [
        (1, "ada", 4.5, 2), (2, "grace", 3.0, 5), (4, "linus", 2.75, 4)]
