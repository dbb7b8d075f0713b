"""The batched-read engine the ZooKeeper walks run on: kazoo requests by tree level.

Reads are batched by tree level, never one blocking round trip per node: a walk is a generator
that yields every request of its next level (``Batch``es), and :func:`run` issues the levels
of all walks at once with kazoo's ``*_async`` calls, then gathers the ``IAsyncResult`` objects
rather than calling back. Callbacks would run one by one on kazoo's single completion thread;
gathering lets the connection thread do nothing but I/O. ZooKeeper answers one session's
requests in order, so waiting for the last reply of a batch waits for the whole batch. The
kazoo client runs on a handler whose ``select`` is one ``poll(2)`` (:class:`PollHandler`):
kazoo's own sets up and tears down an epoll instance per wait, which was half the CPU of a
10,000-node cycle.

Apart from the walks because it knows nothing of what a node means: only which failures are
a node's own business (gone, not allowed) and which make the session untrustworthy
(:class:`CycleFailed`), which the walks and the source rely on alike.
"""

from __future__ import annotations

import contextlib
import select
import time
from collections.abc import Generator, Sequence
from typing import Any, Final

from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, NoNodeError
from kazoo.handlers.threading import SequentialThreadingHandler
from kazoo.handlers.utils import fileobj_to_fd
from kazoo.interfaces import IAsyncResult

from collectors.records import Source, SourceError

__all__ = [
    "GET",
    "LS",
    "LS_STAT",
    "MISSING",
    "Batch",
    "CycleFailed",
    "PollHandler",
    "Replies",
    "Walker",
    "child_path",
    "new_kazoo_handler",
    "node_key",
    "run",
    "value",
]

# Request kinds a walker can ask for.
LS: Final = 0  # children
LS_STAT: Final = 1  # children and the parent's Stat (for cversion)
GET: Final = 2  # data and Stat


class PollHandler(SequentialThreadingHandler):
    """kazoo's threading handler with a ``select`` that costs one system call, not five.

    kazoo's stock ``select`` builds an epoll instance, registers the sockets, waits and
    closes it again on every call, and its connection thread calls it about four times per
    request. With thousands of requests per cycle that bookkeeping, not ZooKeeper, is most of
    the cycle: a bare async walk over 10,000 nodes spends half its CPU there (see
    benchmarks/bench_zookeeper.py). ``poll(2)`` has no limit on descriptor numbers, the
    reason kazoo moved off ``select(2)``, so nothing is given up. Semantics follow kazoo's
    ``selector_select``:
    a descriptor in error or hung up counts as readable (the next ``recv`` reports it), and
    one that is both readable and writable is reported as readable only.
    """

    def select(self, *args: Any, **kwargs: Any) -> tuple[list[Any], list[Any], list[Any]]:
        return _poll_select(*args, **kwargs)


_POLL_READ: Final = select.POLLIN | select.POLLPRI if hasattr(select, "poll") else 0
_POLL_WRITE: Final = select.POLLOUT if hasattr(select, "poll") else 0
_POLL_READABLE: Final = (
    _POLL_READ | select.POLLERR | select.POLLHUP | select.POLLNVAL if hasattr(select, "poll") else 0
)


def _poll_select(
    rlist: Sequence[Any], wlist: Sequence[Any], xlist: Sequence[Any], timeout: float | None = None
) -> tuple[list[Any], list[Any], list[Any]]:
    if timeout is not None and timeout < 0:
        raise ValueError("timeout must be non-negative")
    masks: dict[int, int] = {}
    objects: dict[int, list[Any]] = {}
    for wanted, fileobjs in ((_POLL_READ, rlist), (_POLL_WRITE, wlist)):
        for fileobj in fileobjs:
            fd = fileobj_to_fd(fileobj)
            masks[fd] = masks.get(fd, 0) | wanted
            objects.setdefault(fd, []).append(fileobj)
    poller = select.poll()
    for fd, mask in masks.items():
        poller.register(fd, mask)
    readable: list[Any] = []
    writable: list[Any] = []
    for fd, events in poller.poll(None if timeout is None else timeout * 1000):
        if events & _POLL_READABLE and masks[fd] & _POLL_READ:
            readable.extend(objects[fd])
        elif events:
            writable.extend(objects[fd])
    return readable, writable, []


