"""What an embedded Spark runs: its ``java`` and that java's version, and its Spark home (no Spark import)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess


def spark_home() -> str:
    """The Spark an embedded session runs: ``$SPARK_HOME``, else pyspark's own folder."""
    import pyspark

    return os.environ.get("SPARK_HOME") or os.path.dirname(os.path.abspath(pyspark.__file__))


def java_binary() -> str | None:
    """The ``java`` Spark would use (``$JAVA_HOME/bin/java``, else the one on the PATH), if it exists."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return java if java and os.path.exists(java) else None


_versions: dict[tuple, tuple[int, str] | None] = {}  # (path, size, mtime) -> java_version's answer


def java_version(java: str | None = None) -> tuple[int, str] | None:
    """The major version and banner of the ``java`` Spark would use, or None if there is none.
    Asked once per binary (an embedded start needs it for the Java check and the class archive)."""
    java = java or java_binary()
    if java is None or not os.path.exists(java):
        return None
    stat = os.stat(java)
    key = (os.path.realpath(java), stat.st_size, stat.st_mtime_ns)
    if key not in _versions:
        _versions[key] = _ask_version(java)
    return _versions[key]


def _ask_version(java: str) -> tuple[int, str] | None:
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except OSError:
        return None
    # The banner's version line, not always its first: a JVM started with JAVA_TOOL_OPTIONS (or
    # _JAVA_OPTIONS) set prints "Picked up JAVA_TOOL_OPTIONS: ..." before it.
    match = re.search(r'^.*version "(\d+)(?:\.(\d+))?.*$', out.stderr or out.stdout, re.M)
    if not match:
        return None
    major = int(match.group(1))
    if major == 1 and match.group(2):  # "1.8.0_392" style
        major = int(match.group(2))
    return major, match.group(0).strip()
