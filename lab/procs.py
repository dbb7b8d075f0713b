"""Starting, identifying and stopping the lab's processes, safely across processes.

Each service runs in its own session (so its own process group): a stop reaches its children
too (Celery's pool, a JVM's helpers) and nothing else. A pid written to stack.json may be
reused by an unrelated process once ours is gone, so every signal is preceded by a check that
the pid still names the process we started: its start time in /proc/<pid>/stat (clock ticks
since boot) must equal the one recorded at spawn.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from lab import ports

_POLL_S = 0.1


@dataclass(frozen=True)
class ProcStat:
    """The few fields of /proc/<pid>/stat the lab needs."""

    state: str
    pgid: int
    start_ticks: int


def read_stat(pid: int) -> ProcStat | None:
    """``pid``'s state, process group and start time; None when there is no such process."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    fields = raw[raw.rindex(")") + 2 :].split()
    return ProcStat(state=fields[0], pgid=int(fields[2]), start_ticks=int(fields[19]))


def boot_id() -> str:
    """Identifies this boot: start times from another boot mean nothing."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _alive(stat: ProcStat | None, pid: int) -> bool:
    """A zombie is dead, except a thread-group leader that exited before its other threads
    (the JVM does this on shutdown): the process, and its sockets, live on in those threads."""
    if stat is None:
        return False
    if stat.state not in ("Z", "X"):
        return True
    try:
        return len(os.listdir(f"/proc/{pid}/task")) > 1
    except OSError:
        return False


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` names a live process, whoever it belongs to."""
    return _alive(read_stat(pid), pid)


def is_running(pid: int, start_ticks: int) -> bool:
    """Whether the process we started as ``pid`` is alive (a zombie is not)."""
    stat = read_stat(pid)
    return stat is not None and stat.start_ticks == start_ticks and _alive(stat, pid)


def group_members(pgid: int) -> list[int]:
    """Live processes of process group ``pgid``."""
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            pid = int(entry)
            stat = read_stat(pid)
            if stat is not None and stat.pgid == pgid and _alive(stat, pid):
                members.append(pid)
    return members


def _reap(pid: int) -> None:
    """Collect ``pid``'s exit status if it is our child, so it does not linger as a zombie."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def spawn(
    argv: Sequence[str], *, env: Mapping[str, str], log_path: Path, cwd: Path
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in a new session, its output appended to ``log_path``.

    The log is appended to, with a header per start, so a restart keeps the history that
    explains why the previous run ended.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        log.write(f"\n=== lab: {stamp} starting: {' '.join(argv)}\n".encode())
        log.flush()
        return subprocess.Popen(
            list(argv),
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def owns_listener(pgid: int, port: int) -> bool:
    """Whether a process of group ``pgid`` is the one listening on ``port``.

    A plain connect would also succeed against somebody else's server that won a race for the
    port; this checks the listening socket's inode against our processes' open sockets.
    """
    listeners = ports.listening_inodes(port)
    return bool(listeners) and any(
        listeners & ports.socket_inodes(member) for member in group_members(pgid)
    )


def _wait_group_gone(pgid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        _reap(pgid)
        if not group_members(pgid):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(_POLL_S)


def terminate_group(
    pid: int,
    start_ticks: int,
    *,
    grace_s: float,
    kill_wait_s: float = 5.0,
    stop_signal: int = signal.SIGTERM,
) -> str:
    """Stop the process group led by ``pid`` (our process started with ``start_ticks``).

    Returns "stopped" (ended on ``stop_signal``), "killed" (needed SIGKILL), "gone" (nothing of ours
    was left) or "not ours" (the pid now names an unrelated process: left alone). If the
    leader is gone, its group may still hold orphans of ours: the kernel does not reuse a pid
    while a group of that id exists, so such members are ours and are stopped too.
    """
    leader = read_stat(pid)
    if leader is not None and leader.start_ticks != start_ticks:
        return "not ours"
    if not group_members(pid):
        _reap(pid)
        return "gone"
    try:
        os.killpg(pid, stop_signal)
    except ProcessLookupError:
        return "gone"
    if _wait_group_gone(pid, grace_s):
        return "stopped"
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        return "stopped"
    if _wait_group_gone(pid, kill_wait_s):
        return "killed"
    raise RuntimeError(f"process group {pid} survived SIGKILL for {kill_wait_s:.0f} s")


def tail(path: Path, lines: int = 25) -> str:
    """The last ``lines`` lines of a log, for error messages that must explain themselves."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 64 * 1024))
            text = handle.read().decode(errors="replace")
    except OSError as exc:
        return f"(log unreadable: {exc})"
    return "\n".join(text.splitlines()[-lines:])
