"""The tutorials' exercise checks: a wrong answer is one red line in the notebook, not a traceback.

A check cell calls ``check(answer == expected, "not quite: ...")``. A wrong answer raises
:class:`NotQuite`, which still stops a Run All there (as an assertion would), but IPython shows
it as its message alone (``_render_traceback_``, IPython's hook for an exception that draws
itself), so a learner reads what to look at, not a frame of the check's own code.
"""

from __future__ import annotations

__all__ = ["NotQuite", "check"]


class NotQuite(AssertionError):
    """A wrong answer to a tutorial's exercise; its message says what to look at."""

    def _render_traceback_(self) -> list[str]:
        return [f"\x1b[0;31m{self}\x1b[0m"]


def check(correct: bool, why: str) -> None:
    """Raise ``NotQuite(why)`` unless ``correct``."""
    if not correct:
        raise NotQuite(why)
