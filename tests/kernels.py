"""A real IPython kernel (ipykernel through jupyter_client) that a test can run cells in and interrupt.

nbclient runs a notebook top to bottom; these tests also need *Kernel > Interrupt* in the
middle of a cell, which is what JupyterLab sends: ``KernelManager.interrupt_kernel()``
(SIGINT to the kernel process).
"""

from __future__ import annotations

import os
import queue
import re
import time
from dataclasses import dataclass, field

from jupyter_client.manager import KernelManager

ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class Ran:
    """What one cell produced, as a notebook would show it."""

    status: str = ""  # "ok" | "error" | "aborted"
    stdout: str = ""
    stderr: str = ""
    results: list = field(default_factory=list)  # text/plain of execute_result and display_data
    kinds: list = field(default_factory=list)  # the mime types of each of those, as sets
    error: dict | None = None  # {"ename", "evalue", "traceback"} with colours removed
    seconds: float = 0.0
    interrupted_at: float | None = None  # seconds after the start, when the test interrupted it

    @property
    def traceback(self) -> str:
        return "\n".join(self.error["traceback"]) if self.error else ""


def process_running(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (killed, not yet reaped by its parent)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the process table
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def still_running(pid_dir, within: float) -> list[int]:
    """The processes named by the files in ``pid_dir`` still running after up to ``within`` s."""
    deadline = time.monotonic() + within
    while True:
        alive = [int(entry.name) for entry in pid_dir.iterdir() if process_running(int(entry.name))]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.25)


class Kernel:
    """One python3 kernel, started in ``cwd`` with ``env`` added to this process's environment."""

    def __init__(self, cwd: str, env: dict | None = None):
        environment = dict(os.environ)
        environment.update(env or {})
        self.manager = KernelManager(kernel_name="python3")
        self.manager.start_kernel(cwd=str(cwd), env=environment)
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=120)

    def run(self, code: str, timeout: float = 300, interrupt_after: float | None = None,
            interrupt_when=None) -> Ran:
        """Run a cell, as Run does in JupyterLab, and (optionally) Kernel > Interrupt it.

        ``interrupt_after``: seconds after the start; ``interrupt_when``: a function of nothing
        that says when (polled every 0.2 s), e.g. once a worker of the cell's job has started.
        """
        msg_id = self.client.execute(code, allow_stdin=False)
        ran = Ran()
        started = time.monotonic()
        interrupted = False
        while True:
            now = time.monotonic()
            if now - started > timeout:
                raise TimeoutError(f"cell did not finish in {timeout} s:\n{code}\nstdout: {ran.stdout[-2000:]}"
                                   f"\nstderr: {ran.stderr[-2000:]}")
            due = (interrupt_after is not None and now - started >= interrupt_after) or (
                interrupt_when is not None and interrupt_when())
            if not interrupted and due:
                self.manager.interrupt_kernel()
                interrupted = True
                ran.interrupted_at = now - started
            try:
                msg = self.client.get_iopub_msg(timeout=0.2)
            except queue.Empty:
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                if content["name"] == "stdout":
                    ran.stdout += content["text"]
                else:
                    ran.stderr += content["text"]
            elif kind in ("execute_result", "display_data"):
                ran.results.append(content["data"].get("text/plain", ""))
                ran.kinds.append(set(content["data"]))
            elif kind == "error":
                ran.error = {"ename": content["ename"], "evalue": content["evalue"],
                             "traceback": [ANSI.sub("", line) for line in content["traceback"]]}
            elif kind == "status" and content["execution_state"] == "idle":
                break
        ran.status = self._reply(msg_id)["content"]["status"]
        ran.seconds = time.monotonic() - started
        return ran

    def _reply(self, msg_id: str) -> dict:
        """The shell channel's reply to request ``msg_id``. Replies to earlier requests are passed over: jupyter_client's
        ``wait_for_ready`` sends a kernel_info request each second until one is answered, so a kernel slow to start (a
        loaded machine) leaves the extra replies queued, and reading "the next reply" would read each cell's status
        one cell late (an interrupted cell's 'error' read by the next cell)."""
        while True:
            reply = self.client.get_shell_msg(timeout=60)
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply

    def ok(self, code: str, timeout: float = 300) -> Ran:
        """Run a cell that must succeed."""
        ran = self.run(code, timeout)
        assert ran.status == "ok", f"cell failed:\n{code}\n{ran.traceback}\n{ran.stderr}"
        return ran

    def pid(self) -> int:
        return int(self.ok("import os; print(os.getpid())").stdout.strip())

    def stop(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)
