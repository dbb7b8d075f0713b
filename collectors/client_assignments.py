"""Partition assignments from the clients' own reports, where the broker did not give them.

The broker does not always say who owns which partition (a group caught mid-rebalance, a
describe that failed, a broker that answers without members), but every consumer knows its
own assignment. :func:`apply_client_reports` puts what the clients said into the broker's
group snapshots, never over what the broker said; the cycle's assembly calls it, and the
owners it gives decide liveness (SPEC §4). Pure.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from collectors.client_reports import CONSUMER, ClientReport
from collectors.records import GroupMember, GroupSnapshot

__all__ = ["apply_client_reports"]


def apply_client_reports(
    groups: list[GroupSnapshot], reports: list[ClientReport]
) -> list[GroupSnapshot]:
    """Fill in the members' assignments the broker did not give, from consumers' reports.

    - A member the broker listed with an empty assignment and a client id gets the
      assignment of the one consumer report that matches it: same client id, same group
      (or a report without a group whose client id matches members of this group only),
      and the same host when both are known. When several members or several reports
      could pair up (a shared client id such as librdkafka's default ``rdkafka``), nothing
      is guessed: the member stays unknown.
    - A group the broker listed without members (``members_known`` False) but named by
      consumer reports gets **synthesized members**, one per reporting consumer, with
      ``member_id`` = the report's librdkafka instance name (``name@host`` if two reports
      share a name), and ``members_known`` True: the membership is now known, from the
      clients. A consumer that pushes no statistics is then missing from the members.
    - An assignment the broker reported is never changed. A partition claimed by several
      reports goes to the newest report, and one owned per the broker to the broker's owner:
      a stale report must not give a partition two owners.

    Only consumer reports count; for each client instance (group, name, host) the newest.
    """
    consumers = _newest_per_client(r for r in reports if r.kind == CONSUMER)
    home = _groupless_homes(groups, consumers)
    out = []
    for index, snap in enumerate(groups):
        mine = [
            r
            for r in consumers
            if r.group == snap.group or (r.group is None and home.get(_client_key(r)) == index)
        ]
        if snap.members:
            out.append(_fill_members(snap, mine))
        elif not snap.members_known:
            out.append(_synthesize(snap, [r for r in mine if r.group == snap.group]))
        else:
            out.append(snap)  # the broker says the group is empty
    return out


def _client_key(r: ClientReport) -> tuple[str | None, str, str | None, str]:
    return (r.group, r.name, _norm_host(r.host), r.client_id)


def _newest_per_client(reports: Iterable[ClientReport]) -> list[ClientReport]:
    newest: dict[tuple[str | None, str, str | None, str], ClientReport] = {}
    for r in reports:
        key = _client_key(r)
        if key not in newest or r.time_ms > newest[key].time_ms:
            newest[key] = r
    return list(newest.values())


def _norm_host(host: str | None) -> str | None:
    """Kafka reports hosts as ``/10.0.0.5``; an HTTP server sees ``10.0.0.5``."""
    if not host:
        return None
    text = host.strip().lstrip("/").lower()
    try:
        addr = ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return text or None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return addr.compressed


def _hosts_compatible(a: str | None, b: str | None) -> bool:
    na, nb = _norm_host(a), _norm_host(b)
    return na is None or nb is None or na == nb


def _same_host(a: str | None, b: str | None) -> bool:
    na = _norm_host(a)
    return na is not None and na == _norm_host(b)


def _pairs(member: GroupMember, report: ClientReport) -> bool:
    return (
        bool(member.client_id)
        and member.client_id == report.client_id
        and _hosts_compatible(member.host, report.host)
    )


def _narrow_by_host(items: list[Any], host: str | None, host_of: Any) -> list[Any]:
    exact = [x for x in items if _same_host(host, host_of(x))]
    return exact if exact else items


def _groupless_homes(
    groups: Sequence[GroupSnapshot], reports: Sequence[ClientReport]
) -> dict[tuple[str | None, str, str | None, str], int]:
    """A report without a group may serve the one group (by index) whose members it could
    be; if members of several groups share its client id, it serves none."""
    homes = {}
    for r in reports:
        if r.group is not None:
            continue
        found = [i for i, g in enumerate(groups) if any(_pairs(m, r) for m in g.members)]
        if len(found) == 1:
            homes[_client_key(r)] = found[0]
    return homes


def _fill_members(snap: GroupSnapshot, reports: list[ClientReport]) -> GroupSnapshot:
    chosen: dict[int, ClientReport] = {}
    for i, member in enumerate(snap.members):
        if member.assignment or not member.client_id:
            continue
        candidates = [r for r in reports if _pairs(member, r)]
        if len(candidates) > 1:
            candidates = [r for r in candidates if r.group == snap.group] or candidates
        candidates = _narrow_by_host(candidates, member.host, lambda r: r.host)
        if len(candidates) != 1:
            continue
        report = candidates[0]
        members = [m for m in snap.members if _pairs(m, report)]
        members = _narrow_by_host(members, report.host, lambda m: m.host)
        if members == [member]:
            chosen[i] = report
    if not chosen:
        return snap
    broker_owned = {tp for m in snap.members for tp in m.assignment}
    assignments = _resolve(chosen, broker_owned)
    members = tuple(
        dataclasses.replace(m, assignment=assignments[i]) if i in assignments else m
        for i, m in enumerate(snap.members)
    )
    return dataclasses.replace(snap, members=members)


def _synthesize(snap: GroupSnapshot, reports: list[ClientReport]) -> GroupSnapshot:
    live = [r for r in reports if r.cgrp_state != "term"]  # a closing consumer is leaving
    if not live:
        return snap
    names: dict[str, int] = {}
    for r in live:
        names[r.name] = names.get(r.name, 0) + 1
    assignments = _resolve(dict(enumerate(live)), set())
    members = tuple(
        sorted(
            (
                GroupMember(
                    member_id=r.name if names[r.name] == 1 else f"{r.name}@{r.host or '?'}",
                    client_id=r.client_id or None,
                    host=r.host,
                    assignment=assignments[i],
                )
                for i, r in enumerate(live)
            ),
            key=lambda m: m.member_id,
        )
    )
    topics = {t for m in members for t, _ in m.assignment} | set(snap.topics)
    return dataclasses.replace(
        snap, members=members, members_known=True, topics=tuple(sorted(topics))
    )


def _resolve(
    chosen: Mapping[int, ClientReport], taken: set[tuple[str, int]]
) -> dict[int, tuple[tuple[str, int], ...]]:
    """Each partition to one owner: the broker's first, then the newest report's."""
    claimed = set(taken)
    out: dict[int, tuple[tuple[str, int], ...]] = {}
    for i, report in sorted(chosen.items(), key=lambda item: (-item[1].time_ms, item[1].name)):
        mine = tuple(sorted(tp for tp in report.assignment if tp not in claimed))
        claimed.update(mine)
        out[i] = mine
    return out
