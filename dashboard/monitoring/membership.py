"""A Kafka group's membership as the status report, the APIs and the pages show it (pure).

``ConsumerGroup.members`` holds what the store wrote (``store.member_document``), and rows
written before KIP-848 support lack ``instance_id``, ``target_assignment`` and
``member_epoch``; a source may also have given ``""`` where it knew nothing. Every reader goes
through ``member_details`` so that old rows, missing keys and odd values read the same way
everywhere: unknown is ``None``, never a made-up ``""`` or ``0``.

Assignments are regrouped by topic (``{"orders": [0, 1, 5]}``): the stored ``[[topic,
partition], …]`` pairs are what the broker sends, but a reader wants to know which partitions
of which topic a member holds. ``target_assignment`` stays ``None`` where the broker did not
say (classic groups, older rows), which is different from an empty target (the member is to
hold nothing).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# Kafka's group types (ListGroups' GroupType): the classic protocol, KIP-848's consumer
# protocol, KIP-932's share groups (queues, whose members share partitions) and KIP-1071's
# streams groups (Kafka Streams applications, assigned tasks from their topology).
GROUP_TYPES = ("classic", "consumer", "share", "streams")
_TASK_KINDS = ("active", "standby", "warmup")


def group_type(source: str, stored: str | None) -> str | None:
    """One of ``GROUP_TYPES``, or None where the group is not Kafka's or its type is unknown: a
    stored value outside those names is not passed on as if it were one."""
    if source != "kafka" or stored not in GROUP_TYPES:
        return None
    return stored


def _text(value: object) -> str | None:
    if value is None or isinstance(value, bool):
        return None
    text = str(value)
    return text or None


def _integer(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def by_topic(pairs: object) -> dict[str, list[int]]:
    """``[["orders", 1], ["orders", 0]]`` -> ``{"orders": [0, 1]}``, topics sorted; pairs
    that are not ``[topic, partition]`` are skipped rather than failing a whole page."""
    topics: dict[str, set[int]] = {}
    if isinstance(pairs, list | tuple):
        for pair in pairs:
            # Inlined checks: pages run this over every member of groups of thousands.
            if isinstance(pair, list | tuple) and len(pair) == 2:
                topic, partition = pair
                if isinstance(topic, str) and type(partition) is int:
                    if topic in topics:
                        topics[topic].add(partition)
                    else:
                        topics[topic] = {partition}
    return {topic: sorted(topics[topic]) for topic in sorted(topics)}


def tasks_detail(tasks: object) -> dict[str, dict[str, list[int]]] | None:
    """A streams member's stored tasks regrouped by subtopology, as assignments are by topic
    (``{"active": {"0": [0, 1]}, "standby": {}, "warmup": {}}``); None where not stored."""
    if not isinstance(tasks, dict):
        return None
    return {kind: by_topic(tasks.get(kind)) for kind in _TASK_KINDS}


def member_detail(member: dict[str, Any]) -> dict[str, Any]:
    """One stored member in the shape the APIs publish (docs/API.md, ``member_details``).
    ``process_id``, ``tasks`` and ``target_tasks`` are a streams group's member's (KIP-1071),
    null for any other member."""
    target = member.get("target_assignment")
    detail = {
        "member_id": _text(member.get("member_id")),
        "client_id": _text(member.get("client_id")),
        "host": _text(member.get("host")),
        "instance_id": _text(member.get("instance_id")),
        "member_epoch": _integer(member.get("member_epoch")),
        "assignment": by_topic(member.get("assignment")),
        "target_assignment": None if target is None else by_topic(target),
    }
    detail["process_id"] = _text(member.get("process_id"))
    detail["tasks"] = tasks_detail(member.get("tasks"))
    detail["target_tasks"] = tasks_detail(member.get("target_tasks"))
    return detail


def _names(values: object) -> list[str]:
    if not isinstance(values, list):
        return []
    return sorted(v for v in values if isinstance(v, str))


def topology_detail(stored: object) -> dict[str, Any] | None:
    """A streams group's stored topology (``ConsumerGroup.topology``) as the APIs publish it:
    ``{"epoch", "subtopologies": [{"id", "source_topics", "repartition_sink_topics",
    "state_changelog_topics"}]}``, subtopologies null while the group is not initialised;
    None for other groups. Odd entries are skipped, as members' are."""
    if not isinstance(stored, dict):
        return None
    subs = stored.get("subtopologies")
    return {
        "epoch": _integer(stored.get("epoch")),
        "subtopologies": None
        if not isinstance(subs, list)
        else [
            {
                "id": s["id"],
                "source_topics": _names(s.get("source_topics")),
                "repartition_sink_topics": _names(s.get("repartition_sink_topics")),
                "state_changelog_topics": _names(s.get("state_changelog_topics")),
            }
            for s in subs
            if isinstance(s, dict) and isinstance(s.get("id"), str)
        ],
    }


def member_details(members: object) -> list[dict[str, Any]]:
    """Every member of a stored ``members`` list (entries that are not objects skipped)."""
    if not isinstance(members, list):
        return []
    return [member_detail(m) for m in members if isinstance(m, dict)]


def reconciling(detail: dict[str, Any]) -> bool:
    """KIP-848: the member does not hold its target assignment yet (it is converging on it).
    Unknown (no target) is not reconciling."""
    target = detail.get("target_assignment")
    return target is not None and target != detail.get("assignment")


def reconciling_count(details: Iterable[dict[str, Any]]) -> int:
    return sum(1 for d in details if reconciling(d))
