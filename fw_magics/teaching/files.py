"""A Parquet file landed whole in a folder a file source reads (the folder itself:
``leftovers.scratch_folders``, removed when the kernel ends)::

    land_file(work.readings, "hour-0000.parquet", frame)        # appears whole, or not at all

A file source lists its folder while files land in it: a file written in place could be listed,
and read, half-written. ``land_file`` writes under a hidden name (a name starting with ``.``,
which every fw-magics file source skips) and renames it into place, which is atomic on one
file system.
"""

from __future__ import annotations

import os

__all__ = ["land_file"]


def land_file(folder: str, name: str, data) -> str:
    """Write ``data`` as the Parquet file ``folder/name``, whole: under a hidden name first, then
    renamed into place. ``data``: a pandas DataFrame, a pyarrow Table, or a dict of column lists.
    Timestamps are written in microseconds (Spark's precision). Returns the file's path."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if name.startswith(".") or os.sep in name or not name:
        raise ValueError(f"file name {name!r}; accepted: a plain name not starting with '.', such as 'day-1.parquet'")
    if isinstance(data, pa.Table):
        table = data
    elif isinstance(data, dict):
        table = pa.table(data)
    elif type(data).__name__ == "DataFrame" and hasattr(data, "to_parquet"):
        table = pa.Table.from_pandas(data, preserve_index=False)
    else:
        raise TypeError(f"land_file data of type {type(data).__name__}; accepted: a pandas DataFrame, a pyarrow "
                        "Table or a dict of column lists")
    path, hidden = os.path.join(folder, name), os.path.join(folder, "." + name)
    pq.write_table(table, hidden, coerce_timestamps="us", allow_truncated_timestamps=True)
    os.replace(hidden, path)
    return path
