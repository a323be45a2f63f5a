"""Pipelined regions (FLIP-1), computed in time linear in vertices plus edges.

Execution vertices joined by chained or pipelined connections form one region (union-find);
regions that depend on each other cyclically through blocking edges are merged (strongly
connected components, as Flink's SchedulingPipelinedRegionComputeUtil does). An all-to-all
edge is never expanded into its p x q pairs: it is one hub node in the region graph.
"""

from __future__ import annotations


class _UnionFind:
    def __init__(self, n: int):
        self.parent = list(range(n))

    def find(self, x: int) -> int:
        parent = self.parent
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            if ra < rb:
                self.parent[rb] = ra
            else:
                self.parent[ra] = rb


def pointwise_pairs(p: int, q: int):
    """Flink's pointwise connection between parallelisms p and q: contiguous ranges."""
    if p == q:
        return [(i, i) for i in range(p)]
    pairs = []
    if p > q:
        for j in range(q):
            pairs.extend((i, j) for i in range(j * p // q, (j + 1) * p // q))
    else:
        for i in range(p):
            pairs.extend((i, j) for j in range(i * q // p, (i + 1) * q // p))
    return pairs


def compute_regions(graph) -> list[frozenset]:
    order = graph.topological_order()
    offset, total = {}, 0
    for name in order:
        offset[name] = total
        total += graph.operator(name).parallelism
    names = [name for name in order for _ in range(graph.operator(name).parallelism)]
    subtask = [i for name in order for i in range(graph.operator(name).parallelism)]

    uf = _UnionFind(total)
    blocking = []
    for edge in graph.edges:
        kind = graph.result_type(edge.source, edge.target)
        p, q = graph.operator(edge.source).parallelism, graph.operator(edge.target).parallelism
        a, b = offset[edge.source], offset[edge.target]
        if kind == "blocking":
            blocking.append((edge, a, b, p, q))
        elif edge.pattern == "all_to_all":
            for i in range(p):
                uf.union(a, a + i)
            for j in range(q):
                uf.union(a, b + j)
        else:
            for i, j in pointwise_pairs(p, q):
                uf.union(a + i, b + j)

    # Regions, then the region graph over blocking edges (all-to-all edges as hub nodes).
    root_index: dict[int, int] = {}
    region_of = [0] * total
    for v in range(total):
        root = uf.find(v)
        region_of[v] = root_index.setdefault(root, len(root_index))
    count = len(root_index)
    successors: list[set] = [set() for _ in range(count)]
    for edge, a, b, p, q in blocking:
        if edge.pattern == "all_to_all":
            hub = len(successors)
            successors.append({region_of[b + j] for j in range(q)})
            for i in range(p):
                successors[region_of[a + i]].add(hub)
        else:
            for i, j in pointwise_pairs(p, q):
                successors[region_of[a + i]].add(region_of[b + j])

    component = _strongly_connected(successors)
    merged: dict[int, list] = {}
    for v in range(total):
        merged.setdefault(component[region_of[v]], []).append((names[v], subtask[v]))
    return [frozenset(vs) for vs in sorted(merged.values(), key=lambda vs: offset[vs[0][0]] + vs[0][1])]


def _strongly_connected(successors: list[set]) -> list[int]:
    """Iterative Tarjan: the component id of every node (no recursion limit)."""
    n = len(successors)
    index = [-1] * n
    low = [0] * n
    on_stack = [False] * n
    component = [-1] * n
    stack: list[int] = []
    counter = 0
    comp_id = 0
    for start in range(n):
        if index[start] != -1:
            continue
        work = [(start, iter(successors[start]))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack[start] = True
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if index[child] == -1:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack[child] = True
                    work.append((child, iter(successors[child])))
                    advanced = True
                    break
                if on_stack[child]:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                while True:
                    member = stack.pop()
                    on_stack[member] = False
                    component[member] = comp_id
                    if member == node:
                        break
                comp_id += 1
    return component
