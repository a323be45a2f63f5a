"""%fullwindow? shows the grammar, and every example in it runs, so the help never lies."""

import inspect

import pytest

import fw_magics as fw
from fw_magics.magics import grammar
from fw_magics.magics.magic import FullWindowMagics
from tests.magics.conftest import ok

pytestmark = [pytest.mark.spark, pytest.mark.core]

HELP = inspect.cleandoc(FullWindowMagics.fullwindow.__doc__)


def examples() -> list[str]:
    """The example cells: the indented blocks after 'Examples', separated by blank lines."""
    section = HELP.split("\nExamples", 1)[1].split("\n", 1)[1]
    return [inspect.cleandoc(block) for block in section.split("\n\n") if block.strip()]


def test_the_help_shows_the_grammar(shell, capsys):
    ok(shell, "%fullwindow?")
    shown = capsys.readouterr().out
    for word in (*grammar.OPERATIONS, "key=COL", "-o NAME", "--show N", "--explain", "--in NAME"):
        assert word in shown


def test_every_example_in_the_help_runs(shell):
    cells = examples()
    assert len(cells) >= 8 and all(c.startswith(("%", "import")) for c in cells)
    ours = shell.user_ns["orders"]  # the examples define their own `orders`
    try:
        for cell in cells:
            value = ok(shell, cell)
            if cell.startswith("%"):
                assert isinstance(value, fw.DataStream), cell
        assert isinstance(shell.user_ns["top"], fw.DataStream)  # the -o example
    finally:
        shell.user_ns["orders"] = ours
