"""Which addresses a process listens on, read from /proc (Linux): its sockets' inodes, looked up in the
network namespace's TCP tables. A test of "no listener off loopback" reads what the kernel says, not
Spark's settings."""

from __future__ import annotations

import ipaddress
import os

LISTEN = "0A"  # the TCP state column of /proc/net/tcp


def _address(hex_address: str) -> str:
    """``0100007F`` (IPv4) or 32 hex digits (IPv6, four little-endian words) as an address."""
    raw = bytes.fromhex(hex_address)
    if len(raw) == 4:
        return str(ipaddress.IPv4Address(raw[::-1]))
    ip = ipaddress.IPv6Address(b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4)))
    return str(ip.ipv4_mapped or ip)


def listening(pid: int) -> list[tuple[str, int]]:
    """The (address, port) pairs process ``pid`` listens on (TCP, IPv4 and IPv6)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    found = []
    for table in ("tcp", "tcp6"):
        with open(f"/proc/{pid}/net/{table}") as f:
            next(f)
            for line in f:
                fields = line.split()
                local, state, inode = fields[1], fields[3], fields[9]
                if state == LISTEN and inode in inodes:
                    address, port = local.split(":")
                    found.append((_address(address), int(port, 16)))
    return sorted(found)


def off_loopback(pid: int) -> list[tuple[str, int]]:
    """The listeners of ``pid`` reachable from another machine: any address but loopback (an IPv4-mapped
    IPv6 address is read as its IPv4 one; ``::`` and ``0.0.0.0`` are every interface)."""
    return [(address, port) for address, port in listening(pid) if not ipaddress.ip_address(address).is_loopback]


def java_children(pid: int | None = None) -> list[int]:
    """The JVMs whose parent is ``pid`` (this process): the embedded Spark's."""
    parent, found = str(pid or os.getpid()), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                name, rest = f.read().rsplit(")", 1)
        except OSError:
            continue
        if rest.split()[1] == parent and name.endswith("(java"):
            found.append(int(entry))
    return found
