"""Where things live in a job directory: the default directory and the default job name, a job's
folder (its name can never escape the directory) and every name inside it, named once here for
both kinds of job (``execute()`` and ``start()``).

    <job_dir>/<job_name>/LOCK                              the live process running the job (lock.py)
    <job_dir>/<job_name>/events/events.0, events.1, ...   the event log
    <job_dir>/<job_name>/results/v0/0.arrow, 0.json, ...   subtask 0 of job vertex v0 and its sidecar
                                                           (a streaming job's backlog subtasks too)
    a streaming job's own (fw_magics.runtime.streaming):
    <job_dir>/<job_name>/source/manifest.json              the files its source has seen; the backlog
    <job_dir>/<job_name>/source/skipped/                   the files its readers skipped, one marker each
    <job_dir>/<job_name>/backlog/watermark.json            W, the backlog's watermark
    <job_dir>/<job_name>/backlog/handover.json             the backlog's state handed to the stream
    <job_dir>/<job_name>/checkpoint/                       Spark's checkpoint of the streaming query
    <job_dir>/<job_name>/changelog/batch=<id>/             each micro-batch's output rows
    <job_dir>/<job_name>/metrics/state/batch=<id>/         keys each state partition gained and lost in a
                                                           micro-batch, until its micro_batch event holds them
    <job_dir>/<job_name>/restored/...                      what a job restored from a savepoint starts from
    <job_dir>/<job_name>/savepoints/savepoint-NNNNNN/      its savepoints

The vertex names are ``fw_magics.graph.vertex_name``'s; these paths are an on-disk contract
that a resumed run reads back. Every file a job reads back is read through
``Storage.open_inside`` (no link, regular files only, bounded).
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlparse

from ..errors import FullWindowError
from .filesystem import local_path

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_ .\-]{0,199}")
_SLUG = re.compile(r"[^A-Za-z0-9_.]+")
_ACCEPTED_DIR = "a path (str or os.PathLike) or a URI (file:///p, hdfs://..., s3a://...)"


def job_directory(job_dir) -> str:
    """``job_dir`` checked and normalised: a local one as an absolute plain path, a URI as given.

    ``file:/p``, ``file:///p`` and ``file://localhost/p`` all mean ``/p``, for the lock and
    the files alike; anything but a str or an os.PathLike is refused in one line.
    """
    given = job_dir
    if isinstance(job_dir, os.PathLike):
        job_dir = os.fspath(job_dir)
    if not isinstance(job_dir, str) or not job_dir.strip() or "\x00" in job_dir:
        raise FullWindowError(f"job_dir {given!r:.80} ({type(given).__name__}); accepted: {_ACCEPTED_DIR}")
    scheme = urlparse(job_dir).scheme
    if scheme in ("", "file") or (len(scheme) == 1 and os.name == "nt"):
        try:
            return os.path.abspath(local_path(job_dir))
        except ValueError as error:
            raise FullWindowError(f"job_dir {job_dir!r:.80}: {error}") from None
    return job_dir.rstrip("/")


def default_job_dir() -> str:
    """The job directory used when none is given, by both verbs: ``$FW_JOB_DIR``, else ``.fw-jobs``
    in the working directory (next to the notebook)."""
    return os.environ.get("FW_JOB_DIR") or os.path.join(os.getcwd(), ".fw-jobs")


def default_job_name(label: str, fingerprint: str) -> str:
    """The job name used when none is given, by both verbs: what the job does as a slug, and a short
    hash of its graph. ``execute()``'s label is its last operator's name ("map_partition-summarize-1a2b3c4d"),
    ``start()``'s its source, operator kind and function ("orders-reduce-add-1a2b3c4d"). The same
    pipeline gets the same name in any process, a changed graph a new one."""
    slug = _SLUG.sub("-", label).strip("-.")[:60].strip("-.") or "job"
    return f"{slug}-{fingerprint[:8]}"


def safe_job_path(job_dir: str, job_name) -> str:
    """``job_dir/job_name`` after checking the name is a plain, safe folder name."""
    if not isinstance(job_name, str) or not _NAME.fullmatch(job_name) or job_name.endswith((" ", ".")):
        raise FullWindowError(
            f"job name {job_name!r} is not allowed; use 1-200 letters, digits, '_', '-', '.' or spaces, "
            "starting with a letter, digit or '_' (no '/', '\\\\' or '..')"
        )
    return f"{str(job_dir).rstrip('/')}/{job_name}"


LOCK = "LOCK"
EVENTS = "events"
RESULTS = "results"  # the folder of the result files, inside the job's folder
SOURCE_MANIFEST = "source/manifest.json"
SKIPPED = "source/skipped"  # a marker per source file a reader skipped (on_bad_file="skip")
WATERMARK = "backlog/watermark.json"
HANDOVER = "backlog/handover.json"
CHECKPOINT = "checkpoint"
CHANGELOG = "changelog"
STATE_COUNTS = "metrics/state"  # per micro-batch, per state partition: keys gained and lost (driver/state_counts.py)
RESTORED_KEYED = "restored/keyed-state.parquet"
RESTORED_LATEST = "restored/latest.parquet"
RESTORED_BASE = "restored/base"  # a restored job's base state files, shared with its savepoint's
RESTORED_OPERATOR = "restored/operator-state.json"
SAVEPOINTS = "savepoints"
#: What a streaming job's restart with ``reset=True`` removes: all it recorded but its savepoints.
STREAM_RECORDS = (EVENTS, RESULTS, "source", "backlog", CHECKPOINT, CHANGELOG, "restored", "metrics")


def result_file(vertex: str, subtask: int) -> str:
    """Subtask ``subtask`` of job vertex ``vertex``'s result, relative to the job's folder."""
    return f"{RESULTS}/{vertex}/{subtask}.arrow"


def result_sidecar(vertex: str, subtask: int) -> str:
    """The JSON sidecar (size, SHA-256, record count) of ``result_file(vertex, subtask)``."""
    return f"{RESULTS}/{vertex}/{subtask}.json"
