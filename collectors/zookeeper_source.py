"""ZooKeeper source adapter: Storm KafkaSpout commits and ZooKeeper-based Kafka consumers.

Reads, per cycle (SPEC §2.1):

* every ``<zkRoot>/<spoutId>/partition_<N>`` under the configured spout roots, parsed by
  :mod:`collectors.storm_znode` into :class:`CommittedOffset` records with ``source=STORM``;
* with ``zk_consumers``, the pre-0.9 high-level consumers' registry under ``/consumers``:
  offsets, owners and member ids, into ``source=ZOOKEEPER`` commits and group snapshots.

**One result per cycle.** Both kinds live in one ZooKeeper ensemble behind one session, so
they are reachable or not together: :meth:`ZooKeeperSource.collect` returns a single
:class:`CollectionResult` with ``source=Source.ZOOKEEPER`` (the system read) and every record
in it carries its own ``source`` (``STORM`` for spout commits and their errors,
``ZOOKEEPER`` for consumer records and their errors; a connection failure is a ``ZOOKEEPER``
error). A caller wanting one result per kind filters on the records' ``source``.

**Reads are batched by tree level**, never one blocking round trip per node: every listing of
a level (for both kinds at once) is issued with kazoo's ``*_async`` calls, then all gets of
the next level, and the ``IAsyncResult`` objects are gathered, not called back. Callbacks
would run one by one on kazoo's single completion thread; gathering lets the connection
thread do nothing but I/O. ZooKeeper answers one session's requests in order, so waiting for
the last reply of a batch waits for the whole batch. The kazoo client runs on a handler
whose ``select`` is one ``poll(2)`` (:class:`_PollHandler`): kazoo's own sets up and tears
down an epoll instance per wait, which was half the CPU of a 10,000-node cycle.

**Failures.** A bad node is one :class:`SourceError` (``where`` = its path) and the cycle goes
on. A node or group deleted between its listing and its read (``NoNodeError``) is skipped
silently: that is the normal race with a consumer or topology going away. A configured spout
root that does not exist is an error for that root only. Anything that makes the session
untrustworthy (unreachable server, connection or session lost mid-cycle, no reply before the
deadline) ends the cycle with ``reachable=False``, **empty** ``commits`` and ``groups`` (a
half-read tree must not look like partitions that went away) and one error saying why.
:meth:`collect` never raises for a source problem.

**ZooKeeper consumer groups** (``GroupSnapshot``): ZooKeeper keeps no group state, so the
state is derived from membership only (a rebalance in progress, which ZooKeeper consumers
run by rewriting owner nodes, is not visible): ``"Stable"`` when ``/consumers/<g>/ids`` has
members,
``"Empty"`` when it exists without members, ``None`` (and ``members_known=False``) when the
group has no ``ids`` node at all (offsets left by a tool, not by a consumer). The generation
is the ``cversion`` of ``/consumers/<g>/ids``: each member joining or leaving adds one to it.
``members`` are the children of ``ids`` as listed (a member leaving between that listing and
the read of its node is still in it; the ``cversion`` read with the listing matches it).
A member's assignment is the partitions whose owner node names one of its consumer threads
(``<consumerId>-<n>``); ``topics`` are the topics with offsets or owners plus those of static
subscriptions (a wildcard subscription's keys are patterns, not topics).

Records come in a stable order (spout roots as configured, then spout ids and partitions;
groups by name, then topic and partition), so consecutive cycles compare line by line.

The adapter has no Django imports; it is driven by a Celery task, one object per cluster.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import select
import threading
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, NoNodeError
from kazoo.handlers.threading import SequentialThreadingHandler
from kazoo.handlers.utils import fileobj_to_fd
from kazoo.interfaces import IAsyncResult
from kazoo.retry import KazooRetry

from collectors.records import (
    CollectionResult,
    CommittedOffset,
    GroupMember,
    GroupSnapshot,
    Source,
    SourceError,
)
from collectors.storm_znode import MAX_ZNODE_BYTES, BadZnode, parse_spout_znode

__all__ = [
    "ZooKeeperSource",
    "new_kazoo_handler",
    "parse_consumer_offset",
    "parse_consumer_registration",
]

_LOG = logging.getLogger(__name__)

CONSUMERS_ROOT: Final = "/consumers"

# Request kinds a walker can ask for.
_LS: Final = 0  # children
_LS_STAT: Final = 1  # children and the parent's Stat (for cversion)
_GET: Final = 2  # data and Stat

# Partition node names of /consumers/<g>/{offsets,owners}/<t>/<p>: the Kafka partition id
# as decimal text. Ten digits at most keeps int() away from absurd inputs.
_PARTITION_ID: Final = re.compile(r"0|[1-9][0-9]{0,9}")
_DECIMAL_OFFSET: Final = re.compile(r"-?[0-9]{1,19}")
_MAX_OFFSET: Final = 2**63 - 1
_MAX_PARTITION: Final = 2**31 - 1
_THREAD_SUFFIX: Final = re.compile(r"[0-9]{1,9}")


class _PollHandler(SequentialThreadingHandler):
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
    return _PollHandler() if hasattr(select, "poll") else SequentialThreadingHandler()


class _CycleFailed(Exception):
    """The session cannot be trusted for the rest of this cycle."""


Batch = tuple[int, list[str]]
Replies = list[list[IAsyncResult]]
Walker = Generator[list[Batch], Replies, None]


def parse_consumer_offset(path: str, data: bytes | None) -> int:
    """The offset a ZooKeeper consumer committed: decimal text, as Kafka 0.8 wrote it.

    Strict on purpose: Python's ``int()`` would accept ``"1_000"``, ``"+5"`` or Arabic-Indic
    digits, none of which a consumer writes, and each of which means someone else did.
    """
    if not data:
        raise BadZnode(path, "node has no data")
    if len(data) > MAX_ZNODE_BYTES:
        raise BadZnode(path, f"data is {len(data)} bytes, over the {MAX_ZNODE_BYTES}-byte limit")
    try:
        text = data.decode("ascii").strip()
    except UnicodeDecodeError:
        raise BadZnode(path, "offset is not ASCII decimal text") from None
    if _DECIMAL_OFFSET.fullmatch(text) is None:
        raise BadZnode(path, f"offset is not a decimal integer: {text[:40]!r}")
    offset = int(text)
    if offset < 0:
        raise BadZnode(path, f"offset {offset} is negative")
    if offset > _MAX_OFFSET:
        raise BadZnode(path, f"offset {offset} is beyond Kafka's int64 range")
    return offset


def parse_consumer_registration(path: str, data: bytes | None) -> tuple[str, ...]:
    """The topics a ZooKeeper consumer's ``ids/<id>`` node subscribes to, by name.

    The node is ``{"version": 1, "subscription": {"<topic>": <threads>}, "pattern":
    "static"|"white_list"|"black_list", "timestamp": "..."}``. For a wildcard pattern the
    subscription keys are regular expressions, so no topic names are returned.
    """
    if not data:
        raise BadZnode(path, "node has no data")
    if len(data) > MAX_ZNODE_BYTES:
        raise BadZnode(path, f"data is {len(data)} bytes, over the {MAX_ZNODE_BYTES}-byte limit")
    try:
        obj = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise BadZnode(path, f"not UTF-8: byte {exc.start}: {exc.reason}") from None
    except ValueError as exc:
        raise BadZnode(path, f"not JSON: {exc}") from None
    except RecursionError:
        raise BadZnode(path, "not JSON: nested too deeply") from None
    if type(obj) is not dict:
        raise BadZnode(path, "registration is not a JSON object")
    subscription = obj.get("subscription")
    if type(subscription) is not dict:
        raise BadZnode(path, "field subscription is missing or not an object")
    for topic, threads in subscription.items():
        if not topic:
            raise BadZnode(path, "subscription has an empty topic")
        if type(threads) is not int or threads < 1:
            raise BadZnode(path, f"subscription[{topic!r}] is not a positive thread count")
    pattern = obj.get("pattern", "static")
    if pattern not in ("static", "white_list", "black_list"):
        raise BadZnode(path, f"field pattern {pattern!r} is not static/white_list/black_list")
    return tuple(sorted(subscription)) if pattern == "static" else ()


def _join(parent: str, child: str) -> str:
    return f"{parent}/{child}" if parent != "/" else f"/{child}"


@dataclass
class _Group:
    """What the walk learnt about one ZooKeeper consumer group."""

    name: str
    seen: bool = False  # any of offsets/owners/ids existed
    ids: list[str] | None = None  # None: no ids node
    generation: int | None = None
    subscribed: set[str] = field(default_factory=set)
    offsets: list[tuple[str, int, int, int, int, str]] = field(default_factory=list)
    owners: dict[tuple[str, int], str] = field(default_factory=dict)
    owner_topics: set[str] = field(default_factory=set)


class ZooKeeperSource:
    """One ZooKeeper ensemble's spout roots and (optionally) its ZooKeeper consumer groups.

    Keeps one kazoo client, created on the first :meth:`collect` and replaced whenever it is
    found disconnected, so a restarted ensemble is picked up without restarting the worker.
    ``timeout_s`` bounds a whole :meth:`collect`, connection included, and is also the
    requested session timeout. One object is not meant to be collected from concurrently;
    calls are serialised by a lock.
    """

    def __init__(
        self,
        hosts: str,
        spout_roots: Sequence[str],
        zk_consumers: bool,
        timeout_s: float = 10,
    ) -> None:
        self.hosts = hosts
        # "/a/b/" and "/a/b" are one root; "/" stays "/" so children join as "/<child>".
        self.spout_roots = [root.rstrip("/") or "/" for root in spout_roots]
        self.zk_consumers = zk_consumers
        self.timeout_s = float(timeout_s)
        self._client: KazooClient | None = None
        self._lock = threading.Lock()

    # -- lifecycle -----------------------------------------------------------------------

    def close(self) -> None:
        """Stop the session; a later :meth:`collect` opens a new one."""
        with self._lock:
            self._drop_client()

    def __enter__(self) -> ZooKeeperSource:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _drop_client(self) -> None:
        client, self._client = self._client, None
        if client is None:
            return
        try:
            client.stop()
            client.close()
        except Exception:  # a dying client must not stop the next cycle
            _LOG.debug("error while stopping kazoo client for %s", self.hosts, exc_info=True)

    def _connected_client(self, deadline: float) -> KazooClient:
        client = self._client
        if client is not None and client.connected:
            return client
        # Disconnected (lost, expired or never started): a fresh client gives a known state
        # instead of waiting on kazoo's background reconnect policy. Nothing is lost: the
        # adapter holds no watches and no ephemeral nodes.
        self._drop_client()
        client = None
        try:
            client = KazooClient(
                hosts=self.hosts,
                timeout=self.timeout_s,
                handler=new_kazoo_handler(),
                connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0),
            )
            client.start(timeout=max(0.05, deadline - time.monotonic()))
        except Exception as exc:  # timeout, bad host string, resolver error, …
            if client is not None:  # kazoo stops it on a timeout, not on every failure
                with contextlib.suppress(Exception):
                    client.stop()
                    client.close()
            raise _CycleFailed(
                f"cannot connect to ZooKeeper within {self.timeout_s:g} s: "
                f"{type(exc).__name__}: {exc}".rstrip(": ")
            ) from None
        self._client = client
        return client

    # -- the cycle -----------------------------------------------------------------------

    def collect(self, now_ms: int) -> CollectionResult:
        """Read everything once; ``now_ms`` is the caller's clock for ``started_ms``."""
        with self._lock:
            started = time.monotonic()
            deadline = started + self.timeout_s
            result = CollectionResult(source=Source.ZOOKEEPER, started_ms=now_ms)
            try:
                client = self._connected_client(deadline)
                walkers: list[Walker] = []
                if self.spout_roots:
                    walkers.append(self._walk_spouts(result))
                if self.zk_consumers:
                    walkers.append(self._walk_consumers(result))
                _run(client, walkers, deadline, self.timeout_s)
            except _CycleFailed as exc:
                _LOG.warning("ZooKeeper %s: %s", self.hosts, exc)
                result = CollectionResult(
                    source=Source.ZOOKEEPER,
                    started_ms=now_ms,
                    reachable=False,
                    errors=[SourceError(Source.ZOOKEEPER, self.hosts, str(exc))],
                )
            result.finished_ms = now_ms + round((time.monotonic() - started) * 1000)
            return result

    def _walk_spouts(self, result: CollectionResult) -> Walker:
        """<root> → spout ids → partition_<N> nodes → commits, one batch per level."""
        errors = result.errors
        roots = self.spout_roots
        (listings,) = yield [(_LS, roots)]
        spout_paths: list[str] = []
        for root, reply in zip(roots, listings, strict=True):
            spouts = _value(reply, root, Source.STORM, errors)
            if spouts is _MISSING:
                errors.append(SourceError(Source.STORM, root, "spout root does not exist"))
            elif spouts is not None:
                spout_paths.extend(_join(root, spout) for spout in sorted(spouts))

        (listings,) = yield [(_LS, spout_paths)]
        node_paths: list[str] = []
        for spout_path, reply in zip(spout_paths, listings, strict=True):
            names = _value(reply, spout_path, Source.STORM, errors)
            if names:  # falsy too for _MISSING: spout removed since its root was listed
                node_paths.extend(f"{spout_path}/{name}" for name in sorted(names, key=_node_key))

        (replies,) = yield [(_GET, node_paths)]
        commits = result.commits
        for path, reply in zip(node_paths, replies, strict=True):
            if reply.successful():
                data, stat = reply.value
                try:
                    commits.append(parse_spout_znode(path, data, stat.mtime, stat.version))
                except BadZnode as exc:
                    errors.append(SourceError(Source.STORM, exc.where, exc.reason))
            else:
                _value(reply, path, Source.STORM, errors)

    def _walk_consumers(self, result: CollectionResult) -> Walker:
        """/consumers → groups → offsets/owners/ids → topics, members → partitions."""
        src = Source.ZOOKEEPER
        errors = result.errors
        (listing,) = yield [(_LS, [CONSUMERS_ROOT])]
        names = _value(listing[0], CONSUMERS_ROOT, src, errors)
        if not names:  # no /consumers: this ensemble has no ZooKeeper consumers
            return
        groups = [_Group(name) for name in sorted(names)]
        bases = [_join(CONSUMERS_ROOT, g.name) for g in groups]

        offsets_ls, owners_ls, ids_ls = yield [
            (_LS, [f"{base}/offsets" for base in bases]),
            (_LS, [f"{base}/owners" for base in bases]),
            (_LS_STAT, [f"{base}/ids" for base in bases]),
        ]
        offset_topics: list[tuple[_Group, str]] = []
        owner_topics: list[tuple[_Group, str]] = []
        members: list[tuple[_Group, str]] = []
        for group, base, off, own, ids in zip(
            groups, bases, offsets_ls, owners_ls, ids_ls, strict=True
        ):
            topics = _value(off, f"{base}/offsets", src, errors)
            if topics is not _MISSING:
                group.seen = True
                offset_topics.extend((group, t) for t in sorted(topics or ()))
            topics = _value(own, f"{base}/owners", src, errors)
            if topics is not _MISSING:
                group.seen = True
                owner_topics.extend((group, t) for t in sorted(topics or ()))
            listed = _value(ids, f"{base}/ids", src, errors)
            if listed is not _MISSING:
                group.seen = True
                if listed is not None:
                    children, stat = listed
                    group.ids = sorted(children)
                    group.generation = stat.cversion
                    members.extend((group, member) for member in group.ids)

        def topic_path(group: _Group, kind: str, topic: str) -> str:
            return f"{CONSUMERS_ROOT}/{group.name}/{kind}/{topic}"

        off_paths = [topic_path(g, "offsets", t) for g, t in offset_topics]
        own_paths = [topic_path(g, "owners", t) for g, t in owner_topics]
        id_paths = [topic_path(g, "ids", m) for g, m in members]
        offsets_ls, owners_ls, id_replies = yield [
            (_LS, off_paths),
            (_LS, own_paths),
            (_GET, id_paths),
        ]
        offset_nodes: list[tuple[_Group, str, int, str]] = []
        owner_nodes: list[tuple[_Group, str, int, str]] = []
        for kind, pairs, paths, replies, out in (
            ("offsets", offset_topics, off_paths, offsets_ls, offset_nodes),
            ("owners", owner_topics, own_paths, owners_ls, owner_nodes),
        ):
            for (group, topic), path, reply in zip(pairs, paths, replies, strict=True):
                parts = _value(reply, path, src, errors)
                if not parts:
                    continue
                if kind == "owners":
                    group.owner_topics.add(topic)
                for part in sorted(parts, key=_node_key):
                    node = f"{path}/{part}"
                    if _PARTITION_ID.fullmatch(part) is None:
                        errors.append(SourceError(src, node, "partition node name is not a number"))
                    else:
                        out.append((group, topic, int(part), node))
        for (group, _member), path, reply in zip(members, id_paths, id_replies, strict=True):
            got = _value(reply, path, src, errors)
            if got is _MISSING or got is None:
                continue  # left the group since the listing: the cversion will say so
            try:
                group.subscribed.update(parse_consumer_registration(path, got[0]))
            except BadZnode as exc:
                errors.append(SourceError(src, exc.where, exc.reason))

        offset_replies, owner_replies = yield [
            (_GET, [node[3] for node in offset_nodes]),
            (_GET, [node[3] for node in owner_nodes]),
        ]
        for (group, topic, partition, path), reply in zip(owner_nodes, owner_replies, strict=True):
            got = _value(reply, path, src, errors)
            if got is _MISSING or got is None:
                continue
            owner = _owner_text(path, got[0], errors)
            if owner is not None:
                group.owners[topic, partition] = owner
        for (group, topic, partition, path), reply in zip(
            offset_nodes, offset_replies, strict=True
        ):
            got = _value(reply, path, src, errors)
            if got is _MISSING or got is None:
                continue
            data, stat = got
            try:
                offset = parse_consumer_offset(path, data)
            except BadZnode as exc:
                errors.append(SourceError(src, exc.where, exc.reason))
                continue
            group.offsets.append((topic, partition, offset, stat.mtime, stat.version, path))

        for group in groups:
            if group.seen:
                _emit_group(group, result)


