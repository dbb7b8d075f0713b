"""A stored group's assignment balance and what-if, as the page, the API and the command show it.

Reads what the store keeps (``ConsumerGroup.members`` through ``membership``, and each
partition's topic, number, lag, time lag and owner) and runs the assignors on it. Pure: the
callers query, this only computes, so a page costs no query more per member.

**Subscriptions.** The store keeps what members hold, not what they subscribe to (a classic
member's subscription is opaque bytes in DescribeGroups). A member document carrying a
``subscription`` list is taken as reported; otherwise every member is taken to subscribe to
every topic some member holds or is targeted to hold (or, when nobody holds anything, every
topic the group has offsets for). That is the usual group, one application with one
``subscribe()``; a group whose members subscribe differently shows what-ifs as if they did
not, and ``what_if_subscriptions`` says which basis was used.

**Moves.** ``moved`` counts partitions a member holds now that the assignor would give to
another member (or to nobody: a topic its holder no longer subscribes to);
``unowned_assigned`` counts partitions nobody holds now that the assignor would give out.
What a member holds is what the balance reads (:func:`holdings`: its reported assignment,
else the partitions naming it as owner). The client assignors start from that; the broker's
from the KIP-848 target where the broker reported one (that is what it feeds its assignor).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

from dashboard.monitoring.membership import group_type, member_details
from dashboard.whatif.balance import Figures, balance
from dashboard.whatif.classic import range_assign, round_robin
from dashboard.whatif.model import (
    Assignment,
    AssignorError,
    Member,
    TopicPartition,
)
from dashboard.whatif.server import uniform
from dashboard.whatif.sticky import sticky

Assignor = Callable[[Sequence[Member], Mapping[str, int]], Assignment]

# (name, protocol, function, starts from the KIP-848 target): the classic protocol's client
# assignors for every Kafka group, the broker's for KIP-848 groups (group type "consumer").
CLASSIC: tuple[tuple[str, str, Assignor, bool], ...] = (
    ("range", "classic", range_assign, False),
    ("roundrobin", "classic", round_robin, False),
    ("sticky", "classic", sticky, False),
)
CONSUMER: tuple[tuple[str, str, Assignor, bool], ...] = (
    ("uniform", "consumer", uniform, True),
    ("range", "consumer", range_assign, True),
)
# How pages and the command name each assignor: the broker's (KIP-848) say so.
LABELS = {
    ("range", "classic"): "range",
    ("roundrobin", "classic"): "round-robin",
    ("sticky", "classic"): "sticky",
    ("uniform", "consumer"): "uniform (broker)",
    ("range", "consumer"): "range (broker)",
}
UNKNOWN_MEMBER = "?"
# Members × partitions past which the sticky assignors' general case (members subscribed
# differently) is not simulated on a page: Kafka's algorithm is quadratic in partitions, and
# 100,000 is about a third of a second here.
GENERAL_STICKY_BUDGET = 100_000


def label(entry: Mapping[str, Any]) -> str:
    """A what-if entry's assignor as people read it (``uniform (broker)``)."""
    return LABELS.get((entry["assignor"], entry["protocol"]), entry["assignor"])


def pairs(topics: Mapping[str, list[int]] | None) -> list[TopicPartition]:
    """``{"t": [0, 1]}`` (``membership``'s shape) -> ``[("t", 0), ("t", 1)]``."""
    return [(t, p) for t, ps in (topics or {}).items() for p in ps]


