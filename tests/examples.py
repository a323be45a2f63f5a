"""How many examples a property test runs (hypothesis).

The property tests below have hand-picked cases beside them (Flink's own cases and the partitioning
cases for the stream operations' models; the graph model's and the hostile directory's hand-picked
cases; the conversion's table of values; the grammar's examples; the hand-picked key types of
tests/streaming/test_partitioned_state.py; the listed near misses the option fuzz draws from), so `make test` runs each with
``SHARE`` of the examples it was written with: ``FW_EXAMPLES`` (a share, default 0.5), at least
``least``. ``FW_EXAMPLES=1 make test`` runs every example they were written with (a deeper search that
adds about 90 s to the run on the 2-core VM).
"""

from __future__ import annotations

import os

SHARE = float(os.environ.get("FW_EXAMPLES", "0.5"))


def examples(written: int, least: int = 2) -> int:
    """``written`` examples scaled by ``SHARE``, at least ``least`` (and never more than written)."""
    return min(written, max(least, round(written * SHARE)))