def _emit_group(group: _Group, result: CollectionResult) -> None:
    src = Source.ZOOKEEPER
    for topic, partition, offset, mtime, version, path in group.offsets:
        result.commits.append(
            CommittedOffset(
                source=src,
                group=group.name,
                topic=topic,
                partition=partition,
                offset=offset,
                commit_time_ms=mtime,
                commit_version=version,
                owner=group.owners.get((topic, partition)),
                where=path,
            )
        )
    assigned: dict[str, list[tuple[str, int]]] = {m: [] for m in group.ids or ()}
    for (topic, partition), thread in sorted(group.owners.items()):
        consumer, _, n = thread.rpartition("-")
        if consumer in assigned and _THREAD_SUFFIX.fullmatch(n):
            assigned[consumer].append((topic, partition))
    topics = {t for t, *_ in group.offsets} | group.owner_topics | group.subscribed
    if group.ids is None:
        state, known = None, False
    else:
        state, known = ("Stable" if group.ids else "Empty"), True
    result.groups.append(
        GroupSnapshot(
            source=src,
            group=group.name,
            state=state,
            generation=group.generation,
            members=tuple(
                GroupMember(member_id=m, assignment=tuple(assigned[m])) for m in group.ids or ()
            ),
            members_known=known,
            topics=tuple(sorted(topics)),
        )
    )