def by_member(details: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Members by id (``?`` where the source gave none; a repeated id keeps its last entry)."""
    return {(d["member_id"] or UNKNOWN_MEMBER): d for d in details}


def holdings(
    members: Mapping[str, dict[str, Any]], rows: Iterable[Mapping[str, Any]]
) -> tuple[dict[str, list[TopicPartition]], list[TopicPartition]]:
    """Who holds which partition, and the partitions nobody holds.

    From the members' reported assignments (Kafka) where there are some, else from each
    partition's owner (a ZooKeeper owner node, a spout's topology); members holding nothing
    are listed too."""
    rows = list(rows)
    held: dict[str, list[TopicPartition]] = {}
    if any(d["assignment"] for d in members.values()):
        for mid, d in members.items():
            held[mid] = pairs(d["assignment"])
        owned = {tp for tps in held.values() for tp in tps}
        return held, [
            (r["topic"], r["partition"]) for r in rows if (r["topic"], r["partition"]) not in owned
        ]
    unowned = []
    for r in rows:
        tp = (r["topic"], r["partition"])
        if r["owner"]:
            held.setdefault(r["owner"], []).append(tp)
        else:
            unowned.append(tp)
    for mid in members:
        held.setdefault(mid, [])
    return held, unowned


def _subscriptions(
    raw: Mapping[str, Any],
    members: Mapping[str, dict[str, Any]],
    held: Mapping[str, list[TopicPartition]],
    topics: Iterable[str],
) -> tuple[dict[str, frozenset[str]], str]:
    in_use = {t for tps in held.values() for t, _ in tps}
    in_use |= {t for d in members.values() for t in (d["target_assignment"] or {})}
    inferred = frozenset(in_use or topics)
    out, reported = {}, 0
    for mid in members:
        listed = raw.get(mid, {}).get("subscription")
        if isinstance(listed, list) and all(isinstance(t, str) for t in listed):
            out[mid] = frozenset(listed)
            reported += 1
        else:
            out[mid] = inferred
    basis = (
        "reported" if reported == len(out) else "inferred" if not reported else "partly reported"
    )
    return out, basis


def _partition_counts(tps: Iterable[TopicPartition]) -> dict[str, int]:
    """Kafka numbers partitions from 0: the highest known partition + 1."""
    counts: dict[str, int] = {}
    for topic, p in tps:
        counts[topic] = max(counts.get(topic, 0), p + 1)
    return counts


def _first_claims(claims: Mapping[str, list[TopicPartition]]) -> dict[str, list[TopicPartition]]:
    """A partition two members claim stays with the first: the broker never targets one
    partition twice (its assignor refuses such a group), but what members *hold* during a
    handover may briefly say so."""
    seen: set[TopicPartition] = set()
    out = {}
    for mid, tps in claims.items():
        out[mid] = [tp for tp in tps if tp not in seen]
        seen.update(tps)
    return out


def _entry(
    name: str,
    protocol: str,
    result: Assignment | str,
    current: Mapping[TopicPartition, str],
) -> dict[str, Any]:
    """One assignor's line; ``result`` is the assignment, or why there is none."""
    entry: dict[str, Any] = {"assignor": name, "protocol": protocol}
    if isinstance(result, str):
        return {**entry, "members": None, "moved": None, "unowned_assigned": None, "note": result}
    after = {tp: mid for mid, tps in result.items() for tp in tps}
    return {
        **entry,
        "members": [
            {"member_id": mid, "partitions": len(tps), "assignment": _topics(tps)}
            for mid, tps in sorted(result.items())
        ],
        "moved": sum(1 for tp, mid in current.items() if after.get(tp) != mid),
        "unowned_assigned": sum(1 for tp in after if tp not in current),
        "note": None,
    }


def _topics(tps: Sequence[TopicPartition]) -> dict[str, list[int]]:
    """``membership.by_topic`` for an assignor's own answer, which needs none of its checks
    of stored data: five answers × every member is the bulk of a large group's report."""
    out: dict[str, list[int]] = {}
    for topic, p in tps:
        if topic in out:
            out[topic].append(p)
        else:
            out[topic] = [p]
    return {topic: sorted(out[topic]) for topic in sorted(out)}


def _run(assign: Assignor, members: list[Member], counts: dict[str, int]) -> Assignment | str:
    if (
        assign is sticky
        and len({m.subscription for m in members}) > 1
        and len(members) * sum(counts.values()) > GENERAL_STICKY_BUDGET
    ):
        return "not simulated: too many members and partitions subscribed differently"
    try:
        return assign(members, counts)
    except AssignorError as exc:
        return f"Kafka's assignor would refuse: {exc}"


