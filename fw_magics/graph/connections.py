"""How the subtasks of two connected operators are wired, as Flink wires them.

An all-to-all edge connects every producer subtask with every consumer subtask. A pointwise
edge connects contiguous ranges, exactly as Flink's ``EdgeManagerBuildUtil.connectPointwise``:

* equal parallelism: subtask ``i`` feeds subtask ``i``;
* more producers than consumers (``p > q``): consumer ``j`` reads producers
  ``[j*p // q, (j+1)*p // q)``;
* fewer producers than consumers (``p < q``): producer ``i`` feeds consumers
  ``[ceil(i*q / p), ceil((i+1)*q / p))``.

Each function answers for one subtask in O(1) (plus the size of the answer), so nothing
here ever materialises the p x q pairs of a large edge.
"""

from __future__ import annotations


def pointwise_consumers(i: int, p: int, q: int) -> range:
    """Consumer subtasks fed by producer subtask ``i`` of a pointwise edge ``p -> q``."""
    if p == q:
        return range(i, i + 1)
    if p > q:
        j = ((i + 1) * q - 1) // p  # the one consumer whose range holds i
        return range(j, j + 1)
    return range(-(-i * q // p), -(-(i + 1) * q // p))


def pointwise_producers(j: int, p: int, q: int) -> range:
    """Producer subtasks read by consumer subtask ``j`` of a pointwise edge ``p -> q``."""
    if p == q:
        return range(j, j + 1)
    if p > q:
        return range(j * p // q, (j + 1) * p // q)
    i = j * p // q  # the one producer whose range holds j
    return range(i, i + 1)


def consumers(pattern: str, i: int, p: int, q: int) -> range:
    """Consumer subtasks fed by producer subtask ``i`` over an edge of this pattern."""
    return range(q) if pattern == "all_to_all" else pointwise_consumers(i, p, q)


def producers(pattern: str, j: int, p: int, q: int) -> range:
    """Producer subtasks read by consumer subtask ``j`` over an edge of this pattern."""
    return range(p) if pattern == "all_to_all" else pointwise_producers(j, p, q)