def _owner_text(path: str, data: bytes | None, errors: list[SourceError]) -> str | None:
    try:
        owner = (data or b"").decode("utf-8").strip()
    except UnicodeDecodeError:
        owner = ""
    if not owner or len(owner) > 1024:
        errors.append(SourceError(Source.ZOOKEEPER, path, "owner is not a consumer thread id"))
        return None
    return owner


def _node_key(name: str) -> tuple[int, str]:
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


_MISSING: Final[Any] = _Missing()


def _value(reply: IAsyncResult, path: str, source: Source, errors: list[SourceError]) -> Any:
    """A reply's value; ``_MISSING`` for a vanished node; ``None`` after recording an error.

    Only "no such node" and "not allowed" are a node's own business. Any other failure
    (connection loss, expired session, server error) says the session is not to be trusted,
    so the cycle stops rather than report a partial tree as if it were whole.
    """
    if reply.successful():
        return reply.value
    exc = reply.exception
    if isinstance(exc, NoNodeError):
        return _MISSING
    if isinstance(exc, NoAuthError):
        errors.append(SourceError(source, path, "not allowed to read (ACL)"))
        return None
    raise _CycleFailed(
        f"session lost mid-cycle at {path}: {type(exc).__name__}: {exc}".rstrip(": ")
    )


def _issue(client: KazooClient, kind: int, paths: list[str]) -> list[IAsyncResult]:
    if kind == _GET:
        get = client.get_async
        return [get(path) for path in paths]
    ls = client.get_children_async
    if kind == _LS_STAT:
        return [ls(path, include_data=True) for path in paths]
    return [ls(path) for path in paths]


def _run(client: KazooClient, walkers: list[Walker], deadline: float, timeout_s: float) -> None:
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
            raise _CycleFailed(
                f"no reply from ZooKeeper within {timeout_s:g} s ({waiting} requests waiting)"
            )
