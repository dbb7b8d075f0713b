"""The groups the AdminClient's listing leaves out, listed once a cycle: KIP-932's share groups
and KIP-1071's streams groups, by one ListGroups of every broker with the type filter of both
(``GroupClient.list_typed_groups``), split by type for ``share_groups`` and ``streams_groups``;
and what reading either kind has in common (``read_typed_groups``: two calls to the groups'
coordinators, then a snapshot and commits per group).

One listing for both rather than one each: a listing is a round trip to every broker, and the
cycle's later stages wait for it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from collectors.kafka.cycle import Cycle
from collectors.kafka_wire import GroupClient, GroupListing
from collectors.records import CommittedOffset, GroupSnapshot

__all__ = ["TYPES", "list_typed_groups", "read_typed_groups", "report_failed"]

# (the API's name as warnings say it, the GroupClient call: group ids -> answer per group)
Call = tuple[str, Callable[..., dict[str, Any]]]

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


def read_typed_groups(
    groups: GroupClient,
    kind: str,
    listing: GroupListing,
    cycle: Cycle,
    calls: tuple[Call, Call],
    gone: Callable[[Any, Any], bool],
    snapshot: Callable[[Any, Any, str | None, str | None], GroupSnapshot],
    commits: Callable[[GroupSnapshot, Any, Cycle], list[CommittedOffset]],
) -> tuple[list[GroupSnapshot], list[CommittedOffset]]:
    """Every group of ``listing`` by its type's two calls (its description, its progress) to
    the groups' coordinators, as snapshots and commits: what share and streams groups have in
    common. A failure of a call is the cycle's warning for the groups it concerns, never more;
    a group ``gone`` (deleted since it was listed: a normal race) is left out silently."""
    ids = sorted(listing.groups)
    if not ids:
        return [], []
    (describe_api, describe), (progress_api, progress_of) = calls
    try:
        described = describe(ids, timeout_s=cycle.remaining())
        progress = progress_of(ids, timeout_s=cycle.remaining())
    except (OSError, ValueError) as exc:
        cycle.error(f"groups ({kind})", f"{type(exc).__name__}: {exc}")
        return [], []
    snapshots: list[GroupSnapshot] = []
    out: list[CommittedOffset] = []
    for group in ids:
        description, answer = described[group], progress[group]
        if gone(description, answer):
            continue
        report_failed(
            cycle, f"group {group}", [(describe_api, description), (progress_api, answer)]
        )
        made = snapshot(
            description, answer, listing.groups[group].state, groups.coordinators.get(group)
        )
        snapshots.append(made)
        out.extend(commits(made, answer, cycle))
    return snapshots, out
