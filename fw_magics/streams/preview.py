"""How a DataStream shows itself in a notebook: a preview of every partition.

One Spark job, not one per partition: each partition's first N rows (picked in the JVM
with a narrow per-partition row number) and its record count (counted in one
``mapInArrow`` pass) come back as one row per partition, empty partitions included.
"""

from __future__ import annotations

import functools
import html
import weakref
from dataclasses import dataclass

import pyarrow as pa

from .value_text import float_text

DEFAULT_SHOW = 5  # records previewed per partition
_ROW, _PID, _COUNT, _ROWS = "__fw_row", "__fw_pid", "__fw_count", "__fw_rows"
_CELL_WIDTH = 60

# A preview the magic already computed (so its errors surfaced in the cell), shown once.
_computed: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class Preview:
    """The first ``show`` records of each partition and every partition's record count."""

    name: str
    columns: tuple[str, ...]
    types: tuple[str, ...]
    counts: tuple[int, ...]
    heads: tuple[tuple, ...]  # per partition, a tuple of records
    show: int

    @property
    def total(self) -> int:
        return sum(self.counts)


def preview(stream, show: int = DEFAULT_SHOW) -> Preview:
    """Run one Spark job and return the per-partition preview of ``stream``."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from ..errors import run_action
    from ..records import batch_records
    from ..schema import arrow_schema, nullable

    frame = stream.to_dataframe()
    data = nullable(frame.schema)
    # monotonically_increasing_id() is (partition id << 33) + the row's index in its partition.
    index = F.monotonically_increasing_id() - F.shiftleft(F.spark_partition_id().cast("long"), 33)
    row = F.struct(*[F.col("`" + name.replace("`", "``") + "`") for name in data.names])
    heads = frame.select(F.when(index < show, row).alias(_ROW))
    row_type = arrow_schema(T.StructType([T.StructField(_ROW, data)])).field(_ROW).type
    out = T.StructType([
        T.StructField(_PID, T.IntegerType()), T.StructField(_COUNT, T.LongType()),
        T.StructField(_ROWS, T.ArrayType(data)),
    ])
    worker = functools.partial(head_and_count, show, row_type)
    table = run_action(lambda: heads.mapInArrow(worker, out).toArrow()).sort_by(_PID)
    counts = table.column(_COUNT).to_pylist()
    rows = table.column(_ROWS).combine_chunks()
    partitions = tuple(
        tuple(batch_records(pa.RecordBatch.from_struct_array(rows[i].values))) for i in range(len(table))
    )
    return Preview(
        name=stream.name, columns=tuple(data.names), types=tuple(f.dataType.simpleString() for f in data.fields),
        counts=tuple(counts), heads=partitions, show=show,
    )


def head_and_count(show: int, row_type: pa.DataType, batches):
    """Worker side: one row per partition with its record count and its first ``show`` rows."""
    from pyspark import TaskContext

    count = 0
    heads = []
    for batch in batches:
        if count < show:
            heads.append(batch.column(0).slice(0, show - count))
            row_type = batch.column(0).type  # Spark's own time zone in timestamp types
        count += batch.num_rows
    rows = pa.concat_arrays(heads) if heads else pa.array([], type=row_type)
    yield pa.RecordBatch.from_arrays(
        [
            pa.array([TaskContext.get().partitionId()], type=pa.int32()),
            pa.array([count], type=pa.int64()),
            pa.ListArray.from_arrays(pa.array([0, len(rows)], type=pa.int32()), rows),
        ],
        names=[_PID, _COUNT, _ROWS],
    )


def remember(stream, computed: Preview) -> None:
    """Keep a preview for the next display of ``stream`` (the magic computes it up front)."""
    _computed[stream] = computed


def mimebundle(stream) -> dict[str, str]:
    """text/plain and text/html for a DataStream, from one preview job."""
    shown = _computed.pop(stream, None) or preview(stream)
    return {"text/plain": render_text(shown), "text/html": render_html(shown)}


# -- rendering ---------------------------------------------------------------------------


def _text(value) -> str:
    """A value as it reads in a table cell: null for None, nested records as {field: value}."""
    from ..records import Record

    if value is None:
        return "null"
    if isinstance(value, Record):
        return "{" + ", ".join(f"{n}: {_text(v)}" for n, v in zip(value._fields, value)) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_text(k)}: {_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        if value and all(type(v) is tuple and len(v) == 2 for v in value):  # an Arrow map's entries
            return "{" + ", ".join(f"{_text(k)}: {_text(v)}" for k, v in value) + "}"
        return "[" + ", ".join(_text(v) for v in value) + "]"
    if isinstance(value, (bytes, bytearray)):
        return repr(bytes(value))
    if isinstance(value, float):
        return float_text(value)  # as pandas shows it: 59.292, not 59.291999999999994
    return str(value)


def _cell(value) -> str:
    text = _text(value).replace("\n", "\\n")
    return text if len(text) <= _CELL_WIDTH else text[: _CELL_WIDTH - 1] + "…"


def _summary(shown: Preview) -> str:
    parts = len(shown.counts)
    return (
        f"DataStream {shown.name!r}: {parts} partition{'s' * (parts != 1)}, "
        f"{shown.total} record{'s' * (shown.total != 1)}"
    )


def _more(count: int, shown: int) -> str:
    return f"… {count - shown} more" if count > shown else ""


def render_text(shown: Preview) -> str:
    """The plain-text preview (terminals, logs)."""
    cells = [[[_cell(v) for v in record] for record in head] for head in shown.heads]
    widths = [len(c) for c in shown.columns]
    for head in cells:
        for row in head:
            widths = [max(w, len(c)) for w, c in zip(widths, row)]
    line = lambda values: "    " + "  ".join(v.ljust(w) for v, w in zip(values, widths)).rstrip()  # noqa: E731
    out = [_summary(shown) + "  [" + ", ".join(f"{c}: {t}" for c, t in zip(shown.columns, shown.types)) + "]"]
    for number, (count, head) in enumerate(zip(shown.counts, cells)):
        out.append(f"partition {number} ({count} record{'s' * (count != 1)})")
        if head:
            out.append(line(shown.columns))
            out.extend(line(row) for row in head)
        if count == 0:
            out.append("    (empty)")
        elif _more(count, len(head)):
            out.append("    " + _more(count, len(head)))
    return "\n".join(out)


def render_html(shown: Preview) -> str:
    """The HTML preview: one table, a row group per partition."""
    esc = html.escape
    header = "".join(f'<th title="{esc(t)}">{esc(c)}</th>' for c, t in zip(shown.columns, shown.types))
    body = []
    for number, (count, head) in enumerate(zip(shown.counts, shown.heads)):
        extra = 1 if (count == 0 or count > len(head)) else 0
        label = (
            f'<th rowspan="{len(head) + extra}" style="vertical-align:top;text-align:left">'
            f"partition {number}<br><small>{count} record{'s' * (count != 1)}</small></th>"
        )
        rows = ["".join(f"<td>{esc(_cell(v))}</td>" for v in record) for record in head]
        if extra:
            note = "(empty)" if count == 0 else _more(count, len(head))
            rows.append(f'<td colspan="{max(len(shown.columns), 1)}"><i>{esc(note)}</i></td>')
        body.append(f'<tbody style="border-top:2px solid #999"><tr>{label}{rows[0]}</tr>'
                    + "".join(f"<tr>{r}</tr>" for r in rows[1:]) + "</tbody>")
    return (
        f'<div class="fw-stream"><p><b>{esc(_summary(shown))}</b></p>'
        f"<table><thead><tr><th>partition</th>{header}</tr></thead>{''.join(body)}</table></div>"
    )
