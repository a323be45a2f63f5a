"""A Spark standalone cluster (a master and workers) and a Spark Connect server on this machine.

    python scripts/cluster.py start  [--state DIR] [--workers 2] [--private PATH]
    python scripts/cluster.py status [--state DIR]
    python scripts/cluster.py stop   [--state DIR]
    python scripts/cluster.py connect-start [--state DIR] [--master URL] [--port N]
    python scripts/cluster.py connect-stop  [--state DIR]

Everything listens on 127.0.0.1 on free ports chosen at start. The processes' PIDs go to
``DIR/cluster.json`` (``DIR/connect.json`` for the Connect server); ``stop`` sends SIGTERM to
each, then SIGKILL after a grace period, and does nothing when nothing runs. ``start`` is
idempotent too: a cluster whose processes all live is reused. Logs are in ``DIR/*.log``.

``--private PATH`` starts the workers in their own mount namespace with an empty tmpfs over
PATH: the workers (and their executors and Python workers) see a different directory there
than the driver does, as executors on other machines see their own local disk. The tests use
it for a job directory that is not shared.

Spark comes from the installed ``pyspark`` package (``SPARK_HOME`` is its folder); the
workers' Python is this interpreter. Importable: the tests call ``start``/``stop`` directly,
and ``kill_worker``/``restart_worker`` to take one node down (its worker and every process in
its work dir, SIGKILL by PID) and bring it back.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

DEFAULT_STATE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".fw-cluster")
CONNECT_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
#: Settings for applications on the small cluster: two 1-core executors of 512 MiB, so a
#: classic driver and the Connect server each get executors at the same time.
APP_CONF = {
    "spark.executor.memory": "512m",
    "spark.executor.cores": "1",
    "spark.cores.max": "2",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
}


def app_conf() -> dict[str, str]:
    """``APP_CONF``, and the executors' JVMs started with the options of the application's driver:
    ``SPARK_SUBMIT_OPTS`` as this process has it (make's test targets give their JVMs C1 only and the serial
    collector, docs/benchmarks.md "Test JVMs"; the executors do most of the cluster run's work)."""
    options = os.environ.get("SPARK_SUBMIT_OPTS", "").strip()
    return {**APP_CONF, **({"spark.executor.extraJavaOptions": options} if options else {})}


class ClusterError(RuntimeError):
    pass


def spark_home() -> str:
    import pyspark

    return os.path.dirname(os.path.abspath(pyspark.__file__))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return True
    if fields[0] != "Z":
        return True
    if int(fields[1]) == os.getpid():  # a zombie child of ours: reap it
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
    return False


def _env(daemon_memory: str = "256m") -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        SPARK_HOME=spark_home(), PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
        # the master's and workers' heap; the launcher also gives it to the Connect server's driver
        SPARK_DAEMON_MEMORY=daemon_memory, SPARK_LOCAL_IP="127.0.0.1", SPARK_NO_DAEMONIZE="1",
        # no REST submission server: it would take the fixed port 6066
        SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",
    )
    env.pop("SPARK_REMOTE", None)
    return env


def _spawn(cmd: list[str], log: str, cwd: str, daemon_memory: str = "256m") -> int:
    with open(log, "ab") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=cwd, env=_env(daemon_memory), start_new_session=True)
    return proc.pid


def _tail(path: str, lines: int = 25) -> str:
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return "(no log)"


