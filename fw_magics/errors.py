"""The one exception users see when they misuse fw-magics."""


class FullWindowError(ValueError):
    """A misuse of the fw-magics API, reported as one line.

    The message names the culprit (the column, position, value or function) and what
    would have been accepted. It is raised before any Spark job starts, except for
    problems only visible in the data (a record that does not fit the declared schema),
    which are raised when the job runs, with the same one-line message.
    """
