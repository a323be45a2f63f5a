"""The ``%%fullwindow`` / ``%fullwindow`` magics and the ``%load_ext fw_magics`` hooks."""

from __future__ import annotations

import os

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class, no_var_expand
from IPython.display import display

from ..datastream import preview
from . import build, grammar
from .cells import cell_number, magic_input, user_errors, variable
from .words import quoted, shortened


@magics_class
class FullWindowMagics(Magics):
    """Full-window processing (FLIP-380) of Spark partitions from a notebook cell."""

    @no_var_expand
    @line_cell_magic
    def fullwindow(self, line: str, cell: str | None = None):
        """Full-window processing of each partition (or each key) of a Spark DataFrame,
        a pandas DataFrame or an fw-magics DataStream, run by Spark.

        Cell form: the value of the cell's last expression is the input.

            %%fullwindow OP ARGS [| OP ARGS ...] [key=COL[,COL...]] [-o NAME] [--show N] [--explain]
            <Python code; its last expression is the input>

        Line form: the input is a variable.

            %fullwindow OP ARGS [| OP ARGS ...] --in NAME [key=...] [-o NAME] [--show N] [--explain]

        Operations (piped with |, each stage is a full window over the previous stage's output):

            sort field=F [asc|desc] [field=F2 [asc|desc] ...]   F: 0-based position or column name; asc is the default
            map fn=FN [schema="DDL"]                            FN(records) yields records, once per partition
            reduce fn=FN                                        FN(a, b) -> record; the first record is the seed
            aggregate fn=FN [schema="DDL"]                      FN: an fw.AggregateFunction instance or class
            aggregate sum(c) count() min(c) max(c) avg(c) ...   Spark built-in aggregates, one output column each

            FN is a function in the notebook (top3, mymodule.top3) or a quoted lambda: fn="lambda rs: ...".
            The schema defaults to the input's. Quote a value that has spaces: schema="customer string, total double".

        Options:

            key=COL[,COL...]   every stage works per key instead of per partition
            -o NAME            also bind the result to NAME
            --show N           preview N records per partition (default 5; 0 shows the counts only); a
                               preview shows at most fw.options.display_max_rows records in all (1,000)
            --explain          also show the same job as Python API calls, as plain PySpark, and Spark's physical plan
            --graph            also show the interactive job graph (see %fw_graph)
            --in NAME          the line form's input: a variable

        The result is a DataStream. It is the cell's value, shown as a preview of every partition
        (its record count and first records, computed in one Spark job) and bound to _. End the
        cell (or the line) with ; to skip the preview: then nothing runs until you read the result.
        A mistake in the line is reported in one line naming the bad word, and nothing runs. An
        error in your own function shows its traceback, cut to your code.

        Examples (each block is one cell, run in order):

            import fw_magics as fw
            orders = fw.from_records(
                [(1, "ada", 4.5, 2), (2, "grace", 3.0, 1), (3, "ada", 5.25, 4), (4, "linus", 2.75, 3)],
                "id long, customer string, price double, qty int", partitions=2)

            %%fullwindow sort field=price desc
            orders

            %fullwindow sort field=customer field=2 desc --in orders --show 1

            %%fullwindow aggregate sum(qty) count() max(price) key=customer
            orders

            %%fullwindow map fn=biggest schema="id long, revenue double" -o top
            def biggest(records):
                best = max(records, key=lambda r: r.price * r.qty, default=None)
                if best is not None:
                    yield (best.id, best.price * best.qty)
            orders

            %fullwindow reduce fn="lambda a, b: a if a.qty >= b.qty else b" --in orders

            %%fullwindow aggregate fn=Revenue key=customer
            class Revenue(fw.AggregateFunction):
                schema = "revenue double"
                def create_accumulator(self):
                    return 0.0
                def add(self, record, total):
                    return total + record.price * record.qty
                def get_result(self, total):
                    return total
            orders

            %%fullwindow sort field=price desc | map fn=biggest schema="id long, revenue double" --explain
            orders.to_dataframe()
        """
        command = grammar.parse(line)
        shell = self.shell
        value, expression, quiet = magic_input(
            shell, "fullwindow", command.input, cell,
            f"the %%fullwindow cell must end with an expression giving the input ({build.ACCEPTED_INPUT})")
        silent = command.silent or quiet
        what = f"--in {command.input}" if cell is None else f"the cell's last expression ({expression})"
        with user_errors(shell):
            source = build.as_stream(value, what)
            built = build.build(command, source, shell.user_ns, self._cache_source)
            result = built.result
            if command.explain:
                magic = "%fullwindow" if cell is None else "%%fullwindow"
                display(self._explanation(f"{magic} {command}", built, expression, value), raw=True)
            if command.graph:
                display(_graph_view(result))
            if not silent:
                preview.remember(result, preview.preview(result, command.show))
        if command.output is not None:
            shell.user_ns[command.output] = result
        return None if silent else result

    @line_magic
    def fw_graph(self, line: str):
        """Show the interactive job graph of a DataStream, a JobResult or a JobGraph.

            %fw_graph NAME

        Click an operator to see its attributes (FLIP-331's output only after end of input,
        internal sorter, its chain, parallelism and the Spark plan fragment it runs). Pick a
        subtask to fail to see what region failover and restart-all restart (FLIP-1). While
        execute() runs the same job in this kernel, operators show their live state.
        """
        name = line.strip()
        if not name.isidentifier():
            raise UsageError(f"%fw_graph needs one variable name; got {quoted(name)}")
        value = variable(self.shell, name, "%fw_graph")
        with user_errors(self.shell):
            return _graph_view(value)

    @line_magic
    def fw_savepoint(self, line: str):
        """Write a savepoint of a running streaming job; returns its path (FLIP-8).

            %fw_savepoint JOB

        JOB: a variable holding the job ``.start()`` returned. The job keeps running.
        ``op.start(job_name=NEW, from_savepoint=path, parallelism=N)`` restores it at any
        parallelism N >= 1 (docs/state.md).
        """
        from ..runtime.streaming.driver.job import StreamingJob

        name = line.strip()
        if not name.isidentifier():
            raise UsageError(f"%fw_savepoint needs one variable name (a running streaming job); got {quoted(name)}")
        job = variable(self.shell, name, "%fw_savepoint")
        if not isinstance(job, StreamingJob):
            raise UsageError(f"%fw_savepoint {shortened(name)}: a {type(job).__name__}, not a streaming job (what "
                             ".start() returns)")
        with user_errors(self.shell):
            return job.savepoint()

    @line_magic
    def fw_recover(self, line: str):
        """The recovery panel: jobs, their event logs replayed, Resume (Stop while it runs) and Discard.

            %fw_recover [JOB_DIR]

        Without JOB_DIR it lists the jobs in $FW_JOB_DIR (else .fw-jobs next to the notebook),
        the jobs this kernel ran and the jobs in your job index ($FW_JOB_INDEX, else
        ~/.local/share/fw-magics/jobs.json: every execute() registers its job there), each
        with its folder, and says where it looked. With JOB_DIR it lists that folder only.
        """
        from ..widgets import RecoveryPanel

        job_dir = line.strip().strip("'\"") or None
        if job_dir is not None and not os.path.isdir(job_dir) and "://" not in job_dir:
            raise UsageError(f"%fw_recover {job_dir}: no such directory")
        return RecoveryPanel(job_dir, namespace=self.shell.user_ns)

    def _cache_source(self, source: str) -> str:
        return self.shell.compile.cache(source, cell_number(self.shell))

    @staticmethod
    def _explanation(title: str, built: build.Built, expression: str, value) -> dict[str, str]:
        return build.explanation_bundle(
            title,
            [
                ("The same with the fw-magics Python API:", build.python_code(built, expression, value)),
                ("What it does, in plain PySpark:", build.pyspark_code(built, expression, value)),
                ("Spark's physical plan:", build.physical_plan(built.result)),
            ],
        )


def _graph_view(value):
    from ..widgets import show_graph

    return show_graph(value)  # a value it cannot draw: a FullWindowError, one line through user_errors


def load_ipython_extension(shell) -> None:
    """``%load_ext fw_magics``: register %fullwindow / %%fullwindow, %fwstream / %%fwstream, %fw_graph,
    %fw_savepoint and %fw_recover."""
    from .stream_magic import StreamMagics

    shell.register_magics(FullWindowMagics)
    shell.register_magics(StreamMagics)


def unload_ipython_extension(shell) -> None:
    """``%unload_ext fw_magics``: remove what load_ipython_extension registered: every magic in the
    tables ``@magics_class`` built for our classes (a magic another extension registered since
    under the same name stays)."""
    from .stream_magic import StreamMagics

    manager = shell.magics_manager
    for magics in (FullWindowMagics, StreamMagics):
        for kind, names in magics.magics.items():
            for name in names:
                registered = manager.magics[kind].get(name)
                if isinstance(getattr(registered, "__self__", None), magics):
                    del manager.magics[kind][name]
        manager.registry.pop(magics.__name__, None)
