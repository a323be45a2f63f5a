"""%fw_graph, %fw_recover and %%fullwindow --graph through a real IPython InteractiveShell."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

import fw_magics as fw
from fw_magics.datastream.job_graph import build_graph
from fw_magics.magics.grammar import FLAGS, Command, Sort, parse
from fw_magics.widgets import GraphView, RecoveryPanel
from tests.magics.conftest import ok, run
from tests.magics.test_grammar import commands

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def usage_error(shell, source: str) -> str:
    result = run(shell, source)
    assert isinstance(result.error_in_exec, UsageError), repr(result.error_in_exec or result.error_before_exec)
    message = str(result.error_in_exec)
    assert "\n" not in message
    return message


def widget_ids(outputs) -> list[str]:
    """The model ids of the widgets a cell displayed."""
    return [o.data[WIDGET_MIME]["model_id"] for o in outputs if WIDGET_MIME in o.data]


# -- the grammar (pure) --------------------------------------------------------------------


def test_graph_is_a_flag_and_reads_back():
    assert "--graph" in FLAGS
    command = parse("sort field=price desc --graph -o top")
    assert command == Command((Sort((("price", "desc"),)),), output="top", graph=True)
    assert str(command) == "sort field=price desc -o top --graph" and parse(str(command)) == command
    assert parse("sort field=price").graph is False


@pytest.mark.parametrize("line, message", [
    ("sort field=a --graph=yes", "--graph takes no value"),
    ("sort field=a --graph --graph", "--graph given twice"),
    ("sort field=a --grahp", "did you mean '--graph'?"),
])
def test_graph_flag_mistakes_are_one_line(line, message):
    with pytest.raises(UsageError, match=message):
        parse(line)


@settings(max_examples=150, deadline=None)
@given(commands, st.booleans())
def test_commands_with_or_without_graph_read_back(command, graph):
    command = Command(command.stages, command.key, command.output, command.show, command.explain, graph, command.input, command.silent)
    assert parse(str(command)) == command


# -- through the shell ---------------------------------------------------------------------

@pytest.mark.spark
def test_fw_graph_shows_a_streams_graph(shell):
    ok(shell, "ranked = orders.full_window_partition().sort_partition('price')")
    view = ok(shell, "%fw_graph ranked")
    assert isinstance(view, GraphView) and view.graph.chains() == [["records", "sort_partition(price asc)"]]
    assert {o.name for o in view.graph.operators} == set(view.canvas.operators.values())
    assert ok(shell, "%fw_graph  ranked ").graph == view.graph  # spaces around the name are fine


@pytest.mark.spark
def test_fw_graph_of_a_job_graph(shell):
    ok(shell, "from fw_magics.graph import JobGraph\njg = JobGraph()\njg.add_operator('a', 2);")
    view = ok(shell, "%fw_graph jg")
    assert isinstance(view, GraphView) and view.graph is shell.user_ns["jg"]


@pytest.mark.spark
def test_fw_graph_mistakes_are_one_line(shell):
    assert usage_error(shell, "%fw_graph ordrs") == "%fw_graph ordrs: no such variable; did you mean 'orders'?"
    assert usage_error(shell, "%fw_graph zzqqxx") == "%fw_graph zzqqxx: no such variable"
    shell.user_ns["answer"] = 42
    assert usage_error(shell, "%fw_graph answer") == (
        "cannot draw a int; accepted: a DataStream, a JobResult, a streaming job (start()) or a JobGraph")
    assert "needs one variable name" in usage_error(shell, "%fw_graph orders ranked")
    assert "needs one variable name" in usage_error(shell, "%fw_graph")


def test_fw_savepoint_mistakes_are_one_line(shell):
    assert usage_error(shell, "%fw_savepoint ordrs") == "%fw_savepoint ordrs: no such variable; did you mean 'orders'?"
    assert usage_error(shell, "%fw_savepoint orders") == (
        "%fw_savepoint orders: a DataStream, not a streaming job (what .start() returns)")
    assert "needs one variable name" in usage_error(shell, "%fw_savepoint")
    assert "%fw_savepoint JOB" in shell.find_line_magic("fw_savepoint").__doc__


@pytest.mark.spark
def test_fw_recover_opens_the_panel_on_a_directory(shell, tmp_path):
    panel = ok(shell, f"%fw_recover {tmp_path}")
    assert isinstance(panel, RecoveryPanel) and panel.job_dir == str(tmp_path)
    assert panel.namespace is shell.user_ns  # Resume looks for the job's stream in the notebook
    assert ok(shell, f"%fw_recover '{tmp_path}'").job_dir == str(tmp_path)


@pytest.mark.spark
def test_fw_recover_on_a_missing_directory_is_a_usage_error(shell, tmp_path):
    missing = tmp_path / "nowhere"
    assert usage_error(shell, f"%fw_recover {missing}") == f"%fw_recover {missing}: no such directory"


@pytest.mark.spark
def test_fullwindow_graph_displays_the_graph_view(shell, monkeypatch):
    from fw_magics.magics import magic

    shown = []
    real = magic.display
    monkeypatch.setattr(magic, "display", lambda obj, **kw: (shown.append(obj), real(obj, **kw)))
    with capture_output() as captured:
        ok(shell, "%%fullwindow sort field=price desc --graph -o graphed\norders;")  # ; : no preview job
    result = shell.user_ns["graphed"]
    views = [obj for obj in shown if isinstance(obj, GraphView)]
    assert len(views) == 1 and isinstance(result, fw.DataStream)
    assert widget_ids(captured.outputs) == [views[0].model_id]  # the notebook receives the widget itself
    assert views[0].graph == build_graph(result) and views[0]._stream is result
    assert [o.name for o in views[0].graph.operators] == ["records", "sort_partition(price desc)"]
    shown.clear()
    with capture_output() as captured:
        ok(shell, "%%fullwindow sort field=price desc\norders;")
    assert shown == [] and widget_ids(captured.outputs) == []  # no --graph, no graph view


@pytest.mark.spark
def test_any_error_of_the_family_is_one_usage_error_line(shell, monkeypatch):
    # Without Graphviz the view cannot be drawn: GraphvizNotFound, an FwMagicsError but no
    # FullWindowError, still reaches the notebook as one line, and nothing is bound.
    from fw_magics.graph import render

    monkeypatch.setattr(render.shutil, "which", lambda name: None)
    shell.user_ns.pop("undrawn", None)
    message = usage_error(shell, "%%fullwindow sort field=price --graph -o undrawn\norders;")
    assert message.startswith("Graphviz's 'dot' is not installed") and "undrawn" not in shell.user_ns
    assert usage_error(shell, "%fw_graph orders").startswith("Graphviz's 'dot' is not installed")


@pytest.mark.spark
def test_unload_removes_the_widget_magics(shell):
    ok(shell, "%unload_ext fw_magics")
    try:
        for name in ("fw_graph", "fw_recover", "fullwindow"):
            assert name not in shell.magics_manager.magics["line"]
        assert run(shell, "%fw_graph orders").error_in_exec is not None
    finally:
        ok(shell, "%load_ext fw_magics")
    assert isinstance(ok(shell, "%fw_graph orders"), GraphView)


@pytest.mark.spark
def test_unload_removes_every_magic_and_load_brings_them_back(shell):
    from fw_magics.magics.magic import FullWindowMagics
    from fw_magics.magics.stream_magic import StreamMagics

    ours = [(kind, name) for magics in (FullWindowMagics, StreamMagics) for kind, names in magics.magics.items()
            for name in names]
    assert ("line", "fw_savepoint") in ours and ("cell", "fwstream") in ours
    ok(shell, "%unload_ext fw_magics")
    try:
        assert "fw_savepoint" not in shell.magics_manager.magics["line"]
        assert [(kind, name) for kind, name in ours if name in shell.magics_manager.magics[kind]] == []
        assert run(shell, "%fw_savepoint orders").error_in_exec is not None
    finally:
        ok(shell, "%load_ext fw_magics")
    assert all(name in shell.magics_manager.magics[kind] for kind, name in ours)
    assert usage_error(shell, "%fw_savepoint ordrs") == "%fw_savepoint ordrs: no such variable; did you mean 'orders'?"


@pytest.mark.extended  # make test-extended (CI): a streaming job and its restore
@pytest.mark.spark
def test_fw_savepoint_of_a_running_job_prints_its_path_and_the_savepoint_restores(shell, tmp_path):
    """The happy path: a real job started in the shell, %fw_savepoint shows the path, the files are
    there and start(from_savepoint=...) restores it at another parallelism with every record once."""
    import os

    from fw_magics.runtime.streaming.savepoints.files import FILES, load_savepoint
    from tests.streaming.files import Area, expected_latest, model

    area = Area(tmp_path)
    backlog, fresh = [[(1, 2, 1), (2, 3, 2)], [(1, 4, 3)]], [(1, 5, 10), (2, 6, 11)]
    for rows in backlog:
        area.write(rows)
    shell.user_ns["SRC"], shell.user_ns["JOBS"] = area.source(), area.jobs
    ok(shell, "from tests.streaming import functions\n"
              "op = fw.from_files(SRC, 'parquet', functions.SCHEMA, event_time='ts').key_by('k')"
              ".aggregate(functions.CountSum())\n"
              "job = op.start(job_dir=JOBS, job_name='sp', trigger='100 milliseconds', parallelism=2)\n"
              "job.process_all_available();")
    try:
        with capture_output() as out:
            result = run(shell, "%fw_savepoint job")
        assert result.success, repr(result.error_in_exec)
        path = result.result
        assert path == os.path.join(area.jobs, "sp", "savepoints", "savepoint-000001") and path in out.stdout
        assert sorted(os.listdir(path)) == sorted(FILES + ("savepoint.json", "base"))  # base: the shared backlog files
        assert load_savepoint(path).parallelism == 2
        assert shell.user_ns["job"].phase == "stream"  # it keeps running
    finally:
        ok(shell, "job.stop()")
    shell.user_ns["SAVEPOINT"] = path
    ok(shell, "job2 = op.start(job_dir=JOBS, job_name='sp3', from_savepoint=SAVEPOINT, parallelism=3, "
              "trigger='100 milliseconds')\njob2.process_all_available();")
    try:
        area.write(fresh)  # every key: latest() of the restored job has them all
        ok(shell, "job2.process_all_available();")
        latest = ok(shell, "job2.latest()")
    finally:
        ok(shell, "job2.stop()")
    got = {(int(r.k),): (int(r.k), int(r.n), int(r.total)) for r in latest.itertuples(index=False)}
    assert got == expected_latest(model("aggregate", 0, backlog, [fresh]), "aggregate")
