"""One evaluation, planned as a pure function: given the rules, the partitions' states, the
pending matches and the open alerts, what to fire, resolve, keep pending or forget.

Idempotent per evaluation time: a pending match already counted at ``now`` is not counted
again, so a status run announced twice cannot halve the minimum duration.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from dashboard.alerts.rules import PartitionFacts, RuleSpec, Subject, is_due, match_rule

Key = tuple[int, str]  # (rule id, subject key)


@dataclass(frozen=True)
class Pending:
    first_matched_at: datetime
    evaluations: int
    last_matched_at: datetime


@dataclass(frozen=True)
class Firing:
    rule: RuleSpec
    subject: Subject
    started_at: datetime


@dataclass
class Plan:
    fire: list[Firing] = field(default_factory=list)
    pending: dict[Key, Pending] = field(default_factory=dict)  # to create or update
    forget: list[Key] = field(default_factory=list)  # pending matches that cleared
    resolve: list[tuple[int, str]] = field(default_factory=list)  # (alert id, reason)
    refresh: list[tuple[int, Subject]] = field(default_factory=list)  # still firing
    held: int = 0


def plan_evaluation(
    rules: Iterable[RuleSpec],
    partitions: Iterable[PartitionFacts],
    pending: Mapping[Key, Pending],
    open_alerts: Mapping[Key, int],
    now: datetime,
) -> Plan:
    """``partitions`` need only be the non-OK ones (or those with a diagnosis): any other is
    OK and matches nothing. ``open_alerts`` of rules not given (disabled, deleted) resolve."""
    rules = list(rules)
    partitions = list(partitions)
    plan = Plan()
    rule_ids = {r.id for r in rules}
    for rule in rules:
        seen = match_rule(rule, partitions)
        plan.held += len(seen.held)
        for key, subject in seen.matching.items():
            k = (rule.id, key)
            if k in open_alerts:
                plan.refresh.append((open_alerts[k], subject))
                continue
            before = pending.get(k)
            if before is None:
                first = subject.since if subject.since and subject.since < now else now
                state = Pending(first, 1, now)
            elif before.last_matched_at >= now:
                state = before  # this evaluation was counted already
            else:
                state = Pending(before.first_matched_at, before.evaluations + 1, now)
            if is_due(rule, state.evaluations, state.first_matched_at, now):
                plan.fire.append(Firing(rule, subject, state.first_matched_at))
                if before is not None:
                    plan.forget.append(k)
            elif state != before:
                plan.pending[k] = state
        for k in pending:
            if k[0] == rule.id and k[1] not in seen.matching and k[1] not in seen.held:
                plan.forget.append(k)
        for k, alert_id in open_alerts.items():
            if k[0] == rule.id and k[1] not in seen.matching and k[1] not in seen.held:
                plan.resolve.append((alert_id, "status cleared"))
    for k, alert_id in open_alerts.items():
        if k[0] not in rule_ids:
            plan.resolve.append((alert_id, "rule disabled or deleted"))
    return plan
