"""ListGroups asked of every broker of a cluster (the socket side of ``codec.list_groups``).

Not coordinator-targeted: each broker lists the groups it coordinates, so a cluster's groups
are the union of every broker's answer, and the caller passes the brokers its metadata names
(the bootstrap list may be one load balancer or a subset). Every broker is asked before any
answer is read, so the listing costs one round trip whatever the number of brokers.

A broker whose ListGroups cannot carry the type filter asked for (before v5, Kafka 3.7) or that
has no ListGroups we speak is not an error of the listing: it is named in ``unsupported``, and
the caller decides what that means (for share groups: none there, as they came with Kafka 4.1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from collectors.kafka_wire.codec import (
    LIST_GROUPS,
    ListedGroup,
    choose_version,
    decode_list_groups_response,
    encode_list_groups_request,
)
from collectors.kafka_wire.connection import Address, BrokerConnections, Connection

__all__ = ["GroupListing", "list_groups"]


@dataclass
class GroupListing:
    """The union of the brokers' answers. ``errors``: brokers that did not answer or answered
    an error (their groups are missing: a partial listing, said so); ``unsupported``: brokers
    that cannot answer this listing at all, with why."""

    groups: dict[str, ListedGroup] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)


def _version(conn: Connection, types: Sequence[str], states: Sequence[str]) -> int | None:
    version = choose_version(LIST_GROUPS, conn.api_versions)
    if version is None or (types and version < 5) or (states and version < 4):
        return None
    return version


def list_groups(
    brokers: BrokerConnections,
    addresses: Sequence[Address],
    deadline: float,
    *,
    types: Sequence[str] = (),
    states: Sequence[str] = (),
) -> GroupListing:
    """Every broker of ``addresses`` asked for its groups of ``types``/``states`` (empty: all)."""
    listing = GroupListing()
    sent: list[tuple[Connection, int, int]] = []
    for address in dict.fromkeys(addresses):
        name = f"{address[0]}:{address[1]}"
        try:
            conn = brokers.connection(address, deadline)
        except OSError as exc:
            listing.errors.append(f"{name}: {exc}")
            continue
        version = _version(conn, types, states)
        if version is None:
            theirs = conn.api_versions.get(LIST_GROUPS)
            offered = f"v{theirs[0]}-v{theirs[1]}" if theirs else "none"
            listing.unsupported.append(f"{name} offers ListGroups {offered}")
            continue
        body = encode_list_groups_request(version, states, types)
        try:
            correlation_id = brokers.guarded(conn, conn.send, LIST_GROUPS, version, body, deadline)
        except OSError as exc:
            listing.errors.append(f"{name}: {exc}")
            continue
        sent.append((conn, version, correlation_id))
    for conn, version, correlation_id in sent:
        try:
            answer = brokers.guarded(
                conn, conn.receive, LIST_GROUPS, version, correlation_id, deadline
            )
        except OSError as exc:
            listing.errors.append(f"{conn.name}: {exc}")
            continue
        result = brokers.guarded(conn, decode_list_groups_response, answer, version)
        if result.error_code:
            # COORDINATOR_LOAD_IN_PROGRESS: the broker still loads some of its groups; what
            # it listed is kept, and the listing said to be partial.
            listing.errors.append(f"{conn.name}: {result.error_name}")
        for group in result.groups:
            listing.groups.setdefault(group.group, group)
    return listing