def new_kazoo_handler() -> SequentialThreadingHandler:
    """A handler for ``KazooClient(handler=...)``: the poll-based one where poll(2) exists.

    Public so that other kazoo users with many requests (benchmarks, the lab) get the same
    per-request cost as the adapter; one handler per client, as kazoo requires.
    """
    return PollHandler() if hasattr(select, "poll") else SequentialThreadingHandler()


class CycleFailed(Exception):
    """The session cannot be trusted for the rest of this cycle."""


Batch = tuple[int, list[str]]
Replies = list[list[IAsyncResult]]
Walker = Generator[list[Batch], Replies, None]


def child_path(parent: str, child: str) -> str:
    return f"{parent}/{child}" if parent != "/" else f"/{child}"


def node_key(name: str) -> tuple[int, str]:
    """Order partition_2 before partition_10 (and 2 before 10), cheaply and stably.

    Names Storm and Kafka write have no leading zeros, so among names of one shape the
    shorter is the smaller number; anything else still gets a fixed order.
    """
    return (len(name), name)


class _Missing:
    """Marker for a node that no longer exists (distinct from a reply of None)."""

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "<missing>"


MISSING: Final[Any] = _Missing()


def value(reply: IAsyncResult, path: str, source: Source, errors: list[SourceError]) -> Any:
    """A reply's value; ``MISSING`` for a vanished node; ``None`` after recording an error.

    Only "no such node" and "not allowed" are a node's own business. Any other failure
    (connection loss, expired session, server error) says the session is not to be trusted,
    so the cycle stops rather than report a partial tree as if it were whole.
    """
    if reply.successful():
        return reply.value
    exc = reply.exception
    if isinstance(exc, NoNodeError):
        return MISSING
    if isinstance(exc, NoAuthError):
        errors.append(SourceError(source, path, "not allowed to read (ACL)"))
        return None
    raise CycleFailed(f"session lost mid-cycle at {path}: {type(exc).__name__}: {exc}".rstrip(": "))


def _issue(client: KazooClient, kind: int, paths: list[str]) -> list[IAsyncResult]:
    if kind == GET:
        get = client.get_async
        return [get(path) for path in paths]
    ls = client.get_children_async
    if kind == LS_STAT:
        return [ls(path, include_data=True) for path in paths]
    return [ls(path) for path in paths]


def run(client: KazooClient, walkers: list[Walker], deadline: float, timeout_s: float) -> None:
    """Drive the walkers level by level, sending each level's requests of all of them at once."""
    active: list[tuple[Walker, list[Batch]]] = []
    for walker in walkers:
        with contextlib.suppress(StopIteration):
            active.append((walker, next(walker)))
    while active:
        issued = [[_issue(client, kind, paths) for kind, paths in wanted] for _, wanted in active]
        _wait_all(issued, deadline, timeout_s)
        following: list[tuple[Walker, list[Batch]]] = []
        for (walker, _), replies in zip(active, issued, strict=True):
            with contextlib.suppress(StopIteration):
                following.append((walker, walker.send(replies)))
        active = following


def _wait_all(issued: list[Replies], deadline: float, timeout_s: float) -> None:
    """Wait for every reply of a level, bounded by the cycle's deadline."""
    flat = [reply for batches in issued for batch in batches for reply in batch]
    if not flat:
        return
    # Replies come back in request order, so once the last one is in, all are; the scan
    # after it only guards that assumption.
    for reply in (flat[-1], *flat):
        if not reply.ready() and not reply.wait(max(0.0, deadline - time.monotonic())):
            waiting = sum(1 for r in flat if not r.ready())
            raise CycleFailed(
                f"no reply from ZooKeeper within {timeout_s:g} s ({waiting} requests waiting)"
            )
