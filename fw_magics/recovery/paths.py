"""Where things live in a job directory: a job's folder (its name can never escape the
directory) and, inside it, the result file of each job-vertex subtask.

    <job_dir>/<job_name>/events/events.0, events.1, ...   the event log
    <job_dir>/<job_name>/results/v0/0.arrow, 0.json, ...   subtask 0 of job vertex v0 and its sidecar

The vertex names are ``fw_magics.graph.vertex_name``'s; these paths are an on-disk contract
that a resumed run reads back.
"""

from __future__ import annotations

import re

from ..errors import FullWindowError

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_ .\-]{0,199}")


def safe_job_path(job_dir: str, job_name) -> str:
    """``job_dir/job_name`` after checking the name is a plain, safe folder name."""
    if not isinstance(job_name, str) or not _NAME.fullmatch(job_name) or job_name.endswith((" ", ".")):
        raise FullWindowError(
            f"job name {job_name!r} is not allowed; use 1-200 letters, digits, '_', '-', '.' or spaces, "
            "starting with a letter, digit or '_' (no '/', '\\\\' or '..')"
        )
    return f"{str(job_dir).rstrip('/')}/{job_name}"


RESULTS = "results"  # the folder of the result files, inside the job's folder


def result_file(vertex: str, subtask: int) -> str:
    """Subtask ``subtask`` of job vertex ``vertex``'s result, relative to the job's folder."""
    return f"{RESULTS}/{vertex}/{subtask}.arrow"


def result_sidecar(vertex: str, subtask: int) -> str:
    """The JSON sidecar (size, SHA-256, record count) of ``result_file(vertex, subtask)``."""
    return f"{RESULTS}/{vertex}/{subtask}.json"
