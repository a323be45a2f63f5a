"""Reading one source file as its manifest entry says, and what happens when it cannot be (no Spark).

Every mode reads a file the same way (``read_file``): Parquet with pyarrow (nanosecond timestamps
cut to Spark's microseconds), JSON Lines and CSV with pyarrow, every column cast to the declared
schema by name (a column a file lacks is null; a value that does not fit fails the read). A
timestamp in CSV or JSON may carry a zone (``2026-01-01T00:53:37Z``, ``+02:00``) or not
(``2026-01-01 00:53:37``, what pandas' ``to_csv`` writes): one without is in the session's time
zone, as Spark's own readers take it. (The backlog of a Parquet source is read by Spark's reader
for speed unless a file holds nanosecond timestamps; the values are the same.)

``read_entry`` reads the file a manifest entry names, whole, before any of it is handed on (a
file that fails half-way leaves nothing behind), after checking it is still the file that was
listed (same size and modification time: a file written in place would be half-read). A file
that is gone, changed, not of its format or not of the schema is a **bad file**, and the
source's ``on_bad_file`` decides: ``"fail"`` raises one ``FullWindowError`` line naming the file
and why (the job fails; remove or fix the file and start it again: nothing is lost or counted
twice), ``"skip"`` leaves a marker in the job directory (``source/skipped/``: the driver records a
``file_skipped`` event and counts it in ``job.skipped_files``) and reads nothing of it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time

from ...errors import FullWindowError
from ...recovery.filesystem import Storage
from ...recovery.paths import SKIPPED

BATCH_ROWS = 65_536
_ZONE = re.compile(r"(Z|[+-]\d\d(:?\d\d)?)$")


def _timestamps(column, target, time_zone: str):
    """Text timestamps, with or without a zone, as ``target`` (a zone-aware Arrow timestamp)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    text = column.cast(pa.string())
    zoned = pc.match_substring_regex(text, _ZONE.pattern)
    with_zone = pc.if_else(zoned, text, pa.scalar(None, pa.string())).cast(target)
    naive_type = pa.timestamp(target.unit)
    without = pc.if_else(zoned, pa.scalar(None, pa.string()), text).cast(naive_type)
    local = pc.assume_timezone(without, timezone=time_zone, ambiguous="earliest", nonexistent="earliest")
    return pc.coalesce(with_zone, local.cast(target))


def _text_schema(schema):
    """``schema`` with timestamp columns read as text first (they are converted after)."""
    import pyarrow as pa

    return pa.schema([pa.field(f.name, pa.string()) if pa.types.is_timestamp(f.type) else f for f in schema])


def read_file(path: str, fmt: str, schema, time_zone: str = "UTC"):
    """The file's rows as Arrow record batches of ``schema`` (an Arrow schema), columns matched by name."""
    import pyarrow as pa

    if fmt == "parquet":
        import pyarrow.parquet as pq

        handle = pq.ParquetFile(path)
        present = [n for n in schema.names if n in handle.schema_arrow.names]
        batches = handle.iter_batches(batch_size=BATCH_ROWS, columns=present)
    elif fmt == "json":
        import pyarrow.json as pj

        text = _text_schema(schema)
        table = pj.read_json(path, parse_options=pj.ParseOptions(explicit_schema=text,
                                                                   unexpected_field_behavior="ignore"))
        batches = table.to_batches(max_chunksize=BATCH_ROWS)
    else:
        import pyarrow.csv as pc

        text = _text_schema(schema)
        table = pc.read_csv(path, convert_options=pc.ConvertOptions(
            column_types={f.name: f.type for f in text}, strings_can_be_null=True))
        batches = table.to_batches(max_chunksize=BATCH_ROWS)
    for batch in batches:
        columns = []
        for field in schema:
            index = batch.schema.get_field_index(field.name)
            if index < 0:
                columns.append(pa.nulls(batch.num_rows, type=field.type))
                continue
            column = batch.column(index)
            if pa.types.is_timestamp(field.type) and pa.types.is_string(column.type):
                columns.append(_timestamps(column, field.type, time_zone))
                continue
            # nanoseconds are cut to Spark's microseconds, as Spark's own readers do; every
            # other conversion must be exact (a long that overflows an int fails the read)
            lossy = pa.types.is_timestamp(column.type) and pa.types.is_timestamp(field.type)
            columns.append(column.cast(field.type, safe=not lossy))
        yield pa.RecordBatch.from_arrays(columns, schema=schema)


