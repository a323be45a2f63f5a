#!/usr/bin/env bash
# Installs what fw-magics needs outside Python: Java 17+ (for Spark 4) and Graphviz's dot.
# As root on Debian/Ubuntu it installs the packages; otherwise it says exactly what to install.
set -euo pipefail

need=()
java_ok() {
    local java="${JAVA_HOME:+$JAVA_HOME/bin/}java"
    command -v "$java" >/dev/null 2>&1 || return 1
    local major
    major=$("$java" -version 2>&1 | sed -n 's/.*version "\([0-9]*\)\.\{0,1\}\([0-9]*\).*/\1/p' | head -1)
    [ -n "$major" ] && [ "$major" -ge 17 ]
}
java_ok || need+=(openjdk-17-jre-headless)
command -v dot >/dev/null 2>&1 || need+=(graphviz)
# PostgreSQL's server binaries are not on PATH on Debian (/usr/lib/postgresql/<version>/bin)
on_path_or_debian() { command -v "$1" >/dev/null 2>&1 || compgen -G "/usr/lib/postgresql/*/bin/$1" >/dev/null; }
for pkg in "$@"; do  # extra packages asked for by the caller (chromium for browser tests, postgresql)
    on_path_or_debian "${pkg%%:*}" || need+=("${pkg#*:}")
done

[ ${#need[@]} -eq 0 ] && exit 0

if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian packages: ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # another apt (an unattended upgrade at boot) may hold dpkg's lock: wait for it, up to 10 minutes
    apt-get -o DPkg::Lock::Timeout=600 update -qq
    apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    exit 0
fi

echo "fw-magics needs these system packages: ${need[*]}" >&2
echo "  Debian/Ubuntu: sudo apt-get install ${need[*]}" >&2
echo "  macOS:         brew install openjdk@17 graphviz   (and set JAVA_HOME)" >&2
exit 1
