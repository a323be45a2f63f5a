"""The lineage of a DataStream: one Step per operator, from which the job graph is drawn."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True, eq=False)
class Step:
    """One operator of a stream's lineage (sources have no parent)."""

    name: str  # what a user recognises: "records", "sort_partition(price desc)"
    kind: str  # source | map_partition | sort_partition | aggregate | reduce
    parallelism: int | None  # None: not known without running a job
    parent: Step | None = None
    keyed_by: tuple[str, ...] | None = None  # the incoming edge is a hash exchange on these keys
    output_only_after_end_of_stream: bool = False
    internal_sorter_supported: bool = False
    detail: dict = field(default_factory=dict)
    # transform(frame, partitions) -> frame: this operator applied to its input DataFrame
    # (``partitions`` is a zero-argument callable giving the input's partition count).
    transform: Callable | None = field(default=None, repr=False)

    def lineage(self) -> list[Step]:
        """This step and its ancestors, source first."""
        steps: list[Step] = []
        step: Step | None = self
        while step is not None:
            steps.append(step)
            step = step.parent
        return steps[::-1]
