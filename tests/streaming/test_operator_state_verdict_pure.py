"""Issue 50, without Spark: the one verdict on a savepoint's operator state against a restoring function.

``upgrade.operator_verdict`` matches the operator states a savepoint holds (name -> mode) with those the
restoring function's ``initialize_state`` asks for. A tiny model here says what each must be (Flink's rule:
the same mode carried, a state asked for and not held new, one held and not asked for carried, another mode
refused, everything of a function that keeps no operator state refused, or dropped with
``allow_non_restored_state``); on random declarations the verdict must be the model's, and it must be what
the restore itself does: the redistributed snapshots restored into stores (``restore_subtasks``) and the
function initialized over each refuse exactly what the verdict refuses, and hold every state it carries or
starts new, in that mode. Hand-picked cases pin the lines and ``checks.operator_state_verdict`` over a
savepoint's snapshots (a broadcast input's states by any name included).
"""

from __future__ import annotations

import copy
from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

import fw_magics as fw
from fw_magics.api.checkpointed import initialize_function, is_checkpointed
from fw_magics.errors.state import StateError
from fw_magics.operators.co_process import BroadcastOperator
from fw_magics.runtime.streaming.savepoints.checks import operator_state_verdict
from fw_magics.runtime.streaming.savepoints.upgrade import OPERATOR_KINDS, Change, operator_verdict
from fw_magics.state import restore_subtasks, snapshot_subtask
from tests.streaming.operator_functions import BufferingSink, Limits

MODES = ("split", "union", "broadcast")
NAMES = ("a", "b", "c", "d", "e")


class Asks(fw.ProcessFunction, fw.CheckpointedFunction):
    """A function whose ``initialize_state`` asks for each of ``modes`` (name -> mode), as a user's does."""

    schema = "x long"

    def __init__(self, modes: dict):
        self.modes = modes

    def initialize_state(self, ctx):
        ask = {"split": ctx.get_list_state, "union": ctx.get_union_list_state, "broadcast": ctx.get_broadcast_state}
        for name, mode in sorted(self.modes.items()):
            ask[mode](name)

    def snapshot_state(self, ctx):
        pass

    def process_element(self, record, ctx):
        return None


def model(recorded: dict, declared: dict | None, allow: bool) -> list[tuple]:
    """(state, verdict) per name, in name order."""
    out = []
    for name in sorted(set(recorded) | set(declared or {})):
        if declared is None:
            out.append((name, "dropped" if allow else "refused"))
        elif name not in recorded:
            out.append((name, "new"))
        elif name not in declared or declared[name] == recorded[name]:
            out.append((name, "carried"))
        else:
            out.append((name, "refused"))
    return out


modes = st.dictionaries(st.sampled_from(NAMES), st.sampled_from(MODES), max_size=4)


@st.composite
def snapshots(draw, recorded: dict):
    """Snapshots of 1 to 3 subtasks holding ``recorded``'s states (each in some of them, with a few units)."""
    p = draw(st.integers(1, 3))
    out = [{} for _ in range(p)]
    for name, mode in recorded.items():
        for subtask in draw(st.sets(st.integers(0, p - 1), min_size=1)):
            units = draw(st.lists(st.integers(0, 9), max_size=3, unique=True))
            out[subtask][name] = {"mode": mode, "units": [[u, u] for u in units] if mode == "broadcast" else units}
    return out


