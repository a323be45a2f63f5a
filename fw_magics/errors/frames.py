"""Which frames of a traceback are the user's, and a traceback cut to them, as IPython draws it.

A frame is the user's when its code is not fw-magics', PySpark's, IPython's, another installed
package's or the standard library's: a notebook cell, a script, the user's own module. Used by
the magic (``fw_magics.errors.tracebacks``: an error from the user's function keeps only the
user's frames) and by ``FwMagicsError._render_traceback_`` (an API call refused: the cell line
that made it, then the one line that says why).
"""

from __future__ import annotations

import os
import re
import sysconfig
import types

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # fw_magics/ (this is fw_magics/errors/)
_LIBRARY_DIRS = tuple(
    os.path.normcase(os.path.realpath(d)) + os.sep
    for d in {_PACKAGE_DIR, sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"]}
)
_LIBRARY_PATTERN = re.compile(r"[\\/](site|dist)-packages[\\/]|pyspark\.zip|^<frozen ")


def is_user_file(filename: str) -> bool:
    """Whether code in ``filename`` is the user's (a notebook cell, a script, their module)."""
    if _LIBRARY_PATTERN.search(filename):
        return False
    if filename.startswith("<"):
        return True  # <ipython-input-...>, <string>: code typed by the user
    path = os.path.normcase(os.path.realpath(filename))
    return not path.startswith(_LIBRARY_DIRS)


def user_traceback(error: BaseException, shell) -> list[str] | None:
    """IPython's structured traceback of ``error`` with the user's frames only (None: it has none)."""
    frames = []
    tb = error.__traceback__
    while tb is not None:
        if is_user_file(tb.tb_frame.f_code.co_filename):
            frames.append(tb)
        tb = tb.tb_next
    if not frames:
        return None
    trimmed = None
    for frame in reversed(frames):
        trimmed = types.TracebackType(trimmed, frame.tb_frame, frame.tb_lasti, frame.tb_lineno)
    return shell.InteractiveTB.structured_traceback(type(error), error, trimmed, tb_offset=0)
