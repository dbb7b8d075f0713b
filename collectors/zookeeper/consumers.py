"""The walk of ZooKeeper-based Kafka consumers (pre-0.9 high-level consumers) under
``/consumers``: offsets, owners and member ids, into ``source=ZOOKEEPER`` commits and group
snapshots (SPEC §2.1).

ZooKeeper keeps no group state, so a group's state is derived from membership only (a
rebalance in progress, which ZooKeeper consumers run by rewriting owner nodes, is not
visible): ``"Stable"`` when ``/consumers/<g>/ids`` has members, ``"Empty"`` when it exists
without members, ``None`` (and ``members_known=False``) when the group has no ``ids`` node
at all (offsets left by a tool, not by a consumer). The generation is the ``cversion`` of
``/consumers/<g>/ids``: each member joining or leaving adds one to it. ``members`` are the
children of ``ids`` as listed (a member leaving between that listing and the read of
its node is still in it; the ``cversion`` read with the listing matches it).
A member's assignment is the partitions whose owner node names one of its consumer threads
(``<consumerId>-<n>``); ``topics`` are the topics with offsets or owners plus those of static
subscriptions (a wildcard subscription's keys are patterns, not topics).

The parsers are strict on purpose: what a consumer writes has one form, and anything else in
a node means someone else wrote it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Final

from collectors.records import (
    CollectionResult,
    CommittedOffset,
    GroupMember,
    GroupSnapshot,
    Source,
    SourceError,
)
from collectors.storm_znode import MAX_ZNODE_BYTES, BadZnode
from collectors.zookeeper.batched_reads import (
    GET,
    LS,
    LS_STAT,
    MISSING,
    Walker,
    child_path,
    node_key,
    value,
)

__all__ = [
    "CONSUMERS_ROOT",
    "parse_consumer_offset",
    "parse_consumer_registration",
    "walk_consumers",
]

CONSUMERS_ROOT: Final = "/consumers"

# Partition node names of /consumers/<g>/{offsets,owners}/<t>/<p>: the Kafka partition id
# as decimal text. Ten digits at most keeps int() away from absurd inputs.
_PARTITION_ID: Final = re.compile(r"0|[1-9][0-9]{0,9}")
_DECIMAL_OFFSET: Final = re.compile(r"-?[0-9]{1,19}")
_MAX_OFFSET: Final = 2**63 - 1
_THREAD_SUFFIX: Final = re.compile(r"[0-9]{1,9}")


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


def walk_consumers(result: CollectionResult) -> Walker:
    """/consumers → groups → offsets/owners/ids → topics, members → partitions."""
    src = Source.ZOOKEEPER
    errors = result.errors
    (listing,) = yield [(LS, [CONSUMERS_ROOT])]
    names = value(listing[0], CONSUMERS_ROOT, src, errors)
    if not names:  # no /consumers: this ensemble has no ZooKeeper consumers
        return
    groups = [_Group(name) for name in sorted(names)]
    bases = [child_path(CONSUMERS_ROOT, g.name) for g in groups]

    offsets_ls, owners_ls, ids_ls = yield [
        (LS, [f"{base}/offsets" for base in bases]),
        (LS, [f"{base}/owners" for base in bases]),
        (LS_STAT, [f"{base}/ids" for base in bases]),
    ]
    offset_topics: list[tuple[_Group, str]] = []
    owner_topics: list[tuple[_Group, str]] = []
    members: list[tuple[_Group, str]] = []
    for group, base, off, own, ids in zip(
        groups, bases, offsets_ls, owners_ls, ids_ls, strict=True
    ):
        topics = value(off, f"{base}/offsets", src, errors)
        if topics is not MISSING:
            group.seen = True
            offset_topics.extend((group, t) for t in sorted(topics or ()))
        topics = value(own, f"{base}/owners", src, errors)
        if topics is not MISSING:
            group.seen = True
            owner_topics.extend((group, t) for t in sorted(topics or ()))
        listed = value(ids, f"{base}/ids", src, errors)
        if listed is not MISSING:
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
        (LS, off_paths),
        (LS, own_paths),
        (GET, id_paths),
    ]
    offset_nodes: list[tuple[_Group, str, int, str]] = []
    owner_nodes: list[tuple[_Group, str, int, str]] = []
    for kind, pairs, paths, replies, out in (
        ("offsets", offset_topics, off_paths, offsets_ls, offset_nodes),
        ("owners", owner_topics, own_paths, owners_ls, owner_nodes),
    ):
        for (group, topic), path, reply in zip(pairs, paths, replies, strict=True):
            parts = value(reply, path, src, errors)
            if not parts:
                continue
            if kind == "owners":
                group.owner_topics.add(topic)
            for part in sorted(parts, key=node_key):
                node = f"{path}/{part}"
                if _PARTITION_ID.fullmatch(part) is None:
                    errors.append(SourceError(src, node, "partition node name is not a number"))
                else:
                    out.append((group, topic, int(part), node))
    for (group, _member), path, reply in zip(members, id_paths, id_replies, strict=True):
        got = value(reply, path, src, errors)
        if got is MISSING or got is None:
            continue  # left the group since the listing: the cversion will say so
        try:
            group.subscribed.update(parse_consumer_registration(path, got[0]))
        except BadZnode as exc:
            errors.append(SourceError(src, exc.where, exc.reason))

    offset_replies, owner_replies = yield [
        (GET, [node[3] for node in offset_nodes]),
        (GET, [node[3] for node in owner_nodes]),
    ]
    for (group, topic, partition, path), reply in zip(owner_nodes, owner_replies, strict=True):
        got = value(reply, path, src, errors)
        if got is MISSING or got is None:
            continue
        owner = _owner_text(path, got[0], errors)
        if owner is not None:
            group.owners[topic, partition] = owner
    for (group, topic, partition, path), reply in zip(offset_nodes, offset_replies, strict=True):
        got = value(reply, path, src, errors)
        if got is MISSING or got is None:
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