#: A format's name in messages.
FORMAT_NAMES = {"parquet": "Parquet", "json": "JSON", "csv": "CSV"}


def unreadable(fmt: str, error: Exception) -> str:
    """Why a file of format ``fmt`` cannot be read, from the reader's error: its first line, as it says it."""
    text = str(error).strip().splitlines()
    said = text[0][:300].rstrip(". ") if text else ""
    return f"it is not a readable {FORMAT_NAMES.get(fmt, fmt)} file ({type(error).__name__}: {said})"


def problem_of(path: str, entry: dict) -> str | None:
    """Why the file at ``path`` is no longer the one its manifest entry names, or None."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return "it is gone (deleted or renamed after it was listed)"
    except OSError as error:
        return f"it cannot be opened ({error.strerror or error})"
    if (info.st_size, info.st_mtime_ns) != (entry["size"], entry["mtime_ns"]):
        return (f"it changed after it was listed ({entry['size']:,} bytes then, {info.st_size:,} now): write each "
                "file whole, under a name starting with '.', then rename it into place")
    return None


def read_entry(root: str, directory: str, entry: dict, fmt: str, schema, policy: str, time_zone: str) -> list:
    """Every batch of the file a manifest entry names, or [] for one skipped (see the module docstring)."""
    name = entry["name"]
    if entry.get("skipped") or skipped(root, name):
        return []
    path = os.path.join(directory, name)
    problem = problem_of(path, entry)
    if problem is None:
        try:
            return list(read_file(path, fmt, schema, time_zone))
        except Exception as error:  # pyarrow says what is wrong with the file
            problem = unreadable(fmt, error)
    return bad_file(root, directory, name, problem, policy)


def bad_file(root: str, directory: str, name: str, problem: str, policy: str) -> list:
    """A file that cannot be read: one line (``"fail"``), or a skip marker and nothing read (``"skip"``)."""
    if policy == "skip":
        mark_skipped(root, name, problem)
        return []
    raise FullWindowError(f"source file {name!r} in {directory} cannot be read: {problem}; remove or fix it and "
                          "start() again (nothing is lost or counted twice), or make the source with "
                          "on_bad_file='skip' to record such files as skipped")


def _marker(name: str) -> str:
    return f"{SKIPPED}/{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:24]}.json"


def mark_skipped(root: str, name: str, reason: str) -> None:
    storage = Storage(root)
    doc = {"file": name, "reason": reason[:1000], "time": round(time.time(), 3)}
    storage.write_bytes(storage.path(_marker(name)), json.dumps(doc).encode())


def skipped(root: str, name: str) -> bool:
    return Storage(root).present_inside(_marker(name))


def skip_markers(root: str, limit: int = 100_000) -> list[dict]:
    """The files the readers skipped (``{"file", "reason"}``), oldest first; markers that are not
    what a reader wrote are passed over."""
    storage = Storage(root)
    found = []
    for name in storage.listdir_inside(SKIPPED)[:limit]:
        try:
            with storage.open_inside(f"{SKIPPED}/{name}", 1 << 16) as f:
                doc = json.loads(f.read())
        except (OSError, ValueError, UnicodeDecodeError):
            continue
        if isinstance(doc, dict) and isinstance(doc.get("file"), str) and isinstance(doc.get("reason"), str):
            found.append(doc)
    return sorted(found, key=lambda d: (d.get("time") or 0, d["file"]))


def new_skips(root: str, noted: set) -> list[dict]:
    """The readers' skip markers whose files are not in ``noted`` yet (added to it), oldest first."""
    found = [doc for doc in skip_markers(root) if doc["file"] not in noted]
    noted.update(doc["file"] for doc in found)
    return found

