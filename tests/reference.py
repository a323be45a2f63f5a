"""A small pure-Python model of full-window semantics, to compare Spark's results with.

Partitions are lists of tuples. Non-keyed operations act on each partition separately;
keyed operations act on each key's records, wherever they are.
"""

from __future__ import annotations

import math
from collections import OrderedDict


def map_partition(partitions, fn):
    return [list(fn(iter(p))) for p in partitions]


def reduce(partitions, fn):
    out = []
    for p in partitions:
        if not p:
            out.append([])
            continue
        acc = p[0]
        for r in p[1:]:
            acc = tuple(fn(acc, r))
        out.append([acc])
    return out


def aggregate(partitions, create, add, result):
    out = []
    for p in partitions:
        acc = create()
        for r in p:
            acc = add(r, acc)
        out.append([result(acc)])
    return out


def sort_key(value, descending=False):
    """Spark's order for one column: nulls first ascending / last descending, NaN largest."""
    if value is None:
        return (0,) if not descending else (2,)
    if isinstance(value, float) and math.isnan(value):
        return (1, 1, 0.0)
    return (1, 0, value)


def sort_partition(partition, position, descending=False):
    """One correct order (ties may legally come in any order)."""
    nulls = [r for r in partition if r[position] is None]
    rest = [r for r in partition if r[position] is not None]
    rest.sort(key=lambda r: sort_key(r[position]), reverse=descending)
    return nulls + rest if not descending else rest + nulls


def by_key(records, key):
    groups: OrderedDict = OrderedDict()
    for r in records:
        groups.setdefault(key(r), []).append(r)
    return groups
