"""refusals: each attempt with the one line it was refused with, a long path as its last two parts
(the full path on hover), and an attempt that was not refused said as such."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fw_magics.errors import FullWindowError, FwMagicsError
from fw_magics.teaching.mistakes import refusals, short_paths

PART = st.text(alphabet="abcxyz019-_.", min_size=1, max_size=8).filter(lambda p: not p.endswith("."))  # a final dot ends the sentence


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([" job ", " savepoint ", " in ", "; ", " (", "): "]),
                          st.lists(PART, min_size=3, max_size=6)), min_size=0, max_size=4),
       st.sampled_from(["", " already ran", "; refused", ")"]))
def test_each_long_path_becomes_its_last_two_parts_and_nothing_else_changes(pieces, end):
    message = "".join(before + "/" + "/".join(parts) for before, parts in pieces) + end
    got = short_paths(message)
    assert [full for _, full in got if full] == ["/" + "/".join(parts) for _, parts in pieces]
    assert [text for text, full in got if full] == ["…/" + "/".join(parts[-2:]) for _, parts in pieces]
    assert "".join(full or text for text, full in got) == message  # the pieces put back: the message


def test_the_tutorials_refusals_read_as_their_reason():
    def stopped():
        raise FullWindowError("job.savepoint() needs the job's streaming query; 'orders' is in phase 'stopped'")

    def other_graph():
        raise FwMagicsError("savepoint /tmp/fw-rescale-efz3j0l2/jobs/orders/savepoints/savepoint-000001 was taken "
                            "of a different graph (operator 'process(Other)' added); restore it with its job")

    shown = refusals({"savepoint of a stopped job": stopped, "restore into another graph": other_graph,
                      "a plain start": lambda: 42})
    assert repr(shown).splitlines() == [
        "savepoint of a stopped job:",
        "    FullWindowError: job.savepoint() needs the job's streaming query; 'orders' is in phase 'stopped'",
        "restore into another graph:",
        "    FwMagicsError: savepoint …/savepoints/savepoint-000001 was taken of a different graph (operator "
        "'process(Other)' added); restore it with its job",
        "a plain start:",
        "    not refused: it returned 42"]
    assert "<code title='/tmp/fw-rescale-efz3j0l2/jobs/orders/savepoints/savepoint-000001'>…/savepoints/" \
           "savepoint-000001</code>" in shown.html
    assert len(re.findall(r"<tr><td", shown.html)) == 3


def test_another_error_is_not_a_refusal_and_keeps_its_traceback():
    with pytest.raises(ZeroDivisionError):
        refusals({"a bug": lambda: 1 / 0})
