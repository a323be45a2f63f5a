"""A file source's files checked before a job reads them, at its first start (no Spark).

* **The schema against the first file**: every column the declared schema names must be in the
  first file the job will read (a Parquet file's footer, a CSV file's header, the keys of a JSON
  file's first lines), of a type the reader can turn into the declared one; otherwise one line
  names the column, the file and the columns it has, with the closest name. (Later files are
  read by name: a column one lacks is null.)
* **The backlog's Parquet footers**: a file that is not Parquet (``notes.parquet`` holding text) or
  is cut short is a bad file before the backlog's Spark job starts, and the source's
  ``on_bad_file`` decides (one line, or skipped and recorded). A footer with nanosecond
  timestamps (pandas' and pyarrow's default) makes the backlog's reader pyarrow's rather than
  Spark's, which refuses them: the values are the same, cut to microseconds.
"""

from __future__ import annotations

import csv
import io
import json
import os

from ...errors import FullWindowError, did_you_mean
from .reading import unreadable

#: What the first JSON lines are read of for their keys.
JSON_PEEK = 64 << 10


def _family(kind) -> str:
    import pyarrow as pa

    for name, test in (("integer", pa.types.is_integer), ("float", pa.types.is_floating),
                       ("decimal", pa.types.is_decimal), ("string", pa.types.is_string),
                       ("string", pa.types.is_large_string), ("binary", pa.types.is_binary),
                       ("binary", pa.types.is_large_binary), ("boolean", pa.types.is_boolean),
                       ("timestamp", pa.types.is_timestamp), ("date", pa.types.is_date),
                       ("nested", pa.types.is_nested)):
        if test(kind):
            return name
    return str(kind)


#: Which file types each declared type is read from (pyarrow's casts; an overflow still fails the read).
_READS = {"integer": {"integer"}, "float": {"integer", "float", "decimal"}, "decimal": {"integer", "decimal"},
          "string": {"string"}, "binary": {"binary"}, "boolean": {"boolean"}, "timestamp": {"timestamp"},
          "date": {"date"}, "nested": {"nested"}}


def compatible(have, want) -> bool:
    """Whether a file column of Arrow type ``have`` reads into the declared Arrow type ``want``."""
    return have == want or _family(have) in _READS.get(_family(want), {_family(want)})


def _columns(path: str, fmt: str) -> dict:
    """The file's columns: name -> Arrow type (Parquet), or name -> None (CSV, JSON: types are seen when read)."""
    if fmt == "parquet":
        import pyarrow.parquet as pq

        schema = pq.read_schema(path)
        return {f.name: f.type for f in schema}
    with open(path, "rb") as f:
        head = f.read(JSON_PEEK)
    if fmt == "csv":
        first = head.decode("utf-8", "replace").splitlines()[:1]
        return {name: None for name in (next(csv.reader(io.StringIO(first[0])), []) if first else [])}
    keys: dict = {}
    for line in head.decode("utf-8", "replace").splitlines()[:-1] or head.decode("utf-8", "replace").splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            keys.update(dict.fromkeys(value))
    return keys


def check_first_file(directory: str, entry: dict, fmt: str, arrow_schema) -> None:
    """The declared schema against the first file the job reads (see the module docstring)."""
    name = entry["name"]
    try:
        columns = _columns(os.path.join(directory, name), fmt)
    except Exception:  # an unreadable file: the reader says so, by the source's on_bad_file
        return
    if fmt == "json" and not columns:
        return
    for field in arrow_schema:
        if field.name not in columns:
            hint = did_you_mean(field.name, list(columns), form=" (did you mean {!r}?)")
            raise FullWindowError(f"column {field.name!r} of the schema is not in {name!r}{hint}; its columns are: "
                                  f"{', '.join(map(str, columns)) or 'none'} ({directory})")
        have = columns[field.name]
        if have is not None and not compatible(have, field.type):
            raise FullWindowError(f"column {field.name!r} is {have} in {name!r}, the schema says {field.type}; "
                                  f"accepted: a column of a {_family(field.type)} type ({directory})")


def nanoseconds(schema, names) -> bool:
    """Whether a Parquet schema has a nanosecond timestamp among the columns ``names``."""
    import pyarrow as pa

    return any(pa.types.is_timestamp(f.type) and f.type.unit == "ns" for f in schema if f.name in names)


def footer_problem(path: str) -> tuple[str | None, object]:
    """(why the Parquet file at ``path`` cannot be read, or None; its Arrow schema when it can)."""
    import pyarrow.parquet as pq

    try:
        return None, pq.read_schema(path)
    except FileNotFoundError:
        return "it is gone (deleted or renamed after it was listed)", None
    except Exception as error:  # pyarrow says what is wrong: not Parquet, cut short
        return unreadable("parquet", error), None
