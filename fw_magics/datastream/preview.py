"""How a DataStream shows itself in a notebook: a preview of every partition.

One Spark job, not one per partition: each partition's first N rows (picked in the JVM
with a narrow per-partition row number) and its record count (counted in one
``mapInArrow`` pass) come back as one row per partition, empty partitions included.

A preview is bounded, whatever ``--show`` asks for: at most ``fw.options.display_max_rows``
records in all (and no more than that per partition leave Spark), and at most
``fw.options.display_max_bytes`` characters of HTML (and of text); what is left out is
counted in a last line, "… N more rows, use .to_pandas()".
"""

from __future__ import annotations

import functools
import html
import weakref
from dataclasses import dataclass

import pyarrow as pa

from ..options import options
from ..values.text import float_text

DEFAULT_SHOW = 5  # records previewed per partition
_ROW, _PID, _COUNT, _ROWS = "__fw_row", "__fw_pid", "__fw_count", "__fw_rows"
_CELL_WIDTH = 60

# A preview the magic already computed (so its errors surfaced in the cell), shown once.
_computed: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class Preview:
    """The first ``show`` records of each partition (at most ``display_max_rows`` of them, fetched
    when the preview ran) and every partition's record count."""

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
    """Run one Spark job and return the per-partition preview of ``stream``.

    No partition sends more than ``fw.options.display_max_rows`` records: no more can be shown.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from ..spark.actions import run_action
    from ..values.records import batch_records
    from ..values.schema import arrow_schema, nullable

    frame = stream.placed_dataframe()  # per partition: each subtask in its own partition
    fetch = min(show, options.display_max_rows)
    data = nullable(frame.schema)
    # monotonically_increasing_id() is (partition id << 33) + the row's index in its partition.
    index = F.monotonically_increasing_id() - F.shiftleft(F.spark_partition_id().cast("long"), 33)
    row = F.struct(*[F.col("`" + name.replace("`", "``") + "`") for name in data.names])
    heads = frame.select(F.when(index < fetch, row).alias(_ROW))
    row_type = arrow_schema(T.StructType([T.StructField(_ROW, data)])).field(_ROW).type
    out = T.StructType([
        T.StructField(_PID, T.IntegerType()), T.StructField(_COUNT, T.LongType()),
        T.StructField(_ROWS, T.ArrayType(data)),
    ])
    worker = functools.partial(head_and_count, fetch, row_type)
    table = run_action(lambda: heads.mapInArrow(worker, out).toArrow(), stream.spark).sort_by(_PID)
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
    from ..values.records import Record

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


@dataclass(frozen=True)
class _Layout:
    """What a bounded rendering shows: per listed partition, its rendered rows; and what it leaves out."""

    rows: tuple[tuple[str, ...], ...]  # one tuple per partition listed, in partition order
    left_out_rows: int  # records a full --show would have listed but the caps left out
    left_out_partitions: int  # partitions not listed at all (the byte cap)

    @property
    def shown(self) -> int:
        return sum(map(len, self.rows))


def _layout(shown: Preview, render_row, partition_size, budget_bytes: int) -> _Layout:
    """Rows within ``display_max_rows`` in all and ``budget_bytes`` of output, partition by partition.

    ``render_row(record)`` is a row's output, ``partition_size(count)`` a partition's own lines;
    the first partition is always listed, the rest while their lines fit.
    """
    rows_left = options.display_max_rows
    size, listed, full = 0, [], False
    for count, head in zip(shown.counts, shown.heads):
        overhead = partition_size(count)
        if listed and size + overhead > budget_bytes:
            break
        size += overhead
        rows = []
        for record in head[: min(shown.show, rows_left)]:
            row = render_row(record)
            if size + len(row) > budget_bytes:
                full = True
                break
            rows.append(row)
            size += len(row)
        rows_left -= len(rows)
        listed.append(tuple(rows))
        if full:
            break
    wanted = sum(min(count, shown.show) for count in shown.counts)
    taken = sum(map(len, listed))
    return _Layout(tuple(listed), wanted - taken, len(shown.counts) - len(listed))


def _cut_note(layout: _Layout, shown: Preview) -> str:
    """The last line when the caps left records out: '… N more rows, use .to_pandas()'."""
    if not layout.left_out_rows and not layout.left_out_partitions:
        return ""
    left = shown.total - layout.shown
    partitions = (f" ({layout.left_out_partitions:,} partition{'s' * (layout.left_out_partitions != 1)} not listed)"
                  if layout.left_out_partitions else "")
    return (f"… {left:,} more row{'s' * (left != 1)}{partitions}, use .to_pandas(); a preview shows at most "
            f"{options.display_max_rows:,} rows (fw.options.display_max_rows)")


def render_text(shown: Preview) -> str:
    """The plain-text preview (terminals, logs), bounded as the module docstring says."""
    widths = [len(c) for c in shown.columns]
    for head in shown.heads:
        for record in head[: options.display_max_rows]:
            widths = [max(w, len(_cell(v))) for w, v in zip(widths, record)]
    line = lambda values: "    " + "  ".join(v.ljust(w) for v, w in zip(values, widths)).rstrip()  # noqa: E731
    title = _summary(shown) + "  [" + ", ".join(f"{c}: {t}" for c, t in zip(shown.columns, shown.types)) + "]"
    layout = _layout(shown, lambda record: line([_cell(v) for v in record]) + "\n",
                     lambda count: 40 + len(line(shown.columns)), options.display_max_bytes - len(title))
    out = [title]
    for number, (count, rows) in enumerate(zip(shown.counts, layout.rows)):
        out.append(f"partition {number} ({count} record{'s' * (count != 1)})")
        if rows:
            out.append(line(shown.columns))
            out.extend(row.rstrip("\n") for row in rows)
        if count == 0:
            out.append("    (empty)")
        elif _more(count, len(rows)):
            out.append("    " + _more(count, len(rows)))
    note = _cut_note(layout, shown)
    return "\n".join(out + ([note] if note else []))


def render_html(shown: Preview) -> str:
    """The HTML preview: one table, a row group per partition, bounded as the module docstring says."""
    esc = html.escape
    header = "".join(f'<th title="{esc(t)}">{esc(c)}</th>' for c, t in zip(shown.columns, shown.types))
    layout = _layout(shown, lambda record: "<tr>" + "".join(f"<td>{esc(_cell(v))}</td>" for v in record) + "</tr>",
                     lambda count: 260 + len(header) // 4, options.display_max_bytes - 400 - len(header))
    body = []
    for number, (count, rows) in enumerate(zip(shown.counts, layout.rows)):
        extra = 1 if (count == 0 or count > len(rows)) else 0
        label = (
            f'<th rowspan="{len(rows) + extra}" style="vertical-align:top;text-align:left">'
            f"partition {number}<br><small>{count} record{'s' * (count != 1)}</small></th>"
        )
        cells = [row[len("<tr>"):-len("</tr>")] for row in rows]
        if extra:
            note = "(empty)" if count == 0 else _more(count, len(rows))
            cells.append(f'<td colspan="{max(len(shown.columns), 1)}"><i>{esc(note)}</i></td>')
        body.append(f'<tbody style="border-top:2px solid #999"><tr>{label}{cells[0]}</tr>'
                    + "".join(f"<tr>{c}</tr>" for c in cells[1:]) + "</tbody>")
    note = _cut_note(layout, shown)
    return (
        f'<div class="fw-stream"><p><b>{esc(_summary(shown))}</b></p>'
        f"<table><thead><tr><th>partition</th>{header}</tr></thead>{''.join(body)}</table>"
        + (f'<p class="fw-preview-cut"><i>{esc(note)}</i></p>' if note else "") + "</div>"
    )
