"""The ``%%fwstream`` / ``%fwstream`` magics: start a running keyed job over a source with a backlog."""

from __future__ import annotations

import html
import os

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand
from IPython.display import display

from ..errors import FwMagicsError, ResumeError
from ..graph.render import counted
from . import stream_grammar
from .build import lookup
from .cells import cell_number, magic_input, user_errors, variable

#: the variable that always holds the job the last %%fwstream started
LAST_JOB = "_fwstream"


@magics_class
class StreamMagics(Magics):
    """Mixed batch-then-stream jobs (FLIP-327) from a notebook cell."""

    @no_var_expand
    @line_cell_magic
    def fwstream(self, line: str, cell: str | None = None):
        """Start a running keyed job over a source with a backlog (FLIP-327): the files (or table
        rows) present at the start run as one batch job, then the job switches to a Structured
        Streaming query that goes on with the state it built.

        Cell form: the value of the cell's last expression is the input, a DataStream over files
        (fw.from_files(...)) or a PostgreSQL table (fw.from_table(...)).

            %%fwstream OP fn=FN key=COL[,COL...] [--mode M] [--job NAME] [--job-dir DIR] [-o NAME] ...
            <Python code; its last expression is the input>

        Line form: the input is a variable.

            %fwstream OP fn=FN key=COL[,COL...] --in NAME [options]

        Operations (one per cell, per key):

<one input>

        Two inputs (the cell's last expression is both, FIRST, SECOND; the line form's --in FIRST,SECOND):

<two inputs>

        Options:

            key=COL[,COL...]        the key columns (required)
            --mode M                mixed (the default: backlog as a batch, then stream), stream, batch
            --job NAME              the job's name (default: from the source and the operation);
                                    the same name and job directory continue the job
            --job-dir DIR           where jobs live (default $FW_JOB_DIR, else .fw-jobs)
            --trigger T             a processing-time interval ("5 seconds", the default "1 second")
                                    or available_now (process what is there, then stop)
            --max-files N           at most N files per micro-batch
            --parallelism N         the job's state partitions (default the stream's); fixed for its life
            --from-savepoint NAME   a new job restored from the savepoint whose path variable NAME holds
                                    (saved = %fw_savepoint JOB), at --parallelism N (default the
                                    savepoint's), in mode mixed or stream; FN may have changed
                                    (its states matched by name; a refusal shows each state's
                                    verdict, fw.check_savepoint's table)
            --allow-non-restored-state  with --from-savepoint: drop the states FN no longer declares
            -o NAME                 bind the running job to NAME (it is also in _fwstream)
            --show N                show N keys' latest values (default 5; 0: the status only)
            --graph                 also show the job graph, following the job live
            --live                  show the job's live view (job.show()) instead of its status: results,
                                    charts of its metrics, Stop and Savepoint buttons; it updates itself
            --no-wait               return at once (default: wait until every file present is processed)
            --reset                 start the job afresh: discard what it recorded (events, backlog results,
                                    checkpoint, changelog; never its savepoints), e.g. after changing FN
            --in NAME               the line form's input: a variable (two inputs: --in FIRST,SECOND)
            --key2 COL[,COL...]     two inputs: the second input's key columns (default: the columns key= names)
            --between LOWER,UPPER   interval_join: the right records joined with a left one at t are
                                    those from t+LOWER to t+UPPER (milliseconds, inclusive)

        The cell shows the job's phase (backlog, switching, stream; finished or stopped), the
        switch's watermark W, the micro-batches so far and each key's latest value. The job keeps
        running after the cell: job.latest(), job.process_all_available(), job.stop(). A mistake
        in the line is one line naming the bad word, and nothing runs.

        Examples (each block is one cell, run in order; READINGS_DIR is a directory of Parquet files):

            import fw_magics as fw
            readings = fw.from_files(READINGS_DIR, "parquet", "sensor long, reading long, ts timestamp",
                                     event_time="ts", watermark_delay="10 seconds")
            calibrations = fw.from_files(CALIBRATIONS_DIR, "parquet", "sensor long, offset long, ts timestamp",
                                         event_time="ts")

            %%fwstream reduce fn=add key=sensor --job totals -o totals
            def add(a, b):
                return (a.sensor, a.reading + b.reading, max(a.ts, b.ts))
            readings

            %fwstream reduce fn=add key=sensor --in readings --mode batch --job totals-batch --show 0

            %%fwstream aggregate fn=Spread key=sensor --mode batch --job spread --show 3
            class Spread(fw.AggregateFunction):
                schema = "low long, high long"
                def create_accumulator(self):
                    return [None, None]
                def add(self, r, acc):
                    low, high = acc
                    return [r.reading if low is None else min(low, r.reading), r.reading if high is None else max(high, r.reading)]
                def get_result(self, acc):
                    return tuple(acc)
            readings

            saved = %fw_savepoint totals

            %fwstream reduce fn=add key=sensor --in readings --job totals-at-3 --from-savepoint saved --parallelism 3 -o at3

            %%fwstream co_process fn=Calibrated key=sensor --job calibrated --trigger available_now -o calibrated
            class Calibrated(fw.KeyedCoProcessFunction):
                schema = "reading long"
                def open(self, ctx):
                    self.offset = ctx.get_state(fw.ValueStateDescriptor("offset", "long"))
                def process_element1(self, r, ctx):
                    yield (r.reading + (self.offset.value() or 0),)
                def process_element2(self, c, ctx):
                    self.offset.update(c.offset)
            readings, calibrations

            %%fwstream interval_join fn=Near key=sensor --between -60000,0 --job near --trigger available_now -o near
            class Near(fw.ProcessJoinFunction):
                schema = "reading long, offset long"
                def process_element(self, reading, calibration, ctx):
                    return (reading.reading, calibration.offset)
            readings, calibrations

            %fwstream co_process fn=Calibrated key=sensor --key2 sensor --in readings,calibrations --mode batch --job calibrated-batch --show 0

            %%fwstream reduce fn="lambda a, b: a if a.reading >= b.reading else b" key=sensor --job top --mode stream --trigger available_now --max-files 1 --live
            readings

            totals.stop(); at3.stop()
        """
        command = stream_grammar.parse(line)  # before anything runs
        shell = self.shell
        savepoint = None if command.savepoint is None else savepoint_path(shell, command.savepoint)
        if cell is None and command.input is not None and len(command.input) == 2:
            value = tuple(variable(shell, name, "--in") for name in command.input)
        else:
            name = None if command.input is None else command.input[0]
            value, _, _ = magic_input(shell, "fwstream", name, cell, f"the %%fwstream cell must end with an "
                                      f"expression giving {_INPUT[command.two_inputs]}")
        with user_errors(shell):
            job = self._start(command, value, savepoint)
        shell.user_ns[LAST_JOB] = job
        if command.output is not None:
            shell.user_ns[command.output] = job
        if not command.silent and not command.live:
            display(status_bundle(job, command.show), raw=True)
        return None

    def _start(self, command, value, savepoint):
        fn = lookup(command.fn, self.shell.user_ns, lambda source: self.shell.compile.cache(source, cell_number(self.shell)))
        if isinstance(fn, type):
            fn = fn()
        stateful = _operator(command, _streams(command, value), fn)
        view = None
        if command.graph:
            from ..widgets import GraphView

            view = GraphView(stateful.job_graph(), title=f"streaming job {command.job or ''}".strip())
            display(view)
        try:
            job = stateful.start(job_dir=command.job_dir, job_name=command.job, mode=command.mode,
                                 trigger=command.trigger, max_files_per_trigger=command.max_files,
                                 parallelism=command.parallelism, from_savepoint=savepoint, reset=command.reset,
                                 allow_non_restored_state=command.allow_non_restored_state)
        except ResumeError:
            if savepoint is not None:  # the one line follows; each state's verdict above it
                _show_verdict(savepoint, stateful)
            raise
        if command.live and not command.silent:  # before the wait: the view follows it
            display(job.show())
        if command.wait:
            try:
                job.process_all_available()
            except BaseException:
                job.stop()
                raise
        return job

    # the operations' lines come from the operator kinds' registry (fw_magics.operators): a new kind's
    # operation is in the help as it is in the grammar
    fwstream.__doc__ = fwstream.__doc__.replace("<one input>", stream_grammar.operation_help(1, " " * 12)).replace(
        "<two inputs>", stream_grammar.operation_help(2, " " * 12))


