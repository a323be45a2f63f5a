"""Restoring a savepoint (``start(..., from_savepoint=PATH, parallelism=N)``): a new job (a new job name, a
fresh checkpoint).

``check_restorable`` refuses a savepoint of another graph, source, folder or key in one line (a savepoint is
untrusted: its checksums find damage, not a forgery), and ``prepare_restore`` lays the new job's folder out:
the splits redistributed to N source subtasks (the read files become its backlog, never read again), and the
state for the new subtasks, by the job's state kind (``StateKind.restore``) -- a keyed job's base shared into
``restored/base/`` as it is (a worker bisects each base file when their count is not N), its keyed-state file
(the keys written since) re-partitioned to N by one Spark job as the layer over it, both handed over lazily
as a backlog's are (no ``initialState``, nothing per key in Python until a key's first fresh record), the
latest rows over the base's opening its changelog (batch -2); an operator's snapshots redistributed by each
state's mode.
"""

from __future__ import annotations

import json

from ....connectors.registry import source_change
from ....errors import FullWindowError, ResumeError
from ....graph import JobGraph
from ....recovery.paths import WATERMARK
from . import graph_at, source_inputs
from .checks import operator_state_verdict
from .files import Savepoint
from .upgrade import Change, Upgrade


def check_restorable(savepoint: Savepoint, job, allow_non_restored_state: bool = False) -> tuple:
    """Refuse in one line a savepoint taken of another graph, source, folder, key or output (the
    restart's rule, parallelism aside): whatever it names is compared with the job it restores; its
    operator's operator state and its keyed states are held against the function's by
    ``operator_state_verdict`` and ``state_verdict``, whose ``Upgrade``s are returned: (the keyed states' (None:
    an operator job's, or a savepoint that records no declared state), the operator state's (None: none held
    or kept))."""
    where = f"savepoint {savepoint.path}"
    try:
        old = graph_at(JobGraph.from_json(savepoint.document["graph"]), job.parallelism)
    except FullWindowError as error:
        raise ResumeError(f"{where} has an unreadable job graph ({error})") from None
    changes = old.diff(job.graph)
    if changes:
        raise ResumeError(f"{where} was taken of a different graph ({'; '.join(changes)}); restore it with the "
                          "job it was taken of")
    source = job.source.describe()
    change = source_change(savepoint.document["source"], source)
    if change is not None:
        raise ResumeError(f"{where} was taken of another source: {change}")
    elsewhere = job.source.same_place(savepoint.manifest)
    if elsewhere is not None:
        raise ResumeError(f"{where} {elsewhere}; restore it with the job it was taken of")
    operator = job.stateful.step.name
    held = operator_state_verdict(savepoint, job.spec, operator, allow_non_restored_state)
    if held is not None and held.refusal is not None:
        raise ResumeError(f"{where} {held.refusal}")
    return job.state_kind.check(savepoint, job, where, allow_non_restored_state), held


def prepare_restore(savepoint: Savepoint, job, upgrade: Upgrade | None = None, held: Upgrade | None = None) -> dict:
    """Lay out the fresh folder of ``job`` restored at its parallelism: the source's position (a folder's
    splits redistributed, a table's greatest key read), and its state (``upgrade``, ``held``: what
    ``check_restorable`` returned). Returns the switch event's details (states dropped and widened among
    them, operator states dropped)."""
    details = []
    for name, source, root, own in source_inputs(job, savepoint.manifest):
        snapshots = savepoint.operator_state.get(name)
        if snapshots is None:
            raise ResumeError(f"savepoint {savepoint.path} has no state for the source {name!r}")
        details.append(source.restore_position(root, snapshots, own, job.parallelism))
    source_detail = job.source.joined(details)
    doc = savepoint.document
    if "tops" in doc or doc.get("top") is not None:  # the time read before the restored stream, as a backlog's
        job.storage.write_bytes(job.storage.path(WATERMARK), json.dumps(
            {"watermark": doc["watermark"], "max_event_time": doc.get("top"),
             **({"tops": doc["tops"]} if "tops" in doc else {})}).encode())
    state_detail = job.state_kind.restore(savepoint, job.storage, job, upgrade)
    detail = {"restored_from": savepoint.path, "restored_parallelism": savepoint.parallelism, **source_detail}
    if upgrade is not None:
        changed: dict = {}
        for row in upgrade.rows:  # in name order
            if row.verdict is not Change.CARRIED:
                changed.setdefault(f"states_{row.verdict}", []).append(row.state)
        detail.update(sorted(changed.items()))
    if held is not None and held.dropped:
        detail["operator_states_dropped"] = list(held.dropped)
    detail.update(state_detail)
    return detail


