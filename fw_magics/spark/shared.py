"""A warm Spark shared by one user's kernels (opt-in): a kernel restart finds Spark already running.

``FW_SPARK_SHARED=1`` (or ``fw.get_spark(shared=True)``) makes ``get_spark()`` connect to a Spark
Connect server on loopback that outlives the kernel, started on first use. Most of a fresh kernel's
first result is Spark's start: Kernel > Restart to the first result took 8.01 s embedded, 1.87 s
with the server warm (docs/benchmarks.md, "Cold start").

The server is PySpark's own persistent local Connect server (``spark.local.connect.reuse``,
``pyspark.sql.connect.local_server``): started through ``sbin/start-connect-server.sh``, bound to
127.0.0.1, with a random token kept in a ``0600`` discovery file inside a ``0700`` folder, so another
user can neither read the token nor connect; every kernel gets its own server-side session (its
own temporary views and SQL settings). What fw-magics adds:

* one server **per user and Python environment** (``folder``): the server's Python workers run the
  interpreter of the kernel that started it, so a kernel of another virtualenv gets its own;
* the embedded session's settings (``session.embedded_conf``: the JVM class archive, quiet logs, the
  Arrow batch sizes, every listener on loopback and the UI's kill links off), the JVM's at the server's
  start, the SQL ones on each kernel's session;
* **an idle timeout** (PySpark's server runs until stopped): each kernel that connects leaves a
  lease (its pid and start time) in the folder, and a small watchdog process stops the server once
  no leased process has been alive for ``FW_SPARK_SHARED_IDLE`` seconds (default 1800; each lease
  records its kernel's setting, and the longest of the kernels that last used it holds);
* **a kernel's end ends its session**: the lease names the kernel's Spark Connect session, and once
  the kernel is gone (restarted, shut down, killed) the watchdog stops that session's streaming
  queries and releases it within a few seconds, as a classic session's queries end with their
  kernel's JVM: a job resumed in the restarted kernel never races a headless copy of itself;
* ``python -m fw_magics.spark.shared --stop`` stops it at once; ``--status`` says what runs.

Trade-offs (docs/semantics.md): the server's JVM settings are those of the kernel that started it
(``conf`` given to a later ``get_spark`` sets only SQL settings); a session is Spark Connect, so the
limits of a remote Connect server apply (docs/limits.md); memory stays in use while idle.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import getpass
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

from ..processes import alive

ENV = "FW_SPARK_SHARED"
IDLE_ENV = "FW_SPARK_SHARED_IDLE"
#: Where the shared server's files live; default a per-user folder under the system's temp dir.
DIR_ENV = "FW_SPARK_SHARED_DIR"
DEFAULT_IDLE_S = 1800
DISCOVERY = "connect-local.json"
LEASES = "leases"
WATCHDOG_LOCK = "watchdog.lock"
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
WATCHDOG_LOG = "watchdog.log"
#: The watchdog's log is moved to ``watchdog.log.1`` (the one before it dropped) when a watchdog
#: starts and finds it larger: a server shared for months keeps at most twice this on disk.
WATCHDOG_LOG_BYTES = 1 << 20


def wanted(shared: bool | None) -> bool:
    """``shared`` if given, else whether ``FW_SPARK_SHARED`` asks for it (1/true/yes; 0/false/no/empty)."""
    if shared is not None:
        return bool(shared)
    value = os.environ.get(ENV, "").strip().lower()
    if value in ("", "0", "false", "no"):
        return False
    if value in ("1", "true", "yes"):
        return True
    from ..errors import SparkUnavailableError

    raise SparkUnavailableError(f"{ENV}={value!r}; accepted: 1, true or yes (shared), 0, false or no")


def idle_seconds() -> float:
    """``FW_SPARK_SHARED_IDLE`` (seconds > 0), else ``DEFAULT_IDLE_S``."""
    value = os.environ.get(IDLE_ENV, "").strip()
    if not value:
        return DEFAULT_IDLE_S
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1
    if not seconds > 0:
        from ..errors import SparkUnavailableError

        raise SparkUnavailableError(f"{IDLE_ENV}={value!r}; accepted: a number of seconds > 0")
    return seconds


def folder() -> str:
    """This user's and this Python environment's folder (``0700``, refused if another user owns it)."""
    from pyspark.version import __version__

    from ..errors import SparkUnavailableError

    given = os.environ.get(DIR_ENV)
    env = hashlib.sha256(f"{sys.prefix}\0{__version__}".encode()).hexdigest()[:12]
    path = given or os.path.join(tempfile.gettempdir(), f"fw-magics-shared-{getpass.getuser()}", env)
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        for part in [path] if given else [os.path.dirname(path), path]:
            if os.stat(part).st_uid != os.getuid():
                raise SparkUnavailableError(f"{part} belongs to another user; set {DIR_ENV} to a folder of yours")
            os.chmod(part, 0o700)
    except OSError as error:
        raise SparkUnavailableError(f"cannot use {path} for the shared Spark ({error.strerror}); "
                                    f"set {DIR_ENV} to a folder of yours") from error
    return path


def session(master: str, sql: dict[str, str]):
    """A Spark Connect session on this user's shared server, started on ``master`` if none runs (with
    the JVM settings of ``PYSPARK_REMOTE_INIT_CONF_*``, as PySpark starts a local server); ``sql``:
    this kernel's session's settings (see the module)."""
    from pyspark.sql import SparkSession

    from . import jvm_output

    directory = folder()
    idle = idle_seconds()
    os.environ["SPARK_LOCAL_CONNECT_DISCOVERY"] = os.path.join(directory, DISCOVERY)
    take_lease(directory, idle=idle)  # before the server is looked for: the watchdog then cannot stop it under us
    if not _running(directory):
        _start_outside(master, directory, idle)
    builder = SparkSession.builder.appName("fw-magics").config("spark.local.connect.reuse", "true")
    for key, value in sql.items():
        builder = builder.config(key, value)
    with jvm_output.filtered_stderr():
        spark = builder.remote(master).getOrCreate()
    take_lease(directory, session_id=spark.session_id, idle=idle)
    start_watchdog(directory, idle)
    return spark


def _running(directory: str) -> bool:
    """Whether the recorded server runs and listens, for this PySpark (what PySpark reuses)."""
    from pyspark.version import __version__

    with _discovery(directory) as discovery:
        recorded = discovery.load()
    return (recorded is not None and recorded["spark_version"] == __version__ and alive(recorded["pid"])
            and _listening(recorded["port"]))


def _start_outside(master: str, directory: str, idle: float) -> None:
    """Have the server running, started by a process in a session of its own if none runs, which then
    starts the watchdog: Jupyter stops a kernel by signalling its whole process group, and a server
    started from the kernel itself (PySpark's launcher runs the start script as the kernel's child)
    would die with it; a kernel killed right after the start must not leave a server unwatched."""
    from ..errors import SparkUnavailableError

    command = [sys.executable, "-m", "fw_magics.spark.shared", "--start", master, "--folder", directory,
               "--idle", str(idle)]
    done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          start_new_session=True, timeout=300)
    if done.returncode != 0:
        lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
        raise SparkUnavailableError("the shared Spark did not start: " + (lines[-1] if lines else f"exit {done.returncode}"))


def _started(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux), telling a reused pid apart."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def take_lease(directory: str, pid: int | None = None, session_id: str | None = None,
               idle: float | None = None) -> None:
    """Record that process ``pid`` (this one) uses the server, and its Spark Connect session once it
    has one: the watchdog keeps the server while the process lives, and ends the session after;
    ``idle``: how long the process wants the server kept after it (its ``FW_SPARK_SHARED_IDLE``)."""
    pid = pid or os.getpid()
    leases = os.path.join(directory, LEASES)
    os.makedirs(leases, mode=0o700, exist_ok=True)
    path = os.path.join(leases, str(pid))
    with open(path + ".tmp", "w") as f:
        json.dump({"started": _started(pid), "session": session_id, "idle": idle}, f)
    os.replace(path + ".tmp", path)  # whole: the watchdog never reads half a lease


def _leases(directory: str):
    """Each written lease: ``(path, pid, lease)``, ``lease`` its JSON as a dict ({} when unreadable)."""
    leases = os.path.join(directory, LEASES)
    for name in os.listdir(leases) if os.path.isdir(leases) else ():
        if not name.isdigit():
            continue  # a lease being written
        path = os.path.join(leases, name)
        try:
            with open(path) as f:
                lease = json.load(f)
        except (ValueError, OSError):
            lease = {}
        yield path, int(name), lease if isinstance(lease, dict) else {}


def live_leases(directory: str, ended: list | None = None) -> list[int]:
    """The leased processes still alive; the leases of the others are removed (their sessions, if
    any, added to ``ended``)."""
    living = []
    for path, pid, lease in _leases(directory):
        started = lease.get("started")
        if alive(pid) and (not started or _started(pid) in (None, started)):
            living.append(pid)  # (a pid given to another process since is not the leased one)
            continue
        if ended is not None and isinstance(lease.get("session"), str):
            ended.append(lease["session"])
        with contextlib.suppress(OSError):
            os.remove(path)
    return living


def longest_idle(directory: str, idle: float) -> float:
    """``idle``, or longer if a lease asks for longer: how long the server is kept after its last kernel."""
    asked = [lease.get("idle") for _, _, lease in _leases(directory)]
    return max([idle] + [float(a) for a in asked if isinstance(a, (int, float)) and not isinstance(a, bool)])


def end_session(directory: str, session_id: str) -> int:
    """Stop the streaming queries of a Spark Connect session whose kernel is gone, and release the
    session: on a server that outlives kernels they would run on headless (a classic session's end
    with its kernel's JVM). How many queries were stopped; 0 if the session is gone already."""
    from pyspark.sql import SparkSession

    with _discovery(directory) as discovery:
        recorded = discovery.load()
    if recorded is None:
        return 0
    os.environ["SPARK_CONNECT_AUTHENTICATE_TOKEN"] = recorded["token"]
    stopped = 0
    try:
        spark = SparkSession.builder.remote(f"sc://localhost:{recorded['port']}/;session_id={session_id}").create()
        for query in spark.streams.active:
            query.stop()
            stopped += 1
        spark.stop()
    except Exception as error:  # the session ended or was never made: nothing runs in it
        print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} session {session_id}: {type(error).__name__}", flush=True)
    return stopped