def what_if(
    raw_members: Sequence[dict[str, Any]],
    members: Mapping[str, dict[str, Any]],
    holding: Mapping[str, list[TopicPartition]],
    rows: Sequence[Mapping[str, Any]],
    kip848: bool,
) -> tuple[list[dict[str, Any]], str]:
    """Each assignor's answer for the group's members now, and the subscriptions' basis.
    ``holding``: who holds what now (:func:`holdings`)."""
    raw = {(m.get("member_id") or UNKNOWN_MEMBER): m for m in raw_members if isinstance(m, dict)}
    row_tps = [(r["topic"], r["partition"]) for r in rows]
    held = {mid: holding.get(mid, []) for mid in members}
    subscriptions, basis = _subscriptions(raw, members, held, dict.fromkeys(t for t, _ in row_tps))
    target = _first_claims(
        {
            mid: held[mid] if d["target_assignment"] is None else pairs(d["target_assignment"])
            for mid, d in members.items()
        }
    )
    counts = _partition_counts(
        [*row_tps, *(tp for tps in [*held.values(), *target.values()] for tp in tps)]
    )
    current = {tp: mid for mid, tps in held.items() for tp in tps}
    out = []
    for name, protocol, assign, from_target in CLASSIC + (CONSUMER if kip848 else ()):
        start = target if from_target else held
        inputs = [
            Member(mid, subscriptions[mid], d["instance_id"], tuple(start[mid]))
            for mid, d in members.items()
        ]
        out.append(_entry(name, protocol, _run(assign, inputs, counts), current))
    return out, basis


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The what-if of a large group allocates some 100,000 short-lived objects (five answers
    of every partition), all freed by reference counting; left on, the garbage collector runs
    full passes over the whole web process meanwhile, a third of the time at 1,000 members ×
    10,000 partitions (benchmarks/RESULTS.md, "Assignment what-if"). Whoever found it enabled
    enables it again, so concurrent requests cannot leave it off."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class StoredGroup(Protocol):
    """What the report reads of a group: ``ConsumerGroup``'s fields (no Django import here)."""

    source: str
    group_type: str
    members: Any
    members_known: bool


def group_report(group: StoredGroup, rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """:func:`assignment_report` of a stored group and its partition rows."""
    return assignment_report(
        source=group.source,
        group_type_stored=group.group_type,
        members=group.members,
        members_known=group.members_known,
        rows=rows,
    )


def assignment_report(
    *,
    source: str,
    group_type_stored: str | None,
    members: object,
    members_known: bool,
    rows: Iterable[Mapping[str, Any]],
) -> dict[str, Any]:
    """``balance``, ``what_if`` (``None`` where not a Kafka consumer group with known members) and
    ``what_if_subscriptions`` for one group. ``rows``: each partition's ``topic``,
    ``partition``, ``lag``, ``time_lag_s`` and ``owner``."""
    with _collector_paused():
        rows = list(rows)
        details = by_member(member_details(members))
        held, unowned = holdings(details, rows)
        figures = {(r["topic"], r["partition"]): Figures(r["lag"], r["time_lag_s"]) for r in rows}
        report: dict[str, Any] = {
            "balance": balance(dict(sorted(held.items())), unowned, figures),
            "what_if": None,
            "what_if_subscriptions": None,
        }
        kind = group_type(source, group_type_stored)
        # A share group's members share partitions (KIP-932), and a streams group's are
        # assigned tasks by its topology (KIP-1071): no consumer assignor's answer applies.
        if (
            source == "kafka"
            and kind not in ("share", "streams")
            and members_known
            and isinstance(members, list)
        ):
            kip848 = kind == "consumer"
            report["what_if"], report["what_if_subscriptions"] = what_if(
                members, details, held, rows, kip848
            )
        return report
