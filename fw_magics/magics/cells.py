"""What the cell magics share: run a cell's body in the notebook, and report errors the magic way.

``%%fullwindow`` and ``%%fwstream`` both take their input from the value of the cell's last
expression (:func:`run_body`), and both turn fw-magics' one-line errors into one
``UsageError`` line while the user's own errors keep their traceback, trimmed of our frames
(:func:`user_errors`).
"""

from __future__ import annotations

import ast
import contextlib

from IPython.core.displayhook import DisplayHook
from IPython.core.error import UsageError

from ..errors import FwMagicsError
from . import tracebacks


def run_body(shell, cell: str, needs: str):
    """Run ``cell`` in the notebook's namespace; return ``(value, expression, quiet)`` of its last expression.

    ``value`` is what the last expression gives, ``expression`` its source text, ``quiet``
    whether the cell ends in ``;``. The code is cached the IPython way, so a traceback names
    it ``Cell In[N]``. A cell that does not end in an expression is refused before anything
    runs, with ``needs`` as the message (one line saying what the magic takes as input).
    """
    code = shell.transform_cell(cell)
    filename = shell.compile.cache(code, cell_number(shell), raw_code=cell)
    tree = compile(code, filename, "exec", ast.PyCF_ONLY_AST)
    if not tree.body or not isinstance(tree.body[-1], ast.Expr):
        raise UsageError(needs)
    last = tree.body.pop()
    exec(compile(tree, filename, "exec"), shell.user_global_ns, shell.user_ns)
    value = eval(compile(ast.Expression(last.value), filename, "eval"), shell.user_global_ns, shell.user_ns)
    expression = ast.get_source_segment(code, last.value)
    return value, expression, DisplayHook.semicolon_at_end_of_expression(code)


def cell_number(shell) -> int:
    """The number N of the cell running now, as its prompt ``In[N]`` shows it.

    Code a magic compiles is cached under this number so that a traceback names it ``Cell In[N]``.
    IPython 9 counts the cell in ``execution_count`` before running it (so that is N + 1 while it
    runs); the number the cell got is its ExecutionResult's, which the display hook holds while
    the cell runs. Outside a cell (a magic called directly) it is ``execution_count``.
    """
    result = getattr(getattr(shell, "displayhook", None), "exec_result", None)
    number = getattr(result, "execution_count", None)
    return number if isinstance(number, int) else shell.execution_count


@contextlib.contextmanager
def user_errors(shell):
    """fw-magics' one-line errors become UsageError; the user's own errors lose our frames."""
    try:
        yield
    except FwMagicsError as error:
        raise UsageError(str(error)) from None
    except UsageError:
        raise
    except Exception as error:
        tracebacks.trim(error, shell)
        raise
