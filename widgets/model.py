"""What the widgets show, computed without Spark or a browser.

* ``operator_info``: the attributes panel of one operator;
* ``what_if``: which subtasks restart when one fails, under region failover and restart-all;
* ``vertex_states``: each job vertex's state after a prefix of a job's event log (the live
  view during ``execute()`` and the recovery panel's timeline both use it);
* ``describe_event``: one line per event for the timeline.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from fw_magics.errors import FullWindowError
from fw_magics.failover import RestartAllStrategy, RestartPipelinedRegionStrategy
from fw_magics.graph.render import counted, node_ids, region_span
from fw_magics.recovery import events as E
from fw_magics.recovery.replay import JobState, replay

STATES = ("pending", "running", "finished", "failed", "recovered")


def operator_info(graph, name: str) -> dict:
    """Everything the attributes panel lists about one operator."""
    op = graph.operator(name)
    chain = next(c for c in graph.chains() if name in c)
    layout = graph.layout()
    inputs = [(e.source, graph.result_type(e.source, e.target), e.pattern) for e in graph.edges if e.target == name]
    outputs = [(e.target, graph.result_type(e.source, e.target), e.pattern) for e in graph.edges if e.source == name]
    return {
        "name": op.name,
        "kind": op.kind or "operator",
        "parallelism": op.parallelism,
        "output_only_after_end_of_stream": op.attributes.output_only_after_end_of_stream,
        "internal_sorter_supported": op.attributes.internal_sorter_supported,
        "chainable": op.chainable,
        "chain": list(chain),
        "regions": region_span(r + 1 for r in layout.operator_regions[name]),
        "inputs": inputs,
        "outputs": outputs,
    }


@dataclass(frozen=True)
class WhatIf:
    """The answer to "what restarts if subtask ``subtask`` of ``operator`` fails?"."""

    operator: str
    subtask: int
    region: frozenset  # (operator, subtask) restarted by region failover
    all: frozenset  # (operator, subtask) restarted by restart-all
    total: int  # execution vertices in the job

    def restarted(self, mode: str) -> frozenset:
        return self.region if mode == "region" else self.all

    def per_operator(self, mode: str) -> dict[str, int]:
        counts: dict[str, int] = {}
        for op, _ in self.restarted(mode):
            counts[op] = counts.get(op, 0) + 1
        return counts

    def sentence(self) -> str:
        region_ops = len(self.per_operator("region"))
        return (f"If {self.operator}[{self.subtask}] fails: region failover restarts "
                f"{len(self.region):,} of {self.total:,} subtasks ({region_ops:,} "
                f"operator{'' if region_ops == 1 else 's'}); restart-all restarts {len(self.all):,} of {self.total:,}.")


def what_if(graph, operator: str, subtask: int) -> WhatIf:
    """Both strategies' restart sets for one failed subtask (FLIP-1)."""
    parallelism = graph.operator(operator).parallelism
    if not 0 <= subtask < parallelism:
        raise FullWindowError(f"subtask {subtask} of {operator!r} does not exist; it has subtasks 0..{parallelism - 1}")
    failed = (operator, subtask)
    region = RestartPipelinedRegionStrategy(graph).tasks_to_restart(failed)
    everything = RestartAllStrategy(graph).tasks_to_restart(failed)
    return WhatIf(operator, subtask, frozenset(region), frozenset(everything), len(graph.execution_vertices()))


@dataclass
class VertexState:
    """One job vertex (a chain of operators) at some point of a run."""

    name: str
    operators: tuple
    parallelism: int
    state: str = "pending"
    finished: set = field(default_factory=set)
    recovered: set = field(default_factory=set)
    outputs: dict = field(default_factory=dict)  # subtask -> records out of its latest finished attempt
    tasks: tuple | None = None  # (done, total) Spark tasks of its running Spark job, when known

    @property
    def records(self) -> int:
        """Records out of the subtasks finished now (a re-run subtask counts once)."""
        return sum(self.outputs.values())

    def text(self) -> str:
        done = len(self.finished | self.recovered)
        parts = [f"{self.state} {done}/{self.parallelism}"]
        if self.records:
            parts.append(f"{self.records:,} records")
        if self.recovered:
            parts.append(f"{len(self.recovered)} recovered")
        if self.tasks is not None and self.state == "running":
            parts.append(f"Spark tasks {self.tasks[0]}/{self.tasks[1]}")
        return " · ".join(parts)


