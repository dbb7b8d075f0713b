"""The documents a group's row holds in its JSON columns: its members
(``ConsumerGroup.members``) and a streams group's topology (``ConsumerGroup.topology``), as
the store writes them and the pages and APIs read them (``monitoring/membership.py``)."""

from __future__ import annotations

from collectors.records import GroupMember, GroupSnapshot, StreamsTasks

__all__ = ["member_document", "topology_document"]


def member_document(member: GroupMember) -> dict:
    """A member as stored in ``ConsumerGroup.members`` and shown by the UI and the APIs."""
    return {
        "member_id": member.member_id,
        "instance_id": member.instance_id,
        "client_id": member.client_id,
        "host": member.host,
        "assignment": [list(tp) for tp in member.assignment],
        "target_assignment": (
            None
            if member.target_assignment is None
            else [list(tp) for tp in member.target_assignment]
        ),
        "member_epoch": member.member_epoch,
        "subscription": None if member.subscription is None else list(member.subscription),
        **_streams_document(member),
    }


def _tasks_document(tasks: StreamsTasks) -> dict:
    return {
        "active": [list(t) for t in tasks.active],
        "standby": [list(t) for t in tasks.standby],
        "warmup": [list(t) for t in tasks.warmup],
    }


def _streams_document(member: GroupMember) -> dict:
    """A streams group member's process and tasks (KIP-1071); nothing for other members, so
    their documents are as they were."""
    if member.tasks is None:
        return {}
    return {
        "process_id": member.process_id,
        "tasks": _tasks_document(member.tasks),
        "target_tasks": (
            None if member.target_tasks is None else _tasks_document(member.target_tasks)
        ),
    }


def topology_document(snap: GroupSnapshot) -> dict | None:
    """A streams group's topology as stored in ``ConsumerGroup.topology``; None for others
    and for a streams group whose coordinator has no topology yet."""
    if snap.topology_epoch is None and snap.subtopologies is None:
        return None
    return {
        "epoch": snap.topology_epoch,
        "subtopologies": (
            None
            if snap.subtopologies is None
            else [
                {
                    "id": s.subtopology_id,
                    "source_topics": list(s.source_topics),
                    "repartition_sink_topics": list(s.repartition_sink_topics),
                    "state_changelog_topics": list(s.state_changelog_topics),
                }
                for s in snap.subtopologies
            ]
        ),
    }