def _wait(check, what: str, pids: list[int], log: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        if not all(alive(p) for p in pids):
            raise ClusterError(f"{what}: a process exited; log {log}:\n{_tail(log)}")
        time.sleep(0.3)
    raise ClusterError(f"{what}: not ready after {timeout:.0f}s; log {log}:\n{_tail(log)}")


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _read(path: str) -> dict | None:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _write(path: str, data: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
    os.replace(tmp, path)


def master_state(ui_port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as r:
        return json.load(r)


def _alive_workers(ui_port: int) -> int:
    try:
        return int(master_state(ui_port).get("aliveworkers", 0))
    except (OSError, ValueError):
        return 0


# -- the standalone cluster ---------------------------------------------------------------------


def start(state: str = DEFAULT_STATE, workers: int = 2, private: str | None = None,
          timeout: float = 120) -> dict:
    """Start a master and ``workers`` workers (or reuse the running ones); the cluster's state."""
    os.makedirs(state, exist_ok=True)
    path = os.path.join(state, "cluster.json")
    current = _read(path)
    if current and all(alive(p) for p in current["pids"]):
        return dict(current, state=state)
    stop(state)
    spark_class = os.path.join(spark_home(), "bin", "spark-class")
    port, ui = free_port(), free_port()
    log = os.path.join(state, "master.log")
    info = {"master": f"spark://127.0.0.1:{port}", "master_ui": ui, "pids": [], "logs": [log],
            "work_dirs": [], "private": private, "state": state}
    try:
        info["pids"].append(_spawn([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                    "--port", str(port), "--webui-port", str(ui)], log, state))
        _write(path, info)
        _wait(lambda: port_open(port) and port_open(ui), "master",
              info["pids"], log, timeout)
        for i in range(workers):
            work = os.path.join(state, f"worker-{i}")
            wlog = os.path.join(state, f"worker-{i}.log")
            info["pids"].append(_spawn_worker(info, work, wlog)[0])
            info["logs"].append(wlog)
            info["work_dirs"].append(work)
            _write(path, info)
        _wait(lambda: _alive_workers(ui) == workers, f"{workers} workers registered", info["pids"],
              info["logs"][-1], timeout)
    except BaseException:
        stop(state)
        raise
    return info


def _spawn_worker(info: dict, work: str, log: str) -> tuple[int, int]:
    """Start one worker of the cluster in ``info`` (2 cores, 1 GiB, its own work dir); its PID and port."""
    os.makedirs(work, exist_ok=True)
    port = free_port()
    cmd = [os.path.join(spark_home(), "bin", "spark-class"), "org.apache.spark.deploy.worker.Worker", info["master"],
           "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(free_port()),
           "--cores", "2", "--memory", "1g", "--work-dir", work]
    private = info.get("private")
    if private:
        os.makedirs(private, exist_ok=True)
        cmd = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
               'mount -t tmpfs fw-private "$0" && exec "$@"', private, *cmd]
    return _spawn(cmd, log, work), port


def _registered(ui_port: int, worker_port: int) -> bool:
    try:
        workers = master_state(ui_port).get("workers", [])
    except (OSError, ValueError):
        return False
    return any(w.get("port") == worker_port and w.get("state") == "ALIVE" for w in workers)


def processes_under(folder: str) -> list[int]:
    """PIDs of the processes whose working directory is ``folder`` or below it (Linux /proc)."""
    folder = os.path.realpath(folder) + os.sep
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if (os.readlink(f"/proc/{entry}/cwd") + os.sep).startswith(folder):
                    found.append(int(entry))
    return found


def kill_worker(state: str, index: int) -> list[int]:
    """A node dies: SIGKILL worker ``index`` and every process running in its work dir (its executors
    and their Python workers), by PID; the PIDs killed. ``restart_worker`` brings it back."""
    info = _read(os.path.join(state, "cluster.json"))
    worker = info["pids"][1 + index]
    pids = [worker, *(p for p in processes_under(info["work_dirs"][index]) if p != worker and p != os.getpid())]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    _kill(pids, grace=0)
    return pids


def restart_worker(state: str, index: int, timeout: float = 120) -> dict:
    """Start worker ``index`` again (after ``kill_worker``) and wait until the master lists it alive."""
    path = os.path.join(state, "cluster.json")
    info = _read(path)
    if alive(info["pids"][1 + index]):
        return info
    log = info["logs"][1 + index]
    info["pids"][1 + index], port = _spawn_worker(info, info["work_dirs"][index], log)
    _write(path, info)
    _wait(lambda: _registered(info["master_ui"], port), f"worker {index} registered again", info["pids"], log, timeout)
    return dict(info, state=state)


def _kill(pids: list[int], grace: float) -> None:
    for pid in pids:
        if alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.1)
    for pid in pids:
        if alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.1)


