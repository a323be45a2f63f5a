"""The one exception users see when they misuse fw-magics."""


class FullWindowError(ValueError):
    """A misuse of the fw-magics API, reported as one line.

    The message names the culprit (the column, position, value or function) and what
    would have been accepted. It is raised before any Spark job starts, except for
    problems only visible in the data (a record that does not fit the declared schema),
    which are raised when the job runs, with the same one-line message.
    """


def error_summary(error: BaseException, limit: int = 500) -> str:
    """One line saying what went wrong: ``Type: message``.

    When Spark wraps an error raised in a Python worker, its first line only says so ("An
    exception was thrown from the Python worker"); the line that matters is the exception
    at the end of the worker's traceback, so that one is given after the wrapper's type.
    """
    text = str(error).strip()
    lines = text.splitlines()
    headers = [k for k, line in enumerate(lines) if line.strip() == "Traceback (most recent call last):"]
    if headers:
        raised = next((line for line in lines[headers[-1] + 1:] if line.strip() and not line[0].isspace()), None)
        if raised is not None:
            return f"{type(error).__name__}: {raised.strip()}"[:limit]
    return f"{type(error).__name__}: {lines[0] if lines else ''}"[:limit]
