"""A small, deliberately naive reference model of the job graph rules, and random graphs.

Everything is recomputed from the operators and edges alone, the literal way: Flink's
pointwise loops, chains as connected components of chainable edges, regions by
breadth-first search over explicit vertex-level connections, cyclic region dependencies by
mutual reachability, and Flink's region failover walk over the explicit connections. The
model under test must agree with it on every random graph.
"""

from __future__ import annotations

from collections import deque

from hypothesis import strategies as st

from fw_magics.graph import JobGraph, OperatorAttributes


@st.composite
def job_graphs(draw, max_operators: int = 6, max_parallelism: int = 5) -> JobGraph:
    """A random acyclic job graph; operators are added in a random order."""
    n = draw(st.integers(1, max_operators))
    rank = draw(st.permutations(range(n)))  # edges only go from lower to higher rank
    g = JobGraph(mode=draw(st.sampled_from(["streaming", "batch"])),
                 chaining=draw(st.sampled_from([True, True, False])))
    for k in range(n):  # biased towards equal parallelism and chainable, so that chains are common
        g.add_operator(
            f"o{k}", draw(st.sampled_from([2, 2, 2, 1, 3, max_parallelism])),
            attributes=OperatorAttributes(draw(st.booleans()), draw(st.booleans())),
            chainable=draw(st.sampled_from([True, True, True, False])),
            kind=draw(st.sampled_from([None, "map", "sort_partition"])),
        )
    by_rank = sorted(range(n), key=lambda k: rank[k])
    # half the time a lineage, as fw-magics streams build it: each operator reads the one before
    linear = draw(st.sampled_from([True, False]))
    for position, target in enumerate(by_rank[1:], start=1):
        count = min(position, draw(st.sampled_from([1, 1, 1, 0, 2, 3])))
        sources = ({by_rank[position - 1]} if linear else
                   draw(st.sets(st.sampled_from(by_rank[:position]), min_size=count, max_size=count)))
        for source in sorted(sources):
            g.connect(f"o{source}", f"o{target}", draw(st.sampled_from(["pointwise", "pointwise", "all_to_all"])),
                      draw(st.sampled_from([None, None, None, "pipelined", "blocking"])))
    return g


def flink_pointwise_pairs(p: int, q: int) -> set[tuple[int, int]]:
    """(producer, consumer) subtask pairs, written as Flink's connectPointwise loops are."""
    if p == q:
        return {(i, i) for i in range(p)}
    pairs = set()
    if p > q:
        for j in range(q):
            pairs |= {(i, j) for i in range(j * p // q, (j + 1) * p // q)}
    else:
        for i in range(p):
            pairs |= {(i, j) for j in range((i * q + p - 1) // p, ((i + 1) * q + p - 1) // p)}
    return pairs


def chains(g: JobGraph) -> tuple[set[frozenset], set[tuple[str, str]]]:
    """The chains as sets of operators (components over chainable edges), and those edges."""
    outs = {o.name: 0 for o in g.operators}
    ins = dict(outs)
    for e in g.edges:
        outs[e.source] += 1
        ins[e.target] += 1
    ops = {o.name: o for o in g.operators}
    links = [e for e in g.edges
             if g.chaining and e.pattern == "pointwise" and e.result != "blocking"
             and ops[e.source].chainable and ops[e.target].chainable
             and ops[e.source].parallelism == ops[e.target].parallelism
             and outs[e.source] == 1 and ins[e.target] == 1]
    return _components(list(ops), [(e.source, e.target) for e in links]), {(e.source, e.target) for e in links}


def result_types(g: JobGraph) -> dict[tuple[str, str], str]:
    groups, chained = chains(g)
    ends_only = {o.name: o.attributes.output_only_after_end_of_stream for o in g.operators}
    group_of = {name: group for group in groups for name in group}
    types = {}
    for e in g.edges:
        if (e.source, e.target) in chained:
            types[(e.source, e.target)] = "chained"
        elif e.result is not None:
            types[(e.source, e.target)] = e.result
        elif any(ends_only[n] for n in group_of[e.source]) or g.mode == "batch":
            types[(e.source, e.target)] = "blocking"
        else:
            types[(e.source, e.target)] = "pipelined"
    return types


def connections(g: JobGraph) -> set[tuple[tuple[str, int], tuple[str, int], str]]:
    """Every vertex-level connection (producer, consumer, result type)."""
    types = result_types(g)
    par = {o.name: o.parallelism for o in g.operators}
    found = set()
    for e in g.edges:
        p, q = par[e.source], par[e.target]
        pairs = ({(i, j) for i in range(p) for j in range(q)} if e.pattern == "all_to_all"
                 else flink_pointwise_pairs(p, q))
        found |= {((e.source, i), (e.target, j), types[(e.source, e.target)]) for i, j in pairs}
    return found


def regions(g: JobGraph) -> dict[tuple[str, int], frozenset]:
    """Each vertex's region: pipelined components, merged where they reach each other by blocking edges."""
    vertices = [(o.name, i) for o in g.operators for i in range(o.parallelism)]
    links = connections(g)
    raw = _components(vertices, [(u, v) for u, v, kind in links if kind != "blocking"])
    raw_of = {v: r for r in raw for v in r}
    after = {r: set() for r in raw}
    for u, v, kind in links:
        if kind == "blocking" and raw_of[u] != raw_of[v]:
            after[raw_of[u]].add(raw_of[v])
    reach = {r: _reachable(r, after) for r in raw}
    merged = {}
    for r in raw:
        together = frozenset().union(*(s for s in raw if s in reach[r] and r in reach[s]))
        for v in together:
            merged[v] = together
    return merged


def restart_set(g: JobGraph, failed, unavailable) -> set[tuple[str, int]]:
    """Flink's RestartPipelinedRegionFailoverStrategy walk, over explicit connections."""
    region = regions(g)
    links = connections(g)
    lost = set(unavailable)
    visited, queue = {region[failed]}, deque([region[failed]])
    while queue:
        current = queue.popleft()
        for u, v, _ in links:
            if v in current and u in lost and region[u] not in visited:
                visited.add(region[u])
                queue.append(region[u])
            if u in current and region[v] not in visited:
                visited.add(region[v])
                queue.append(region[v])
    return set().union(*visited)


def _components(nodes, pairs) -> set[frozenset]:
    neighbours = {n: set() for n in nodes}
    for a, b in pairs:
        neighbours[a].add(b)
        neighbours[b].add(a)
    seen, found = set(), set()
    for n in nodes:
        if n not in seen:
            group = _reachable(n, neighbours)
            seen |= group
            found.add(frozenset(group))
    return found


def _reachable(start, successors) -> set:
    seen, stack = {start}, [start]
    while stack:
        for nxt in successors[stack.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen
