"""Rule matching, as pure functions of plain values (no database): tested case by case.

A *subject* is what an alert is about: one partition, or one group (the partitions of it a
rule matches, aggregated). Patterns are shell-style globs (``fnmatch.fnmatchcase``: ``*``,
``?``, ``[abc]``; case-sensitive, as Kafka names are).

A subject whose diagnosis includes ``SOURCE_UNREACHABLE`` (or whose status is UNKNOWN) is
*held*: we know nothing new about it, so it neither fires nor resolves, and a pending match
neither advances nor resets.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from fnmatch import fnmatchcase

SOURCE_UNREACHABLE = "SOURCE_UNREACHABLE"
UNKNOWN = "UNKNOWN"
# Worst first: a group subject takes the worst status of its matching partitions (SPEC §4).
STATUS_ORDER = ("ERR", "STOP", "STALL", "REWIND", "WARN", "UNKNOWN", "OK")
ALERTABLE_STATUSES = ("WARN", "STALL", "STOP", "REWIND", "ERR")
DEFAULT_STATUSES = ("STALL", "STOP", "ERR")
PARTITION = "partition"
GROUP = "group"


@dataclass(frozen=True)
class RuleSpec:
    id: int
    name: str
    cluster_pattern: str = "*"
    group_pattern: str = "*"
    topic_pattern: str = "*"
    statuses: frozenset[str] = frozenset(DEFAULT_STATUSES)
    diagnoses: frozenset[str] = frozenset()
    level: str = PARTITION
    min_evaluations: int = 2
    min_duration_s: float = 0
    min_lag: int | None = None
    min_time_lag_s: float | None = None
    severity: str = "warning"


@dataclass(frozen=True)
class PartitionFacts:
    """One partition's latest evaluated state, as read from ``PartitionState``."""

    cluster: str
    source: str
    group: str
    topic: str
    partition: int
    status: str
    codes: tuple[str, ...] = ()
    since: datetime | None = None
    lag: int | None = None
    time_lag_s: float | None = None
    reason: str = ""


@dataclass(frozen=True)
class Subject:
    key: str
    level: str
    cluster: str
    source: str
    group: str
    topic: str  # "" for a group subject
    partition: int | None
    status: str
    codes: tuple[str, ...]
    since: datetime | None
    lag: int | None
    time_lag_s: float | None
    reason: str = ""
    partitions: tuple[tuple[str, int], ...] = field(default=())  # a group subject's matches


def subject_key(
    level: str, cluster: str, source: str, group: str, topic: str = "", partition: int | None = None
) -> str:
    """Stable across runs and renames of nothing: the names themselves, hashed to fit."""
    raw = "\x1f".join(
        [level, cluster, source, group, topic, "" if partition is None else str(partition)]
    )
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()


def in_scope(rule: RuleSpec, cluster: str, group: str, topic: str) -> bool:
    return (
        fnmatchcase(cluster, rule.cluster_pattern)
        and fnmatchcase(group, rule.group_pattern)
        and fnmatchcase(topic, rule.topic_pattern)
    )


def is_held(status: str, codes: Iterable[str]) -> bool:
    """The source is down or nothing is known yet: no firing, no resolving."""
    return status == UNKNOWN or SOURCE_UNREACHABLE in codes


def condition_holds(
    rule: RuleSpec, status: str, codes: Iterable[str], lag: int | None, time_lag_s: float | None
) -> bool:
    """Status listed (or none listed) and a diagnosis listed (or none listed); every threshold
    set is met (a missing figure does not meet a threshold)."""
    codes = tuple(codes)
    if is_held(status, codes):
        return False
    if not rule.statuses and not rule.diagnoses:
        return False
    if rule.statuses and status not in rule.statuses:
        return False
    if rule.diagnoses and not any(code in rule.diagnoses for code in codes):
        return False
    if rule.min_lag is not None and (lag is None or lag < rule.min_lag):
        return False
    time_lag_short = time_lag_s is None or time_lag_s < (rule.min_time_lag_s or 0)
    return rule.min_time_lag_s is None or not time_lag_short


def with_topic_codes(
    partitions: Iterable[PartitionFacts], topic_codes: Mapping[tuple[str, str], Iterable[str]]
) -> list[PartitionFacts]:
    """Topic-level diagnoses (PRODUCER_EXPIRY: decided from the producers' reports, not by
    the status job) added to the codes of every partition of the topic, so a rule listing the
    code matches them like any other diagnosis. ``topic_codes``: (cluster, topic) -> codes."""
    out = []
    for p in partitions:
        extra = [c for c in topic_codes.get((p.cluster, p.topic), ()) if c not in p.codes]
        out.append(replace(p, codes=(*p.codes, *extra)) if extra else p)
    return out


