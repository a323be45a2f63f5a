"""A scratch PostgreSQL server for tutorials and tests (Debian's ``postgresql``): its own data
directory in a temporary folder, loopback on a free port, trust authentication for one role;
started by ``start()``, stopped by its PID (and its folder removed) by ``stop()``, or when the
process that started it ends, even killed (``leftovers.Leftovers``: Kernel > Restart kills a kernel
that takes over 5 s)::

    server = ScratchPostgres().start()      # server.url: postgresql://fw@127.0.0.1:<port>/postgres
    server.sql("CREATE TABLE orders (id bigserial PRIMARY KEY, amount double precision)")
    ...
    server.stop()

As root the server runs as the ``postgres`` user Debian's package creates (PostgreSQL refuses to run
as root); otherwise as the current user. Its binaries are looked for where Debian puts them
(``/usr/lib/postgresql/<version>/bin``), then on PATH; without them ``ScratchPostgres()`` is one line
that says what to install. Nothing here is for production data: no password, no durability.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from .leftovers import Leftovers

ROLE = "fw"


def binaries() -> str | None:
    """The folder of ``initdb`` and ``postgres`` (the newest Debian version), or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=lambda p: int(p.split("/")[4]))
    if found:
        return os.path.dirname(found[-1])
    on_path = shutil.which("postgres")
    return os.path.dirname(on_path) if on_path else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ScratchPostgres:
    """One scratch server (see the module docstring): ``start()``, ``url``, ``sql(...)``, ``stop()``."""

    def __init__(self, bindir: str | None = None, password: str | None = None, logical: bool = False):
        from ..errors import FullWindowError

        self.bindir = bindir or binaries()
        if self.bindir is None:
            raise FullWindowError("no PostgreSQL server here: apt-get install postgresql (Debian; as root, "
                                  "make deps installs it), or brew install postgresql")
        self.folder = tempfile.mkdtemp(prefix="fw-pg-")
        self.data = os.path.join(self.folder, "data")
        self.port = _free_port()
        self.process: subprocess.Popen | None = None
        self.leftovers: Leftovers | None = None  # stops the server if this process ends without stop()
        self.user = "postgres" if os.geteuid() == 0 else None
        self.password = password  # None: trust; else the role logs in with it (scram-sha-256), never in the url
        self.logical = logical  # wal_level = logical: replication slots, for fw.from_table(..., changes=True)

    @property
    def running(self) -> bool:
        """Whether the server started and has not stopped."""
        return self.process is not None and self.process.poll() is None

    @property
    def url(self) -> str:
        return f"postgresql://{ROLE}@127.0.0.1:{self.port}/postgres"

    def _as_server_user(self) -> dict:
        if self.user is None:
            return {}
        entry = pwd.getpwnam(self.user)
        os.chown(self.folder, entry.pw_uid, entry.pw_gid)
        return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}

    def start(self, timeout: float = 60) -> ScratchPostgres:
        who = self._as_server_user()
        auth = ["--auth=trust"]
        if self.password is not None:
            pwfile = os.path.join(self.folder, "pwfile")
            with open(pwfile, "w") as f:
                f.write(self.password + "\n")
            if who:
                os.chown(pwfile, who["user"], who["group"])
            auth = ["--auth=scram-sha-256", f"--pwfile={pwfile}"]
        made = subprocess.run([os.path.join(self.bindir, "initdb"), "-D", self.data, "-U", ROLE, *auth,
                               "-E", "UTF8", "--no-sync", "--no-instructions"], capture_output=True, text=True,
                              cwd=self.folder, **who)
        if made.returncode != 0:
            shutil.rmtree(self.folder, ignore_errors=True)
            why = (made.stderr.strip().splitlines() or ["no output"])[-1]
            raise RuntimeError(f"initdb failed (exit {made.returncode}): {why}")
        self._serve(who)
        return self._wait(timeout)

    def _serve(self, who: dict) -> None:
        log = open(os.path.join(self.folder, "server.log"), "ab")
        # wal_level = logical; and each commit flushed when it returns (without fsync: cheap), since a slot gives
        # only what the server flushed: an asynchronous commit would reach the job up to 3 x wal_writer_delay late
        logical = ["-c", "wal_level=logical", "-c", "max_replication_slots=64", "-c", "max_wal_senders=16",
                   "-c", "synchronous_commit=on"] if self.logical else ["-c", "synchronous_commit=off"]
        self.process = subprocess.Popen(
            [os.path.join(self.bindir, "postgres"), "-D", self.data, "-p", str(self.port), "-h", "127.0.0.1",
             "-k", self.folder, "-c", "fsync=off", "-c", "full_page_writes=off",
             *logical], stdout=log, stderr=subprocess.STDOUT, cwd=self.folder, **who)
        log.close()
        if self.leftovers is not None:  # a restart: the new process is the one to stop
            self.leftovers.release()
        self.leftovers = Leftovers(folders=[self.folder], pid=self.process.pid)

    def restart(self, timeout: float = 60) -> ScratchPostgres:
        """Stop the server (a fast shutdown) and start it again on the same data and port."""
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGINT)
            self.process.wait(30)
        self._serve(self._as_server_user())
        return self._wait(timeout)

    def _wait(self, timeout: float) -> ScratchPostgres:
        deadline = time.monotonic() + timeout
        from ..connectors.postgres.client import psycopg

        driver = psycopg()
        while True:
            try:
                driver.connect(self.url, connect_timeout=2, **self._login()).close()
                return self
            except driver.OperationalError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"PostgreSQL did not start: {self.log()[-2000:]}") from None
                time.sleep(0.1)

    def _login(self) -> dict:
        return {} if self.password is None else {"password": self.password}

    def log(self) -> str:
        with open(os.path.join(self.folder, "server.log"), errors="replace") as f:
            return f.read()

    def stop(self) -> None:
        """Stop the server by its PID (a fast shutdown, then a kill) and remove its folder."""
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)
        if self.leftovers is not None:
            self.leftovers.clean(stopped=True)

    def sql(self, statement: str, rows=None) -> list:
        """Run ``statement`` (with ``rows``: once per row, as parameters) in one transaction; the rows it gave."""
        from ..connectors.postgres.client import psycopg

        with psycopg().connect(self.url, connect_timeout=30, **self._login()) as conn, conn.cursor() as cur:
            if rows is not None:
                cur.executemany(statement, rows)
                return []
            cur.execute(statement)
            return cur.fetchall() if cur.description else []