#: What the input of a cell is, for one input and for two.
_INPUT = {False: "the input: a DataStream over files (fw.from_files(...)) or a table (fw.from_table(...))",
          True: "the two inputs, FIRST, SECOND: DataStreams over files (fw.from_files(...)) or tables "
                "(fw.from_table(...))"}


def _streams(command, value) -> tuple:
    """The command's input stream(s), or one line saying what it takes."""
    from ..datastream.datastream import DataStream

    streams = tuple(value) if command.two_inputs and isinstance(value, (tuple, list)) else (value,)
    if len(streams) != (2 if command.two_inputs else 1) or not all(isinstance(s, DataStream) for s in streams):
        got = ", ".join(type(s).__name__ for s in streams) if isinstance(value, (tuple, list)) else type(value).__name__
        raise UsageError(f"%%fwstream {command.operation} needs {_INPUT[command.two_inputs]}; got {got}")
    return streams


def _operator(command, streams: tuple, fn):
    """The running keyed operator the command asks for, over its stream(s) (the Python API's calls, as its
    operation makes them: ``fw_magics.operators.Operation.build``)."""
    key = list(command.key)
    operation = stream_grammar.OPERATION[command.operation]
    if not command.two_inputs:
        return operation.build(streams[0], None, key, None, fn, None)
    from ..errors import FullWindowError

    first, second = streams
    key2 = key if command.key2 is None else list(command.key2)
    if command.key2 is None:  # the columns key= names, in the second input too: else say how to name its own
        try:
            second.key_by(key2)
        except FullWindowError as error:
            raise UsageError(f"the second input: {error}; name its key columns with --key2 COL[,COL...]") from None
    return operation.build(first, second, key, key2, fn, command.between)


