"""What the magics share: find their input, run a cell's body in the notebook, report errors the magic way.

``%%fullwindow`` and ``%%fwstream`` both take their input from the value of the cell's last
expression (:func:`run_body`) or, in the line form, from the variable ``--in NAME`` names
(:func:`magic_input`); every magic that names a variable finds it with :func:`variable`. Both
turn fw-magics' one-line errors into one ``UsageError`` line while the user's own errors keep
their traceback, trimmed of our frames (:func:`user_errors`).
"""

from __future__ import annotations

import ast
import contextlib

from IPython.core.displayhook import DisplayHook
from IPython.core.error import UsageError

from ..errors import FwMagicsError, did_you_mean, tracebacks
from .words import shortened


def variable(shell, name: str, what: str):
    """The value of the notebook's variable ``name``, or the one-line UsageError
    "WHAT NAME: no such variable", with the closest of the notebook's own names (no ``_`` ones)."""
    if name not in shell.user_ns:
        names = [n for n in shell.user_ns if not n.startswith("_")]
        raise UsageError(f"{what} {shortened(name)}: no such variable" + did_you_mean(name, names))
    return shell.user_ns[name]


def magic_input(shell, magic: str, name: str | None, cell: str | None, needs: str):
    """The input of ``%MAGIC ... --in NAME`` (the variable) or of a ``%%MAGIC`` cell (its last
    expression): ``(value, expression, quiet)`` as :func:`run_body` gives them, ``quiet`` False
    in the line form. ``needs`` is the message for a cell that does not end in an expression.
    """
    if cell is None:
        if name is None:
            raise UsageError(f"%{magic} needs --in NAME (the variable holding the input), or use %%{magic} "
                             "with the input as the cell's last expression")
        return variable(shell, name, "--in"), name, False
    if name is not None:
        raise UsageError(f"--in {shortened(name)} is for the line form %{magic}; in a %%{magic} cell the last "
                         "expression is the input")
    with user_errors(shell):
        return run_body(shell, cell, needs)


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
