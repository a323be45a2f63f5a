"""Execute the tutorials in place and save their outputs, so a reader on GitHub sees the results.

    .venv/bin/python scripts/execute_tutorials.py                    # every tutorial (make tutorials)
    .venv/bin/python scripts/execute_tutorials.py tutorials/03_*.ipynb

Each notebook runs top to bottom in a fresh ``python3`` kernel (nbclient), inside a scratch
working directory, so job directories and helper modules never land in ``tutorials/``. Then
its outputs are made small and free of this machine:

* a widget's output keeps its static fallback (the graph's SVG, a text summary) and drops the
  live-widget reference, which renders nowhere without a kernel;
* a job graph shown as SVG drops its DOT source (``text/vnd.graphviz``), the same drawing;
* the JVM's start-up chatter on stderr (log4j lines, Spark's WARN lines naming this host) and
  the lines PySpark's transformWithState worker prints are left out; anything else a
  cell prints stays;
* the scratch directory, the repository and the home directory are replaced by short names
  in every output (``<job dir>/...`` style paths), and no timing metadata is recorded.

A cell that raises stops the script with the notebook's name (the test suite executes the
tutorials too: tests/test_tutorials.py).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import sys
import tempfile
import time

import nbformat
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parent.parent
WIDGET = "application/vnd.jupyter.widget-view+json"
DOT = "text/vnd.graphviz"
SVG = "image/svg+xml"
#: stderr lines of a JVM starting Spark: log4j's, Spark's timestamped log lines, the JDK's notes
JVM_CHATTER = re.compile(
    r"^(\d\d/\d\d/\d\d \d\d:\d\d:\d\d (TRACE|DEBUG|INFO|WARN|ERROR) |Using Spark's default log4j profile"
    r"|Setting default log level to|To adjust logging level use|WARNING: Using incubator modules)"
)
#: lines PySpark's transformWithState driver-side Python worker prints (each followed by a blank line)
WORKER_CHATTER = re.compile(r"^(Starting )?Streaming TransformWithStateInPandas Python worker")


def scrubber(scratch: str):
    """A function that replaces this machine's paths in a text with stable, short ones."""
    replacements = [
        (os.path.realpath(scratch), "."),
        (scratch, "."),
        (str(ROOT), "<repository>"),
        (os.path.realpath(tempfile.gettempdir()), "<tmp>"),
        (tempfile.gettempdir(), "<tmp>"),
        (os.path.expanduser("~"), "~"),
    ]
    replacements = [(old, new) for old, new in replacements if old and old not in ("/", ".")]
    pattern = re.compile("|".join(re.escape(old) for old, _ in sorted(replacements, key=lambda r: -len(r[0]))))
    table = dict(replacements)

    def scrub(text: str) -> str:
        return pattern.sub(lambda m: table[m.group(0)], text)

    return scrub


def _scrub_value(value, scrub):
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, list):
        return [_scrub_value(v, scrub) for v in value]
    if isinstance(value, dict):
        return {k: _scrub_value(v, scrub) for k, v in value.items()}
    return value


def _without_chatter(output) -> bool:
    """Drop the JVM's lines from a stderr output and the streaming Python worker's from either;
    False when nothing else was in it."""
    if output.get("output_type") != "stream":
        return True
    kept, after_worker = [], False
    for line in output["text"].splitlines(keepends=True):
        if WORKER_CHATTER.match(line) or (after_worker and not line.strip()):
            after_worker = True
            continue
        after_worker = False
        if output.get("name") != "stderr" or not JVM_CHATTER.match(line):
            kept.append(line)
    output["text"] = "".join(kept)
    return bool(output["text"].strip())


def tidy(nb, scrub) -> None:
    """Small, machine-free outputs (see the module docstring)."""
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        cell.metadata.pop("execution", None)
        cell.outputs = [output for output in cell.get("outputs", []) if _without_chatter(output)]
        for output in cell.outputs:
            data = output.get("data")
            if data is not None:
                if WIDGET in data and len(data) > 1:
                    data.pop(WIDGET)
                if SVG in data:
                    data.pop(DOT, None)
                output["data"] = _scrub_value(dict(data), scrub)
            if "text" in output:
                output["text"] = scrub(output["text"])
            if output.get("output_type") == "error":
                output["traceback"] = [scrub(line) for line in output["traceback"]]
                output["evalue"] = scrub(output["evalue"])
    nb.metadata.pop("widgets", None)


def execute(path: pathlib.Path, timeout: int) -> float:
    nb = nbformat.read(path, as_version=4)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fw-tutorial-") as scratch:
        client = NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                                resources={"metadata": {"path": scratch}})
        client.execute()
        errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
                  if o.output_type == "error"]
        if errors:
            raise SystemExit(f"{path.name}: a cell failed: {errors[0].ename}: {errors[0].evalue}")
        tidy(nb, scrubber(scratch))
    nbformat.validate(nb)
    nbformat.write(nb, path)
    return time.monotonic() - started


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=pathlib.Path,
                        help="notebooks to execute (default: every tutorials/*.ipynb)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds a cell may take (default 600)")
    args = parser.parse_args(argv)
    notebooks = args.notebooks or sorted((ROOT / "tutorials").glob("*.ipynb"))
    for path in notebooks:
        took = execute(path.resolve(), args.timeout)
        print(f"{path.name}: executed and saved in {took:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