def _watchdog_lock(directory: str):
    """The watchdog's lock, taken without waiting; None if another watchdog holds it."""
    try:
        handle = open(os.path.join(directory, WATCHDOG_LOCK), "a+")
    except FileNotFoundError:
        return None  # the folder is gone: nothing to watch
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    return handle


def start_watchdog(directory: str, idle: float) -> None:
    """Start the watchdog (a detached process) unless one already watches this folder."""
    held = _watchdog_lock(directory)
    if held is None:
        return
    held.close()  # free for the child to take (a second one started meanwhile exits at once)
    with open(rotated(os.path.join(directory, WATCHDOG_LOG)), "ab") as log:
        subprocess.Popen([sys.executable, "-m", "fw_magics.spark.shared", "--watch", directory, "--idle", str(idle)],
                         stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                         env={k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_REMOTE_INIT_CONF")})


def rotated(path: str, limit: int = WATCHDOG_LOG_BYTES) -> str:
    """``path``, first moved to ``path.1`` (replacing it) if it has grown past ``limit`` bytes."""
    with contextlib.suppress(FileNotFoundError):
        if os.path.getsize(path) > limit:
            os.replace(path, path + ".1")
    return path


@contextlib.contextmanager
def _discovery(directory: str):
    """PySpark's discovery file of the server, under its lock (every reader and writer takes it)."""
    from pyspark.sql.connect.local_server import Discovery

    with Discovery(os.path.join(directory, DISCOVERY)) as discovery:
        yield discovery


def _is_server(pid: int) -> bool | None:
    """Whether ``pid`` is a Spark Connect server's JVM (None: cannot be read here)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return SERVER_CLASS.encode() in f.read()
    except FileNotFoundError:
        return False
    except OSError:
        return None


def _listening(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def stop(directory: str | None = None, wait_s: float = 30.0) -> int | None:
    """Stop the shared server (if one runs), wait for its JVM to end, forget it; its pid, or None."""
    directory = directory or folder()
    with _discovery(directory) as discovery:
        recorded = discovery.load()
        pid = recorded["pid"] if recorded else None
        if pid is not None and alive(pid) and _is_server(pid) is not False:
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + wait_s
            while alive(pid) and time.monotonic() < deadline:
                time.sleep(0.2)
            if alive(pid):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
        else:
            pid = None
        discovery.clear()
    return pid


def watch(directory: str, idle: float, poll: float | None = None) -> None:
    """The watchdog's loop: stop the server once no leased process has lived for ``idle`` seconds (or
    the longer time a lease of the kernels that last used it asks for); return when the server is
    gone (stopped here or elsewhere)."""
    import pyspark.sql.connect.local_server  # noqa: F401 (now: a poll then finds a removed folder gone at once)

    held = _watchdog_lock(directory)
    if held is None:
        return  # another watchdog watches, or the folder is gone
    poll = poll or max(0.5, min(5.0, idle / 4))
    last_used, wait = time.monotonic(), idle
    try:
        while True:
            time.sleep(poll)
            if not os.path.isdir(directory):
                return  # removed (its server stopped first): nothing to watch, and nothing to make again
            ended: list[str] = []
            if live_leases(directory, ended):
                last_used, wait = time.monotonic(), longest_idle(directory, idle)
            for session_id in ended:
                stopped = end_session(directory, session_id)
                print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} a kernel ended: its session released, {stopped} "
                      "streaming queries stopped", flush=True)
            with _discovery(directory) as discovery:
                recorded = discovery.load()
                if recorded is None or not alive(recorded["pid"]):
                    return  # stopped elsewhere
                if time.monotonic() - last_used < wait or live_leases(directory):
                    continue  # leases read again under the lock: a kernel connecting now holds one
            print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} no kernel for {wait:g} s: stopping the shared Spark",
                  flush=True)
            stop(directory)
            return
    finally:
        held.close()


def status(directory: str | None = None) -> dict:
    """What runs: the server's pid and address (or None), the live leases, the folder."""
    directory = directory or folder()
    with _discovery(directory) as discovery:
        recorded = discovery.load()
    running = recorded is not None and alive(recorded["pid"]) and _listening(recorded["port"])
    return {"folder": directory, "server_pid": recorded["pid"] if running else None,
            "address": f"sc://{recorded['host']}:{recorded['port']}" if running else None,
            "kernels": live_leases(directory)}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m fw_magics.spark.shared",
                                     description="The warm Spark shared by this user's kernels (FW_SPARK_SHARED=1).")
    parser.add_argument("--stop", action="store_true", help="stop the shared server now")
    parser.add_argument("--status", action="store_true", help="say whether it runs, where, and for which kernels")
    parser.add_argument("--watch", metavar="FOLDER", help=argparse.SUPPRESS)
    parser.add_argument("--start", metavar="MASTER", help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    parser.add_argument("--idle", type=float, default=DEFAULT_IDLE_S, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.start:  # (session(): in a process group of its own, with the kernel's settings inherited)
        from pyspark.sql.connect.local_server import reuse_or_start_local_connect_server

        os.environ["SPARK_LOCAL_CONNECT_DISCOVERY"] = os.path.join(args.folder, DISCOVERY)
        reuse_or_start_local_connect_server(args.start, {})
        start_watchdog(args.folder, args.idle)
    elif args.watch:
        watch(args.watch, args.idle)
    elif args.stop:
        pid = stop()
        print(f"stopped the shared Spark (pid {pid})" if pid else "no shared Spark was running")
    else:
        print(json.dumps(status(), indent=1))


if __name__ == "__main__":
    main()
