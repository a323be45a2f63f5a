"""``fw.check_savepoint(path, stream)``: what a restore into ``stream`` would do with each of a savepoint's
states, keyed and operator, as a table, without starting anything.

The verdicts are those ``start(from_savepoint=)`` asks: ``checks.state_verdict`` over ``upgrade.verdict``
for each keyed state, ``checks.operator_state_verdict`` over ``upgrade.operator_verdict`` for each operator
state of the stream's operator (a non-keyed ``process(fn)``'s, a keyed function's, a broadcast input's). One
row per state, keyed states by name, then operator states by name: what the savepoint recorded, what
``stream``'s function declares now (an operator state as "operator list state", "operator union list
state", "operator broadcast state"), and ``carried``, ``widened``, ``new``, ``dropped`` or ``refused``. A
pandas DataFrame, as a job's metrics are (``recovery.metrics``): the notebook shows it as an HTML table.
Reads the savepoint's document and checks its files as a restore does; no Spark job runs.
"""

from __future__ import annotations

from .checks import operator_state_verdict, state_verdict
from .files import SavepointError, load_savepoint
from .upgrade import COLUMNS


def check_savepoint(path, stream, allow_non_restored_state: bool = False):
    """A pandas DataFrame (``state``, ``recorded``, ``now``, ``verdict``, ``why``) of each keyed state, then each
    operator state, of the savepoint at ``path`` against ``stream`` (the stream ``.start(from_savepoint=path)``
    would be called on: keyed, or a non-keyed ``process(fn)``), each in name order.
    ``allow_non_restored_state``: as ``start``'s (a vanished state ``dropped``, not ``refused``). A savepoint
    or a stream this cannot judge: one line."""
    import pandas as pd

    from ....errors import FwMagicsError

    if type(allow_non_restored_state) is not bool:
        raise SavepointError(f"allow_non_restored_state is {allow_non_restored_state!r:.40}; accepted: True or "
                             "False")
    spec = getattr(stream, "spec", None)
    if spec is None or getattr(spec.kind, "keyed", None) is None:
        raise SavepointError(f"check_savepoint's stream is {type(stream).__name__}; accepted: the stream a restore "
                             "would start (the object .start() is called on: key_by(...).process(fn)..., or a "
                             "stream's process(fn))")
    savepoint = load_savepoint(path)
    try:
        keyed = state_verdict(savepoint, spec, allow_non_restored_state, stream.name) if spec.kind.keyed else None
        held = operator_state_verdict(savepoint, spec, stream.name, allow_non_restored_state)
    except FwMagicsError as error:  # a ResumeError, or a StateError of the operator state's modes: one line
        raise SavepointError(str(error)) from None
    if spec.kind.keyed and keyed is None:
        raise SavepointError(f"savepoint {savepoint.path} does not record the state its function declared (written "
                             "before fw-magics recorded it): a restore holds its states against the function as it "
                             "is, and refuses any change")
    rows = [r for upgrade in (keyed, held) if upgrade is not None for r in upgrade.rows]
    return pd.DataFrame([(r.state, r.recorded, r.now, str(r.verdict), r.why) for r in rows], columns=[*COLUMNS, "why"])
