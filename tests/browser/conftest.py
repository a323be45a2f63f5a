"""A real JupyterLab on localhost, driven by Debian's Chromium through Playwright.

`make test` installs Chromium (scripts/system-deps.sh) and JupyterLab and Playwright (the
test extras). Playwright cannot download its own browser here, so it launches the system
Chromium (``FW_CHROMIUM``, else ``chromium`` on PATH). Screenshots go to
``test-artifacts/`` (``FW_TEST_ARTIFACTS`` to move them).

One JupyterLab server per Spark mode (``labs``) and one Chromium serve every browser test of
a run; each notebook opens in a workspace of its own, and its kernel is shut down when its
tests are done.
"""

from __future__ import annotations

import json
import os
import pathlib
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = pathlib.Path(os.environ.get("FW_TEST_ARTIFACTS", REPO / "test-artifacts"))
CHROMIUM = os.environ.get("FW_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
# Flags for a closed network: no background fetches, no first-run, no sandbox as root.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]
MODES = {"classic": {}, "connect": {"SPARK_REMOTE": "local[2]"}}  # the kernel inherits the server's env
SETTINGS = {  # JupyterLab user settings for a quiet, deterministic page
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                         "checkForUpdates": False},
    # every cell stays in the DOM (no virtual scrolling), so locators find earlier outputs
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}


def pytest_collection_modifyitems(items):
    if CHROMIUM is None:
        why = "Chromium is not installed (as root, `make test` installs Debian's chromium; else: apt-get install chromium)"
        for item in items:
            if "tests/browser" in str(item.fspath):
                if os.environ.get("CI"):
                    item.add_marker(pytest.mark.xfail(reason=why, run=False, strict=True))
                else:
                    item.add_marker(pytest.mark.skip(reason=why))