def stop(state: str = DEFAULT_STATE, grace: float = 10) -> list[int]:
    """Stop the cluster's processes by PID (workers first); the PIDs that were signalled."""
    path = os.path.join(state, "cluster.json")
    info = _read(path)
    if not info:
        return []
    pids = list(reversed(info["pids"]))
    _kill(pids, grace)
    with contextlib.suppress(OSError):
        os.remove(path)
    return pids


def status(state: str = DEFAULT_STATE) -> dict | None:
    info = _read(os.path.join(state, "cluster.json"))
    if not info:
        return None
    info["alive"] = {str(p): alive(p) for p in info["pids"]}
    info["alive_workers"] = _alive_workers(info["master_ui"]) if alive(info["pids"][0]) else 0
    return info


# -- the Spark Connect server -------------------------------------------------------------------


def connect_start(state: str = DEFAULT_STATE, master: str = "local[2]", port: int | None = None,
                  conf: dict[str, str] | None = None, timeout: float = 180) -> dict:
    """Start a Spark Connect server as its own process (or reuse a live one); its state."""
    os.makedirs(state, exist_ok=True)
    path = os.path.join(state, "connect.json")
    current = _read(path)
    if current and alive(current["pid"]) and (port is None or current["port"] == port):
        return current
    connect_stop(state)
    port = port or free_port()
    log = os.path.join(state, "connect.log")
    settings = {**app_conf(), **(conf or {}), "spark.connect.grpc.binding.port": str(port),
                "spark.connect.grpc.binding.address": "127.0.0.1", "spark.pyspark.python": sys.executable}
    cmd = [os.path.join(spark_home(), "bin", "spark-submit"), "--class", CONNECT_CLASS,
           "--name", "fw-magics connect server", "--master", master, "--driver-memory", "1g"]
    for key, value in settings.items():
        cmd += ["--conf", f"{key}={value}"]
    with open(log, "ab") as f:
        f.write(f"\n--- starting on port {port} at {time.ctime()}\n".encode())
    info = {"url": f"sc://127.0.0.1:{port}", "port": port, "master": master, "log": log}
    info["pid"] = _spawn(cmd, log, state, daemon_memory="1g")
    _write(path, info)
    try:
        _wait(lambda: port_open(port), f"Spark Connect server on port {port}", [info["pid"]], log, timeout)
    except BaseException:
        connect_stop(state)
        raise
    return info


def connect_stop(state: str = DEFAULT_STATE, grace: float = 10, sig: int = signal.SIGTERM) -> int | None:
    """Stop the Connect server by PID (``sig=SIGKILL`` kills it at once); the PID, if any."""
    path = os.path.join(state, "connect.json")
    info = _read(path)
    if not info:
        return None
    if sig == signal.SIGKILL and alive(info["pid"]):
        os.kill(info["pid"], signal.SIGKILL)
    _kill([info["pid"]], grace)
    with contextlib.suppress(OSError):
        os.remove(path)
    return info["pid"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["start", "stop", "status", "connect-start", "connect-stop"])
    parser.add_argument("--state", default=DEFAULT_STATE, help="folder for PIDs, logs and work dirs")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--private", help="a path the workers see as an empty tmpfs of their own")
    parser.add_argument("--master", help="connect-start: the master (default: the running cluster, else local[2])")
    parser.add_argument("--port", type=int, help="connect-start: the port (default: a free one)")
    args = parser.parse_args(argv)
    state = os.path.abspath(args.state)
    try:
        if args.command == "start":
            info = start(state, args.workers, args.private)
            print(info["master"])
        elif args.command == "stop":
            connect_stop(state)
            print(f"stopped {len(stop(state))} processes")
        elif args.command == "status":
            info = status(state)
            if not info:
                print("not running")
                return 1
            print(json.dumps(info, indent=1))
            return 0 if all(info["alive"].values()) else 1
        elif args.command == "connect-start":
            running = status(state)
            master = args.master or (running["master"] if running else "local[2]")
            print(connect_start(state, master, args.port)["url"])
        else:
            print("stopped" if connect_stop(state) else "not running")
    except ClusterError as error:
        print(f"cluster.py: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
