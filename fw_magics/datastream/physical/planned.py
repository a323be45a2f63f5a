"""The partition count a DataFrame's plan fixes, read from Spark's optimized logical plan (no job).

``sales.repartition(3)`` has 3 partitions before anything runs: its optimized plan starts
with ``Repartition 3, true``. Walking down from the top of the plan through operators that
keep the partitioning (projections, filters, ``mapInArrow``, a sort within partitions) to a
node that fixes the count (``Repartition n``, ``RepartitionByExpression [...], n``, ``Range``
with its splits) gives that count; anything else (a file scan, a join, an aggregate, a
repartition by columns alone) leaves it unknown: ``None``.

The plan is Spark's own text (``DataFrame.explain``): one request under Spark Connect.
"""

from __future__ import annotations

import contextlib
import io
import re

_KEEP = re.compile(r"(Project|Filter|MapInArrow|MapInPandas|PythonMapInArrow|SubqueryAlias|Sort \[.*\], false)\b")
_FIXED = (
    re.compile(r"Repartition (\d+), (true|false)$"),
    re.compile(r"RepartitionByExpression \[.*\], (\d+)$"),
    re.compile(r"Range \(.*splits=Some\((\d+)\)\)$"),
)
_CHILD = re.compile(r"^(\s*)[+:]- ")


def optimized_plan(frame) -> str:
    """The optimized logical plan of ``frame``, as ``explain(mode="extended")`` prints it."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        frame.explain(mode="extended")
    text = buffer.getvalue()
    start = text.find("== Optimized Logical Plan ==")
    if start < 0:
        return ""
    end = text.find("== Physical Plan ==", start)
    return text[start:end if end >= 0 else None].split("\n", 1)[1] if "\n" in text[start:] else ""


def planned_partitions(plan: str) -> int | None:
    """The partition count the plan's top fixes, or None (see the module docstring)."""
    lines = [line for line in plan.splitlines() if line.strip()]
    depth = 0
    for index, line in enumerate(lines):
        match = _CHILD.match(line)
        node = line[match.end():] if match else line.strip()
        level = len(match.group(1)) + 3 if match else 0
        if level != depth:
            return None  # not the single child of the node above
        for fixed in _FIXED:
            found = fixed.match(node)
            if found:
                return int(found.group(1))
        if not _KEEP.match(node):
            return None
        children = [other for other in lines[index + 1:] if _CHILD.match(other)
                    and len(_CHILD.match(other).group(1)) + 3 == depth + 3]
        if len(children) != 1:
            return None  # a leaf, or several inputs
        depth += 3
    return None


def partitions_of(frame) -> int | None:
    """The partition count ``frame``'s plan fixes, or None; never fails (the plan is only a hint)."""
    try:
        return planned_partitions(optimized_plan(frame))
    except Exception:
        return None