@settings(max_examples=150, deadline=None)
@given(st.data(), modes, st.one_of(st.none(), modes), st.booleans(), st.integers(1, 4))
def test_the_verdict_on_random_operator_states_is_the_models_and_the_restores(data, recorded, declared, allow, p_new):
    upgrade = operator_verdict(recorded, declared, allow, "process(Asks)")
    rows = [(r.state, str(r.verdict)) for r in upgrade.rows]
    assert rows == model(recorded, declared, allow)
    for r in upgrade.rows:
        assert r.recorded == OPERATOR_KINDS.get(recorded.get(r.state), "")
        assert (r.why != "") == (r.verdict is Change.REFUSED or (r.verdict is Change.CARRIED and r.now == ""))
    assert (upgrade.refusal is None) == (Change.REFUSED not in [r.verdict for r in upgrade.rows])
    assert list(upgrade.dropped) == [name for name, verdict in rows if verdict == "dropped"]
    if declared is None or not recorded:
        return
    # what the restore does: the snapshots redistributed, each store restored, the function initialized over it
    old = data.draw(snapshots(recorded))
    refused = []
    for store in restore_subtasks(old, p_new):
        try:
            initialize_function(copy.deepcopy(Asks(declared)), store)
        except StateError as error:
            refused.append(str(error))
            continue
        held = {name: entry["mode"] for name, entry in snapshot_subtask(store).items()}
        assert held == {r.state: recorded.get(r.state) or declared[r.state] for r in upgrade.rows}
    assert bool(refused) == bool(upgrade.refused)
    if refused:  # the store's own line names a state the verdict refuses
        assert any(f"state {r.state!r} is restored as a" in refused[0] for r in upgrade.refused)


def _savepoint(operator: str, held: list[dict]):
    return SimpleNamespace(path="/sp", operator_state={operator: held})


def _spec(function):
    return SimpleNamespace(function=function, checkpointed=is_checkpointed(function))


def test_hand_picked_operator_states_and_their_lines():
    buffers = [{"buffered": {"mode": "split", "units": [4]}}, {"buffered": {"mode": "split", "units": [5, 6]}}]
    same = operator_state_verdict(_savepoint("process(BufferingSink)", buffers), _spec(BufferingSink()),
                                  "process(BufferingSink)")
    assert [(r.state, r.recorded, r.now, str(r.verdict), r.why) for r in same.rows] == [
        ("buffered", "operator list state", "operator list state", "carried", "")]
    union = operator_verdict({"buffered": "split"}, {"buffered": "union", "seen": "split"}, False,
                             "process(BufferingSink)")
    assert [(r.state, r.now, str(r.verdict)) for r in union.rows] == [
        ("buffered", "operator union list state", "refused"), ("seen", "operator list state", "new")]
    assert union.refusal == (
        "holds state 'buffered' recorded as operator list state, which process(BufferingSink) asks for as operator "
        "union list state (another mode; a state keeps its mode across a restore); fw.check_savepoint(path, stream) "
        "shows every state's verdict")

    class Stateless(fw.ProcessFunction):
        schema = "x long"

        def process_element(self, record, ctx):
            return None

    gone = operator_state_verdict(_savepoint("process(BufferingSink)", buffers), _spec(Stateless()),
                                  "process(BufferingSink)")
    assert gone.refusal == (
        "holds state 'buffered' recorded as operator list state, which process(BufferingSink) no longer keeps (its "
        "function has no initialize_state and snapshot_state; allow_non_restored_state=True drops it); "
        "fw.check_savepoint(path, stream) shows every state's verdict")
    dropped = operator_state_verdict(_savepoint("process(BufferingSink)", buffers), _spec(Stateless()),
                                     "process(BufferingSink)", allow_non_restored_state=True)
    assert [str(r.verdict) for r in dropped.rows] == ["dropped"] and dropped.dropped == ("buffered",)
    assert operator_state_verdict(_savepoint("other", buffers), _spec(Stateless()), "process(BufferingSink)") is None
    # nothing held of it (a savepoint of the function before it kept operator state): what it asks for is new
    fresh = operator_state_verdict(_savepoint("other", buffers), _spec(BufferingSink()), "process(BufferingSink)")
    assert [(r.state, str(r.verdict)) for r in fresh.rows] == [("buffered", "new")]

    # a broadcast input's states are made by name in process_broadcast_element: carried as broadcast state
    rules = [{"limits": {"mode": "broadcast", "units": [["max", 12]]}, "kept": {"mode": "split", "units": [1]}}]
    limits = operator_state_verdict(_savepoint("co_process(Limits)", rules), _spec(BroadcastOperator(Limits())),
                                    "co_process(Limits)")
    assert [(r.state, r.now, str(r.verdict), r.why) for r in limits.rows] == [
        ("kept", "", "carried", "initialize_state does not ask for it: restored into the store and saved again, "
                                "as in Flink"),
        ("limits", "operator broadcast state", "carried", "")]
