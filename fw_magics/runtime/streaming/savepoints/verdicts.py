"""``fw.check_savepoint(path, stream)``: what a restore into ``stream`` would do with each of a savepoint's
keyed states, as a table, without starting anything.

The verdict is the one ``start(from_savepoint=)`` asks (``checks.state_verdict`` over ``upgrade.verdict``):
one row per state, by name: what the savepoint recorded its function declared, what ``stream``'s function
declares now, and ``carried``, ``widened``, ``new``, ``dropped`` or ``refused``. A pandas DataFrame, as a
job's metrics are (``recovery.metrics``): the notebook shows it as an HTML table. Reads the savepoint's
document and checks its files as a restore does; no Spark job runs.
"""

from __future__ import annotations

from .checks import state_verdict
from .files import SavepointError, load_savepoint
from .upgrade import COLUMNS


def check_savepoint(path, stream, allow_non_restored_state: bool = False):
    """A pandas DataFrame (``state``, ``recorded``, ``now``, ``verdict``, ``why``) of each keyed state of the
    savepoint at ``path`` against ``stream`` (the keyed stream ``.start(from_savepoint=path)`` would be called
    on), in name order. ``allow_non_restored_state``: as ``start``'s (a vanished state ``dropped``, not
    ``refused``). A savepoint or a stream this cannot judge: one line."""
    import pandas as pd

    from ....errors import ResumeError

    if type(allow_non_restored_state) is not bool:
        raise SavepointError(f"allow_non_restored_state is {allow_non_restored_state!r:.40}; accepted: True or "
                             "False")
    spec = getattr(stream, "spec", None)
    if spec is None or not getattr(spec.kind, "keyed", False):
        raise SavepointError(f"check_savepoint's stream is {type(stream).__name__}; accepted: the keyed stream a "
                             "restore would start (the object .start() is called on: key_by(...).process(fn)...)")
    savepoint = load_savepoint(path)
    try:
        upgrade = state_verdict(savepoint, spec, allow_non_restored_state, getattr(stream, "name", None))
    except ResumeError as error:
        raise SavepointError(str(error)) from None
    if upgrade is None:
        raise SavepointError(f"savepoint {savepoint.path} does not record the state its function declared (written "
                             "before fw-magics recorded it): a restore holds its states against the function as it "
                             "is, and refuses any change")
    rows = [(r.state, r.recorded, r.now, str(r.verdict), r.why) for r in upgrade.rows]
    return pd.DataFrame(rows, columns=[*COLUMNS, "why"])
