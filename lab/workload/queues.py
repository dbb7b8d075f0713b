"""The queue world: share groups (KIP-932) only, each on a topic of its own, so a scenario
aimed at one touches nothing else. ``python -m lab.workload --world queues`` runs it (or
``LAGWATCH_LAB_WORLD=queues`` for a stack's workload); the share-group lab tests judge it.

A world apart rather than more groups in the demo's: the demo's end-to-end test counts and
judges every group it has, and share consumers are a preview in confluent-kafka 2.16.
"""

from __future__ import annotations

from lab.workload.spec import Roles, ShareGroupSpec, TopicSpec, WorldSpec

QUEUE_WORLD = WorldSpec(
    topics=(
        TopicSpec("jobs", partitions=2, rate=10),
        TopicSpec("reports", partitions=2, rate=10),
        TopicSpec("emails", partitions=2, rate=10),
        TopicSpec("images", partitions=2, rate=10),
    ),
    share_groups=(
        ShareGroupSpec("jobs-workers", "jobs", members=2),  # stays healthy
        ShareGroupSpec("reports-workers", "reports", members=2),  # slow-consumer's
        ShareGroupSpec("emails-workers", "emails", members=2),  # dead-consumer's
        ShareGroupSpec("images-workers", "images", members=2),  # poison-message's
    ),
    roles=Roles(slow_group="reports-workers", dead_group="emails-workers"),
)
