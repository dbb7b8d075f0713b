"""Local ports for the lab's services: picking free ones and telling who listens on them.

Ports are picked below the kernel's ephemeral range, so that a service restarted on its old
port (the outage scenarios) does not find it taken by some client's outgoing connection.
Several engineers and CI may run stacks side by side on one machine, so "free" is checked, not
assumed, and a listener is only trusted when it belongs to our own process group. A port is
free to take only once it is also claimed: a stack binds its ports seconds after picking them
(a service at a time), and another stack starting meanwhile found the same port free (a
fresh-clone run's Redis then failed with "Address already in use"). A claim is a file named
after the port in a directory every process on the machine shares, holding the picking
process's pid; it lapses when that process is gone.
"""

from __future__ import annotations

import os
import random
import socket
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

LOOPBACK = "127.0.0.1"
_LOWEST = 20000
_LISTEN_STATE = "0A"  # TCP_LISTEN in /proc/net/tcp
CLAIMS = Path(tempfile.gettempdir()) / "lagwatch-lab-ports"
# A claim file still empty this long after its creation belongs to a process that died
# between creating and writing it.
_EMPTY_CLAIM_S = 60.0


def ephemeral_range() -> tuple[int, int]:
    """The kernel's range for outgoing connections' local ports, which the lab stays out of."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def is_free(port: int, *, reuse_addr: bool = False, host: str = LOOPBACK) -> bool:
    """Whether a server could listen on ``host:port`` now.

    Without ``reuse_addr`` a port with connections in TIME_WAIT counts as taken, which is the
    cautious answer when choosing a port; with it, the answer matches what a restarting server
    (all of ours set SO_REUSEADDR) will see.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        if reuse_addr:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
            sock.listen(1)
        except OSError:
            return False
    return True


def pick_free_ports(count: int, *, exclude: Iterable[int] = ()) -> list[int]:
    """``count`` distinct free ports below the ephemeral range, none of them in ``exclude``."""
    low_ephemeral, _ = ephemeral_range()
    high = max(low_ephemeral - 1, _LOWEST + 1000)
    taken = set(exclude)
    chosen: list[int] = []
    for _ in range(count * 200):
        if len(chosen) == count:
            return chosen
        port = random.randint(_LOWEST, high)
        if port not in taken and is_free(port) and claim(port):
            taken.add(port)
            chosen.append(port)
    if len(chosen) == count:
        return chosen
    raise OSError(f"no free local port found in {_LOWEST}-{high} after many tries")


def claim(port: int) -> bool:
    """Claim ``port`` for this process against every other lab process on the machine; False
    if a live process (this one included) claimed it already."""
    CLAIMS.mkdir(parents=True, exist_ok=True)
    path = CLAIMS / str(port)
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            if _claim_holds(path):
                return False
            path.unlink(missing_ok=True)  # a dead process's claim: take it over
            continue
        with os.fdopen(fd, "w") as out:
            out.write(str(os.getpid()))
        return True
    return False


def _claim_holds(path: Path) -> bool:
    try:
        text = path.read_text().strip()
        age = time.time() - path.stat().st_mtime
    except OSError:
        return False  # gone meanwhile
    if not text:
        return age < _EMPTY_CLAIM_S  # being written, or its writer died right there
    try:
        pid = int(text)
    except ValueError:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's live process
    return True


def accepts_connections(port: int, *, host: str = LOOPBACK, timeout: float = 0.5) -> bool:
    """Whether anything at all answers a TCP connect on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def listening_inodes(port: int) -> set[int]:
    """Socket inodes of every TCP listener on ``port`` (any address) in this network namespace."""
    inodes: set[int] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or fields[3] != _LISTEN_STATE:
                continue
            if int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(int(fields[9]))
    return inodes


def socket_inodes(pid: int) -> set[int]:
    """Inodes of the sockets process ``pid`` holds open (empty if it is gone or not readable)."""
    inodes: set[int] = set()
    fd_dir = f"/proc/{pid}/fd"
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return inodes
    for name in names:
        try:
            target = os.readlink(f"{fd_dir}/{name}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


def four_letter_word(addr: str, word: str, timeout: float = 2.0) -> str:
    """Send a ZooKeeper four-letter command and return the whole answer."""
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(word.encode())
        chunks = []
        while chunk := sock.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")
