"""Two graph algorithms the regions are built with, both iterative and near-linear.

``DisjointSets`` (union-find with path halving and union by size) joins execution vertices
over pipelined connections; ``strongly_connected`` (Tarjan's algorithm, with an explicit
stack so deep graphs never hit Python's recursion limit) finds regions that depend on each
other cyclically, as Flink's ``StronglyConnectedComponentsComputeUtils`` does.
"""

from __future__ import annotations

from collections.abc import Sequence


class DisjointSets:
    """Union-find over the integers ``0 .. n-1``."""

    def __init__(self, n: int):
        self._parent = list(range(n))
        self._size = [1] * n

    def find(self, x: int) -> int:
        parent = self._parent
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return
        if self._size[ra] < self._size[rb]:
            ra, rb = rb, ra
        self._parent[rb] = ra
        self._size[ra] += self._size[rb]

    def union_range(self, start: int, stop: int) -> None:
        """Join every integer of ``range(start, stop)`` into one set."""
        for x in range(start + 1, stop):
            self.union(start, x)


def strongly_connected(successors: Sequence[Sequence[int]]) -> list[int]:
    """The strongly connected component of every node of a directed graph.

    ``successors[v]`` lists the nodes ``v`` has an edge to. Components are numbered in the
    order Tarjan's algorithm completes them (a reverse topological order of the condensation).
    """
    n = len(successors)
    index = [-1] * n
    low = [0] * n
    on_stack = [False] * n
    component = [-1] * n
    stack: list[int] = []
    counter = components = 0
    for root in range(n):
        if index[root] != -1:
            continue
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = True
        work = [(root, iter(successors[root]))]
        while work:
            node, children = work[-1]
            descended = False
            for child in children:
                if index[child] == -1:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack[child] = True
                    work.append((child, iter(successors[child])))
                    descended = True
                    break
                if on_stack[child] and index[child] < low[node]:
                    low[node] = index[child]
            if descended:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                if low[node] < low[parent]:
                    low[parent] = low[node]
            if low[node] == index[node]:
                while True:
                    member = stack.pop()
                    on_stack[member] = False
                    component[member] = components
                    if member == node:
                        break
                components += 1
    return component
