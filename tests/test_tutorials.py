"""Every tutorial notebook runs headless from top to bottom in a real kernel.

The notebooks are committed executed (``make tutorials``: scripts/execute_tutorials.py);
what they saved must not name this machine's folders. Exercises ship blank; the test fills in
the solutions from tests/tutorial_solutions.py and checks the check cell accepts them.
"""

import json
import os
import pathlib
import tempfile

import nbformat
import pytest
from nbclient import NotebookClient

from .tutorial_solutions import SOLUTIONS

ROOT = pathlib.Path(__file__).parent.parent.resolve()
TUTORIALS = sorted((ROOT / "tutorials").glob("*.ipynb"))


def run_by_the_browser_tests(session, path) -> bool:
    """Whether this run's browser tests execute ``path`` top to bottom and assert what this test
    does (tests/browser: tutorial 5, classic; not when they are skipped, deselected or xfail)."""
    from .browser.conftest import TUTORIAL

    return path.name == TUTORIAL and any(
        item.nodeid.endswith("test_widgets_in_lab.py::test_no_cell_failed[classic]")
        and not item.get_closest_marker("skip") and not item.get_closest_marker("xfail")
        for item in session.items
    )


@pytest.mark.slow
@pytest.mark.parametrize("path", TUTORIALS, ids=[p.stem for p in TUTORIALS])
def test_tutorial_runs(path, tmp_path, request):
    if run_by_the_browser_tests(request.session, path):
        pytest.skip("run top to bottom in this session by tests/browser (test_no_cell_failed[classic])")
    nb = nbformat.read(path, as_version=4)
    solutions = SOLUTIONS.get(path.stem, {})
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        for tag in set(tags) & set(solutions):
            cell.source = solutions[tag]
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
    checks = [c for c in nb.cells if "exercise-check" in c.get("metadata", {}).get("tags", [])]
    for check in checks:
        said = "".join(o.get("text", "") for o in check.get("outputs", []) if o.output_type == "stream")
        assert "Correct!" in said, f"{path.name}: the solution was not accepted: {said[:300]}"


@pytest.mark.parametrize("path", TUTORIALS, ids=[p.stem for p in TUTORIALS])
def test_exercises_ship_blank_and_have_a_solution(path):
    nb = nbformat.read(path, as_version=4)
    answers = [c for c in nb.cells if "exercise" in c.get("metadata", {}).get("tags", [])]
    for cell in answers:
        assert "= ..." in cell.source, f"{path.name}: an exercise cell must ship blank (a ... placeholder)"
        assert "exercise" in SOLUTIONS.get(path.stem, {}), f"{path.name}: no solution in tests/tutorial_solutions.py"


@pytest.mark.parametrize("path", TUTORIALS, ids=[p.stem for p in TUTORIALS])
def test_saved_outputs_name_no_folder_of_this_machine(path):
    nb = nbformat.read(path, as_version=4)
    saved = json.dumps([cell.get("outputs", []) for cell in nb.cells if cell.cell_type == "code"])
    for folder in {str(ROOT), os.path.realpath(tempfile.gettempdir()), os.path.expanduser("~")} - {"/"}:
        assert folder + os.sep not in saved, f"{path.name} names {folder}: save it with make tutorials"
