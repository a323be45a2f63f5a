"""Job names map to folders inside the job directory, and can never escape it."""

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
