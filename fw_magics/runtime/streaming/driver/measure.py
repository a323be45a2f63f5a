"""What a job measures of each micro-batch itself, for its ``micro_batch`` event: keys held, the source's lag.

The follower hands each committed micro-batch's progress to ``Measure`` before it records it
(``Follower(measure=...)``): the keys each state partition holds after it (``keyed.state_counts``)
and what its source has left to read (``Source.lag`` of each input, from the end offsets Spark
reported). Both are cheap (a few small files, a folder listing, one indexed count) and neither may
fail the job: a problem is one warning, and the figures are null.
"""

from __future__ import annotations

import json
import warnings

from ....connectors.two_inputs.carrier import is_carrier_offset
from ....errors import error_summary

LAGS = ("files_behind", "rows_behind")


def source_lag(source, root: str, progress) -> dict:
    """``files_behind`` / ``rows_behind`` after the micro-batch of ``progress``: each input's ``lag`` at the
    end offset Spark reported for it (a carrier row's left out), summed; {} when an input cannot tell."""
    try:
        ends = [json.loads(s.endOffset) for s in (progress.sources or []) if s.endOffset]
    except (TypeError, ValueError, AttributeError):
        return {}
    ends = [end for end in ends if not is_carrier_offset(end)]
    inputs = source.inputs_at(root)
    if len(ends) != len(inputs):
        return {}
    lags = [one.lag(sub, end) for (one, sub, _), end in zip(inputs, ends)]
    if not all(lags):
        return {}
    return {name: sum(lag[name] for lag in lags if name in lag) for name in LAGS if any(name in lag for lag in lags)}


class Measure:
    """``measure(progress, info)`` for a job's follower (see the module docstring)."""

    def __init__(self, job):
        self.job = job
        self._warned = False

    def __call__(self, progress, info: dict) -> dict:
        job = self.job
        try:
            found = {} if job.state_counts is None else job.state_counts.after(info["batch"])
            found.update(source_lag(job.source, job.root, progress))
            return found
        except Exception as error:  # a measure never fails the job
            if not self._warned:
                self._warned = True
                warnings.warn(f"job {job.job_name!r}: micro-batch {info['batch']}'s state rows and lag not measured "
                              f"({error_summary(error)})", stacklevel=1)
            return {}
