"""What fw-magics says that is no error and asks no change of the caller: one plain line.

Python's logging HOWTO ("When to use logging") draws the line followed here: ``warnings.warn``
when the caller can and should change their code; a log record when there is nothing to change
but the event should be noted. Taking over the lock a killed driver left behind is the second
kind: restarting the job is what the user meant to do. In a notebook, a warning (and a log record
when no handler is configured: Python's last-resort handler writes it to stderr) shows in a red
box that reads as an error. So a notice is a plain ``fw-magics: ...`` line on stdout, as
fw-magics' other notes are (the JVM class archive's), and a record at INFO on the ``fw_magics``
logger for an application that collects its logs (one that also shows INFO on a console sees
it there too).
"""

from __future__ import annotations

import logging
import sys

_log = logging.getLogger("fw_magics")


def notice(message: str) -> None:
    """Say ``message`` (one line, no secret in it) in the cell or process that is running."""
    print(f"fw-magics: {message}", file=sys.stdout, flush=True)
    _log.info(message)
