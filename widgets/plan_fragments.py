"""The Spark plan fragment each operator of a DataStream runs: its part of the physical plan."""

from __future__ import annotations

import contextlib
import functools
import io
import re

_TREE = re.compile(r"^[\s:+\-]*")
_IDS = re.compile(r"#\d+L?|\*\(\d+\)\s*|,?\s*\[plan_id=\d+\]")  # ids, codegen stage and plan numbers


def _explain(frame) -> list[str]:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        frame.explain()
    return [line for line in buffer.getvalue().splitlines() if line.strip() and not line.startswith("==")]


def _normal(line: str) -> str:
    return _IDS.sub("", _TREE.sub("", line)).strip()


def plan_fragments(stream, graph) -> dict[str, str]:
    """{operator: the physical-plan lines it adds to its input's plan}, for every operator.

    The frames are built once, each on top of the previous one, so the plans share their
    expression ids and the difference is exactly what the operator added. Planning runs no
    Spark job.
    """
    from fw_magics.datastream.job_graph import operator_names

    steps = stream.step.lineage()
    names = operator_names(steps)
    fragments: dict[str, str] = {}
    frame, previous, partitions = None, set(), None
    for step, name in zip(steps, names):
        frame = step.transform(frame, partitions)
        partitions = functools.partial(int, graph.operator(name).parallelism)
        lines = _explain(frame)
        new = [line for line in lines if _normal(line) not in previous]
        fragments[name] = "\n".join(new) or "(no plan nodes of its own: Spark fused it with its input)"
        previous = {_normal(line) for line in lines}
    return fragments
