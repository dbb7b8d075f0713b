"""The groups the AdminClient's listing leaves out, listed once a cycle: KIP-932's share groups
and KIP-1071's streams groups, by one ListGroups of every broker with the type filter of both
(``GroupClient.list_typed_groups``), split by type for ``share_groups`` and ``streams_groups``.

One listing for both rather than one each: a listing is a round trip to every broker, and the
cycle's later stages wait for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from collectors.kafka.cycle import Cycle
from collectors.kafka_wire import GroupClient, GroupListing

__all__ = ["TYPES", "list_typed_groups", "report_failed"]

TYPES = ("share", "streams")  # Kafka's GroupType names


def list_typed_groups(
    groups: GroupClient | None, brokers: Sequence[tuple[str, int]], cycle: Cycle
) -> dict[str, GroupListing]:
    """Each type's listing (empty for a type with no group, or when the listing failed: the
    failure is the cycle's warning, never more)."""
    empty = {t: GroupListing() for t in TYPES}
    if groups is None or not brokers:
        return empty
    where = f"groups ({', '.join(TYPES)})"
    try:
        listing = groups.list_typed_groups(brokers, TYPES, timeout_s=cycle.remaining())
    except (OSError, ValueError) as exc:
        cycle.error(where, f"ListGroups: {type(exc).__name__}: {exc}")
        return empty
    for error in listing.errors:
        cycle.error(where, f"ListGroups: {error}")
    for group in listing.groups.values():
        if group.group_type in empty:
            empty[group.group_type].groups[group.group] = group
    return empty


def report_failed(cycle: Cycle, where: str, answers: Sequence[tuple[str, Any]]) -> None:
    """Each (API name, answer) that failed as the cycle's warning for ``where``: a share or
    streams group's description and its offsets fail apart, and each says which call it was."""
    for api, answer in answers:
        if not answer.ok:
            cycle.error(where, f"{api}: {answer.error_message or answer.error_name}")
