"""The lineage of a DataStream: one Step per operator, from which the job graph is drawn."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol


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


class Stream(Protocol):
    """What a window's or a key's operations (windowed.py, keyed.py) use of the stream they apply to and
    give back: a DataStream, which makes them (it imports them; they never import it)."""

    spark: Any
    schema: Any
    step: Step

    @property
    def case_sensitive(self) -> bool: ...

    @property
    def known_partitions(self) -> int | None: ...

    def num_partitions(self) -> int: ...

    def planned_partitions(self) -> int | None: ...

    def placed_dataframe(self) -> Any: ...

    def to_dataframe(self) -> Any: ...

    def require_bounded(self, what: str) -> None: ...

    def derive(self, build, step: Step, schema=None, partitions=None, placed=None) -> Stream: ...