def partition_subject(p: PartitionFacts) -> Subject:
    return Subject(
        key=subject_key(PARTITION, p.cluster, p.source, p.group, p.topic, p.partition),
        level=PARTITION,
        cluster=p.cluster,
        source=p.source,
        group=p.group,
        topic=p.topic,
        partition=p.partition,
        status=p.status,
        codes=p.codes,
        since=p.since,
        lag=p.lag,
        time_lag_s=p.time_lag_s,
        reason=p.reason,
    )


def _worst(statuses: Iterable[str]) -> str:
    rank = {s: i for i, s in enumerate(STATUS_ORDER)}
    return min(statuses, key=lambda s: rank.get(s, len(rank)))


def _group_subject(members: list[PartitionFacts]) -> Subject:
    first = members[0]
    codes: list[str] = []
    for p in members:
        codes.extend(c for c in p.codes if c not in codes)
    lags = [p.lag for p in members if p.lag is not None]
    time_lags = [p.time_lag_s for p in members if p.time_lag_s is not None]
    sinces = [p.since for p in members if p.since is not None]
    worst = _worst(p.status for p in members)
    reason = next((p.reason for p in members if p.status == worst and p.reason), "")
    return Subject(
        key=subject_key(GROUP, first.cluster, first.source, first.group),
        level=GROUP,
        cluster=first.cluster,
        source=first.source,
        group=first.group,
        topic="",
        partition=None,
        status=worst,
        codes=tuple(codes),
        since=min(sinces) if sinces else None,
        lag=sum(lags) if lags else None,
        time_lag_s=max(time_lags) if time_lags else None,
        reason=reason,
        partitions=tuple(sorted((p.topic, p.partition) for p in members)),
    )


@dataclass
class RuleMatches:
    """What one rule sees in one evaluation: subjects matching, and keys held (unknown)."""

    matching: dict[str, Subject] = field(default_factory=dict)
    held: set[str] = field(default_factory=set)


def match_rule(rule: RuleSpec, partitions: Iterable[PartitionFacts]) -> RuleMatches:
    """Partitions not given are taken as OK (the caller reads only the non-OK ones)."""
    out = RuleMatches()
    by_group: dict[str, list[PartitionFacts]] = {}
    held_groups: dict[str, str] = {}
    for p in partitions:
        if not in_scope(rule, p.cluster, p.group, p.topic):
            continue
        held = is_held(p.status, p.codes)
        if rule.level == PARTITION:
            key = subject_key(PARTITION, p.cluster, p.source, p.group, p.topic, p.partition)
            if held:
                out.held.add(key)
            elif condition_holds(rule, p.status, p.codes, p.lag, p.time_lag_s):
                out.matching[key] = partition_subject(p)
            continue
        gkey = subject_key(GROUP, p.cluster, p.source, p.group)
        if held:
            held_groups[gkey] = gkey
        elif condition_holds(rule, p.status, p.codes, p.lag, p.time_lag_s):
            by_group.setdefault(gkey, []).append(p)
    for gkey, members in by_group.items():
        out.matching[gkey] = _group_subject(members)
    # A group with some partitions unknown and none matching: unknown, not cleared.
    out.held.update(k for k in held_groups if k not in out.matching)
    return out


def is_due(rule: RuleSpec, evaluations: int, first_matched_at: datetime, now: datetime) -> bool:
    """Lasted long enough: both the evaluations and the seconds minimums are met."""
    return (
        evaluations >= max(rule.min_evaluations, 1)
        and (now - first_matched_at).total_seconds() >= rule.min_duration_s
    )


@dataclass(frozen=True)
class SilenceSpec:
    id: int
    until: datetime
    rule_id: int | None = None
    cluster_pattern: str = "*"
    group_pattern: str = "*"
    topic_pattern: str = "*"


def silence_for(
    silences: Iterable[SilenceSpec], rule_id: int | None, subject: Subject, now: datetime
) -> SilenceSpec | None:
    """The first active silence covering the subject. A group subject is covered when the
    silence's topic pattern is ``*`` or covers every partition it matched."""
    for s in silences:
        if s.until <= now or (s.rule_id is not None and s.rule_id != rule_id):
            continue
        if not (
            fnmatchcase(subject.cluster, s.cluster_pattern)
            and fnmatchcase(subject.group, s.group_pattern)
        ):
            continue
        topics = (
            [subject.topic] if subject.level == PARTITION else [t for t, _ in subject.partitions]
        )
        if s.topic_pattern == "*" or (
            topics and all(fnmatchcase(t, s.topic_pattern) for t in topics)
        ):
            return s
    return None


def title_for(rule_name: str, s: Subject) -> str:
    """Plain text; escaped by whatever renders it (templates, Slack formatting)."""
    where = s.group if s.level == GROUP else f"{s.group} {s.topic}/{s.partition}"
    codes = f" ({', '.join(s.codes)})" if s.codes else ""
    return f"{s.status} {where} on {s.cluster}{codes}"[:1000]
