"""Job.overview, what the recovery panel lists: the same verdicts as Job.subtasks, bounded. No Spark.

The reference is ``Job.subtasks()`` (one row per subtask) grouped by hand: for random graphs,
random finished subtasks (some with their result file deleted) and random bounds, the overview
lists exactly the first rows of the first vertices and its counts add up to the full table's.
"""

import collections
import os
import tempfile

from hypothesis import given, settings
from hypothesis import strategies as st

from fw_magics.recovery import events, jobs
from tests.graph import reference_graph as ref
from tests.widgets.graphs import commit_file, finished, write_log


@settings(max_examples=40, deadline=None)
@given(ref.job_graphs(max_operators=5, max_parallelism=4), st.data())
def test_the_overview_lists_the_first_rows_and_counts_the_rest_as_the_full_table_does(g, data):
    vertices = g.job_vertices()
    subtasks = [(v.name, i) for v in vertices for i in range(v.parallelism)]
    done = data.draw(st.sets(st.sampled_from(subtasks)) if subtasks else st.just(set()))
    lost = data.draw(st.sets(st.sampled_from(sorted(done))) if done else st.just(set()))
    rows_per_vertex, max_vertices = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))
    with tempfile.TemporaryDirectory() as root:
        folder = os.path.join(root, "job")
        log = [events.job_submitted("job", g.to_json(), g.fingerprint())]
        log += [finished(v, i, files=[commit_file(folder, v, i)]) for v, i in sorted(done)]
        write_log(folder, log)
        for v, i in lost:
            os.remove(os.path.join(folder, "results", v, f"{i}.arrow"))
        job = jobs.read_job(folder, "job")
        full = job.subtasks()
        overview = job.overview(rows_per_vertex, max_vertices)

    by_vertex = collections.defaultdict(list)
    for row in full:
        by_vertex[row["vertex"]].append(row)
    rerun = {name: sum(not r["verdict"].startswith("keep") for r in rows) for name, rows in by_vertex.items()}
    listed, hidden = vertices[:max_vertices], vertices[max_vertices:]
    assert [group.vertex for group in overview.groups] == [v.name for v in listed]
    for group, vertex in zip(overview.groups, listed):
        assert group.rows == by_vertex[vertex.name][:rows_per_vertex]
        assert (group.subtasks, group.rerun, group.operators) == (vertex.parallelism, rerun[vertex.name],
                                                                  " + ".join(vertex.operators))
        assert group.more == max(0, vertex.parallelism - rows_per_vertex)
        assert group.more_rerun == sum(not r["verdict"].startswith("keep")
                                       for r in by_vertex[vertex.name][rows_per_vertex:])
    assert (overview.subtasks, overview.rerun) == (len(full), sum(rerun.values()))
    assert overview.keep == sum(r["verdict"].startswith("keep") for r in full)
    assert (overview.hidden, overview.hidden_subtasks, overview.hidden_rerun) == (
        len(hidden), sum(v.parallelism for v in hidden), sum(rerun[v.name] for v in hidden))