def _show_verdict(savepoint: str, stateful) -> None:
    """``fw.check_savepoint``'s table of a refused restore, when it can be made (else the line alone)."""
    from ..runtime.streaming.savepoints.verdicts import check_savepoint

    try:
        display(check_savepoint(savepoint, stateful))
    except FwMagicsError:
        pass


def savepoint_path(shell, name: str):
    """The savepoint path in the notebook's variable ``name`` (``--from-savepoint NAME``), or one line."""
    value = variable(shell, name, "--from-savepoint")
    if not isinstance(value, (str, os.PathLike)):
        raise UsageError(f"--from-savepoint {name}: a {type(value).__name__}, not a savepoint's path (what "
                         "%fw_savepoint or job.savepoint() returns)")
    return value


def status_bundle(job, show: int) -> dict[str, str]:
    """The job's phase, W, micro-batches and latest values, as HTML and text."""
    from ..widgets.stream_status import moment, stream_status

    status = stream_status(job.events())
    facts = [f"mode {job.mode}", f"phase {job.phase}"]
    if job.watermark is not None:
        facts.append(f"switched at W = {moment(job.watermark)}")
    if job.backlog_state_writes:
        facts.append(f"{job.backlog_state_writes:,} state writes in backlog")
    facts.append(counted(len(status['batches']), 'micro-batch', 'micro-batches'))
    head = f"streaming job {job.job_name!r}: " + ", ".join(facts)
    text, markup = [head], [f"<b>{html.escape(head)}</b>"]
    if show and job.phase not in ("backlog", "failed"):
        latest = job.latest()
        more = len(latest) - show
        shown = latest.head(show)
        text.append(shown.to_string(index=False))
        markup.append(shown.to_html(index=False, border=0))
        if more > 0:
            text.append(f"... {more:,} more keys: job.latest()")
            markup.append(f"<small>&hellip; {more:,} more keys: <code>job.latest()</code></small>")
    return {"text/plain": "\n".join(text), "text/html": "<div class='fw-stream-status'>" + "".join(markup) + "</div>"}