#: The tutorial the browser tests run (tests/test_tutorials.py leaves it to them when they run)
TUTORIAL = "05_reading_the_graph.ipynb"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_lab(root: pathlib.Path, extra_env: dict | None = None):
    """Start JupyterLab serving ``root``; returns (process, base url, token)."""
    config = root / ".lab-config"
    for name, value in SETTINGS.items():
        path = config / "settings" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))
    port, token = _free_port(), secrets.token_hex(16)
    env = os.environ | {
        "JUPYTERLAB_SETTINGS_DIR": str(config / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(config / "workspaces"),
        "FW_SPARK_LOG_LEVEL": "FATAL",
    } | (extra_env or {})
    env.pop("FW_JOB_DIR", None)
    log = open(root / "jupyterlab.log", "wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}", "--ServerApp.allow_root=True",
         "--ServerApp.open_browser=False", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while True:
        try:
            with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2) as reply:
                if reply.status == 200:
                    break
        except OSError:
            pass
        if process.poll() is not None or time.time() > deadline:
            process.kill()
            raise RuntimeError(f"JupyterLab did not start; see {root / 'jupyterlab.log'}:\n"
                               + (root / "jupyterlab.log").read_text(errors="replace")[-3000:])
        time.sleep(0.5)
    return process, base, token


def stop_lab(process) -> None:
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield chromium
        chromium.close()


@dataclass
class Lab:
    """A running JupyterLab: the folder it serves, its address and token."""

    root: pathlib.Path
    base: str
    token: str
    process: subprocess.Popen

    def url(self, notebook: str, workspace: str | None = None) -> str:
        """The notebook opened in a workspace of its own (only it on the page)."""
        workspace = workspace or pathlib.Path(notebook).stem
        return f"{self.base}/lab/workspaces/{workspace}/tree/{notebook}?reset&token={self.token}"

    def api(self, path: str, method: str = "GET"):
        request = urllib.request.Request(f"{self.base}/api/{path}?token={self.token}", method=method)
        with urllib.request.urlopen(request, timeout=30) as reply:
            body = reply.read()
        return json.loads(body) if body else None

    def shutdown_kernels(self) -> None:
        """Stop every kernel of this server (and so the Spark each one started)."""
        for kernel in self.api("kernels"):
            self.api(f"kernels/{kernel['id']}", method="DELETE")


@pytest.fixture(scope="session")
def labs(tmp_path_factory):
    """``labs(mode)``: the JupyterLab server of a Spark mode ("classic", "connect"), started
    when first asked for and shared by the whole run."""
    started: dict[str, Lab] = {}

    def lab(mode: str) -> Lab:
        if mode not in started:
            root = tmp_path_factory.mktemp(f"lab-{mode}")
            process, base, token = start_lab(root, MODES[mode])
            started[mode] = Lab(root, base, token, process)
        return started[mode]

    yield lab
    for running in started.values():
        stop_lab(running.process)


def copy_without_outputs(source: pathlib.Path, target: pathlib.Path, solved: bool = False) -> None:
    """The tutorial as a reader opens it before running it: the committed notebook carries its
    saved outputs and execution counts, which would satisfy run_all_cells before anything ran.
    ``solved``: its exercise cells hold the solutions (tests/tutorial_solutions.py), as
    tests/test_tutorials.py runs it."""
    import nbformat

    from tests.tutorial_solutions import SOLUTIONS

    solutions = SOLUTIONS.get(source.stem, {}) if solved else {}
    nb = nbformat.read(source, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            for tag in set(cell.metadata.get("tags", [])) & set(solutions):
                cell.source = solutions[tag]
    nbformat.write(nb, target)


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=False)


def accept_kernel_dialog(page) -> None:
    """JupyterLab sometimes asks which kernel to use although the notebook names one: accept it."""
    dialog = page.locator(".jp-Dialog")
    try:
        dialog.wait_for(timeout=3_000)
    except Exception:  # no dialog: the usual case
        return
    dialog.locator(".jp-mod-accept").click()
    dialog.wait_for(state="detached", timeout=10_000)


def run_all_cells(page, timeout_ms: int = 300_000) -> None:
    """Run > Run All Cells, then wait until every cell has an execution count, or one failed."""
    page.locator(".jp-Notebook").first.wait_for(timeout=60_000)
    page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").first.wait_for(timeout=120_000)
    accept_kernel_dialog(page)
    page.locator(".jp-Notebook .jp-Cell").first.click()  # the notebook has focus: Run All applies to it
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
    page.wait_for_function(
        """() => {
            const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')];
            const failed = [...document.querySelectorAll(
                ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")]
                .some(o => o.textContent.includes('Traceback'));
            return failed || (prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent)));
        }""",
        timeout=timeout_ms,
    )


# -- what a person sees: geometry read from the page ---------------------------------------------

READABLE_PX = 11 - 0.01  # the smallest text on screen: 11 px, give or take a rounding of the browser's

#: For one drawing (a static ``.fw-jobgraph`` output or a ``.fw-graph-view`` widget): every
#: operator box, text and badge must lie inside the visible part of its scrolling box and of
#: the output area; every text must be at least ``minPx`` on screen; a badge must lie inside
#: its own box and never cross a chain's frame. Returns the problems found, in words.
GEOMETRY_JS = """
(el, [minPx, wholeGraph]) => {
    const problems = [];
    const svg = el.querySelector('svg.fw-jobgraph-svg') || el.querySelector('.fw-graph-svg svg');
    if (!svg) return {problems: ['no drawing'], nodes: 0, texts: 0, badges: 0, minFont: 0};
    const port = el.querySelector('.fw-jobgraph-scroll') || el.querySelector('.fw-graph-svg');
    const area = (el.closest('.jp-OutputArea-output') || el).getBoundingClientRect();
    const p = port.getBoundingClientRect();
    const edge = 0.5;
    const seen = {left: Math.max(p.left + port.clientLeft, area.left),
                  right: Math.min(p.left + port.clientLeft + port.clientWidth, area.right),
                  top: p.top + port.clientTop, bottom: p.top + port.clientTop + port.clientHeight};
    const inside = (r, b) => r.left >= b.left - edge && r.right <= b.right + edge
                             && r.top >= b.top - edge && r.bottom <= b.bottom + edge;
    const meets = (r, b) => r.left < b.right && r.right > b.left && r.top < b.bottom && r.bottom > b.top;
    const where = (r) => `[${Math.round(r.left)},${Math.round(r.top)} ${Math.round(r.width)}x${Math.round(r.height)}]`;
    const name = (g) => (g.dataset.operator || (g.querySelector('title') || {}).textContent || '?');
    const nodes = [...svg.querySelectorAll('g.node')];
    if (wholeGraph) {
        for (const g of nodes) {
            const r = g.getBoundingClientRect();
            if (!inside(r, seen)) problems.push(`operator ${name(g)} ${where(r)} is outside the visible area ${where({left: seen.left, top: seen.top, width: seen.right - seen.left, height: seen.bottom - seen.top})}`);
        }
    }
    const scale = svg.getScreenCTM().a;
    let minFont = Infinity, texts = 0;
    for (const t of svg.querySelectorAll('text')) {
        if (!t.textContent.trim()) continue;
        texts += 1;
        const px = parseFloat(getComputedStyle(t).fontSize) * scale;
        minFont = Math.min(minFont, px);
        if (px < minPx) problems.push(`text '${t.textContent}' is ${px.toFixed(1)} px on screen`);
        const r = t.getBoundingClientRect();
        if (wholeGraph && !inside(r, seen)) problems.push(`text '${t.textContent}' ${where(r)} is outside the visible area`);
    }
    const frames = [...svg.querySelectorAll('g.cluster')].map(c => c.querySelector('path, polygon').getBoundingClientRect());
    const badges = [...svg.querySelectorAll('text.fw-badge')];
    const drawing = svg.getBoundingClientRect();
    for (const t of badges) {
        const r = t.getBoundingClientRect();
        const g = t.closest('g.node');
        const box = g.querySelector('path, polygon').getBoundingClientRect();
        if (!inside(r, box)) problems.push(`badge '${t.textContent}' ${where(r)} is outside its box ${where(box)} (${name(g)})`);
        if (!inside(r, drawing)) problems.push(`badge '${t.textContent}' ${where(r)} is outside the SVG ${where(drawing)}`);
        for (const f of frames) {
            if (meets(r, f) && !inside(r, f)) problems.push(`badge '${t.textContent}' ${where(r)} crosses a chain frame ${where(f)}`);
        }
    }
    return {problems, nodes: nodes.length, texts, badges: badges.length, minFont};
}
"""


def geometry(drawing, min_px: float = READABLE_PX, whole_graph: bool = True) -> dict:
    """Check one drawing's geometry on the page (see GEOMETRY_JS)."""
    drawing.scroll_into_view_if_needed()
    return drawing.evaluate(GEOMETRY_JS, [min_px, whole_graph])