def vertex_states(graph, events, recovered=(), running=None, tasks=None) -> dict[str, VertexState]:
    """Each job vertex (``graph.job_vertices()``: "v0", "v1", ...) after ``events`` (a list of events, or
    the ``JobState`` they fold into: ``fw_magics.recovery.replay``).

    ``recovered``: (vertex, subtask) kept from an earlier run; ``running``: the vertex a live
    run has just started, if known. Without it, the first unfinished vertex whose upstream
    vertices are done counts as running while the job has not ended. ``tasks``: Spark's
    (done, total) tasks of the running vertex's Spark job, when known.
    """
    states = {v.name: VertexState(v.name, v.operators, v.parallelism) for v in graph.job_vertices()}
    job = events if isinstance(events, JobState) else replay(events)
    for (vertex, subtask), event in job.finished.items():
        if vertex in states:
            states[vertex].finished.add(subtask)
            states[vertex].outputs[subtask] = int(event.get("records_out") or 0)
    for vertex in job.failed_vertices & set(states):
        states[vertex].state = "failed"
    ended = job.last_word
    for vertex, subtask in recovered:  # kept from an earlier run: finished there, not here
        if vertex in states:
            states[vertex].finished.discard(subtask)
            states[vertex].recovered.add(subtask)
    for state in states.values():
        if len(state.finished | state.recovered) == state.parallelism and state.state != "failed":
            state.state = "recovered" if not state.finished else "finished"
    if running in states and states[running].state == "pending":
        states[running].state = "running"
        states[running].tasks = tasks
    elif running is None and ended is None and job.timeline:
        for state in states.values():
            if state.state in ("finished", "recovered"):
                continue
            if state.state == "pending":
                state.state = "running"
            break
    return states


def operator_states(graph, vertices: dict[str, VertexState]) -> dict[str, dict]:
    """The widget's per-operator view of vertex states: {operator: {"state", "text"}}."""
    return {op: {"state": v.state, "text": v.text()} for v in vertices.values() for op in v.operators}


def _moment(ms) -> str:
    from .stream_status import moment

    return moment(ms)


def describe_event(event: dict) -> str:
    """One readable line: time, type, and what it is about."""
    when = datetime.datetime.fromtimestamp(event.get("time", 0)).strftime("%H:%M:%S.%f")[:-3]
    kind = event["type"]
    about = {
        E.JOB_SUBMITTED: lambda e: f"job {e['job']!r}",
        E.VERTEX_INITIALIZED: lambda e: f"{e['vertex']}, parallelism {e['parallelism']}"
                                        + (f", reads {', '.join(e['inputs'])}" if e["inputs"] else ""),
        E.SUBTASK_FINISHED: lambda e: f"{e['vertex']}[{e['subtask']}] attempt {e['attempt']}, "
                                      f"{counted(e.get('records_out') or 0, 'record')}, "
                                      f"{counted(e.get('bytes') or 0, 'byte')}",
        E.SUBTASK_RESET: lambda e: f"{e['vertex']}[{e['subtask']}]: {e['reason']}",
        E.REGION_FAILED: lambda e: f"{e['region']} {', '.join(e['vertices']) or '(its streaming query)'}: {e['cause']}",
        E.REGION_RESTARTED: lambda e: f"{e['region']}, restarting {', '.join(e['vertices']) or 'its streaming query'}",
        E.JOB_FINISHED: lambda e: "",
        E.JOB_FAILED: lambda e: e["cause"],
        E.STREAM_STARTED: lambda e: f"{e['mode']} mode, start {e['run']}",
        E.BACKLOG_RECORDED: lambda e: _backlog_size(e.get("position") or {}),
        E.PHASE_CHANGED: lambda e: e["phase"] + (f" ({e['cause']})" if e.get("cause") else ""),
        E.SWITCH: lambda e: f"W = {_moment(e['watermark'])}, {counted(e.get('state_writes') or 0, 'state write')} "
                            "in backlog",
        E.MICRO_BATCH: lambda e: f"batch {e['batch']}, {counted(e['input_rows'], 'input row')}, "
                                 f"{counted(e['state_rows_updated'], 'state row')}",
        E.JOB_CANCELLED: lambda e: e["cause"],
    }.get(kind, lambda e: "")(event)
    return f"{when}  {kind.replace('_', ' ')}" + (f": {about}" if about else "")


def _backlog_size(position: dict) -> str:
    """"5 backlog files" (a folder) or "1,200 backlog rows" (a table)."""
    unit = "row" if "rows" in position else "file"
    size = position.get(unit + "s")
    return counted(size, f"backlog {unit}") if isinstance(size, int) and not isinstance(size, bool) else f"? backlog {unit}s"


__all__ = ["STATES", "WhatIf", "VertexState", "describe_event", "node_ids", "operator_info",
           "operator_states", "vertex_states", "what_if"]
