"""Evaluate the rules after a status run (receiver of ``status_applied``), in the database.

Cheap at 20,000 partitions: one query reads only the partitions that are not OK or carry a
diagnosis (an OK partition without one matches no rule), one reads the pending matches, one
the open alerts; the planning is the pure :func:`plan.plan_evaluation`. Notifications are only
queued here (one Celery task per delivery, after commit): a slow channel never delays this.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from dashboard.alerts import notify
from dashboard.alerts.models import (
    OPEN_STATES,
    Alert,
    AlertEvent,
    AlertState,
    Candidate,
    Rule,
    Silence,
)
from dashboard.alerts.plan import Firing, Pending, plan_evaluation
from dashboard.alerts.rules import (
    PartitionFacts,
    RuleSpec,
    SilenceSpec,
    Subject,
    silence_for,
    title_for,
    with_topic_codes,
)
from dashboard.ingest.store import stored_producers
from dashboard.monitoring.models import PartitionState
from dashboard.monitoring.producers import topic_expiry
from spark_jobs.evaluator import PRODUCER_EXPIRY

log = logging.getLogger(__name__)


@dataclass
class EvaluationReport:
    partitions_read: int = 0
    fired: int = 0
    resolved: int = 0
    pending: int = 0
    held: int = 0
    duration_s: float = 0.0


def rule_spec(rule: Rule) -> RuleSpec:
    return RuleSpec(
        id=rule.pk,
        name=rule.name,
        cluster_pattern=rule.cluster_pattern,
        group_pattern=rule.group_pattern,
        topic_pattern=rule.topic_pattern,
        statuses=frozenset(rule.statuses or ()),
        diagnoses=frozenset(rule.diagnoses or ()),
        level=rule.level,
        min_evaluations=rule.min_evaluations,
        min_duration_s=rule.min_duration_s,
        min_lag=rule.min_lag,
        min_time_lag_s=rule.min_time_lag_s,
        severity=rule.severity,
    )


def silence_spec(s: Silence) -> SilenceSpec:
    return SilenceSpec(
        id=s.pk,
        until=s.until,
        rule_id=s.rule_id,
        cluster_pattern=s.cluster_pattern,
        group_pattern=s.group_pattern,
        topic_pattern=s.topic_pattern,
    )


def _codes(diagnosis: object) -> tuple[str, ...]:
    if not isinstance(diagnosis, list):
        return ()
    return tuple(str(d.get("code")) for d in diagnosis if isinstance(d, dict) and d.get("code"))


def read_partitions(
    topic_codes: dict[tuple[str, str], tuple[str, ...]] | None = None,
) -> list[PartitionFacts]:
    """The partitions any rule could match or hold: not OK, or with a diagnosis, or of a
    topic with a topic-level diagnosis (``topic_codes``, added to their codes)."""
    wanted = ~Q(status="OK") | ~Q(diagnosis=[])
    for cluster, topic in topic_codes or {}:
        wanted |= Q(group__cluster__name=cluster, topic=topic)
    rows = (
        PartitionState.objects.filter(wanted)
        .values_list(
            "group__cluster__name",
            "group__source",
            "group__name",
            "topic",
            "partition",
            "status",
            "diagnosis",
            "status_since",
            "lag",
            "time_lag_s",
            "reason",
        )
        .iterator(chunk_size=2000)
    )
    facts = [
        PartitionFacts(
            cluster=c,
            source=src,
            group=g,
            topic=t,
            partition=p,
            status=st,
            codes=_codes(diag),
            since=since,
            lag=lag,
            time_lag_s=tl,
            reason=reason or "",
        )
        for c, src, g, t, p, st, diag, since, lag, tl, reason in rows
    ]
    return with_topic_codes(facts, topic_codes or {})


def producer_topic_codes(now: datetime) -> dict[tuple[str, str], tuple[str, ...]]:
    """PRODUCER_EXPIRY per (cluster, topic), as ``monitoring.producers`` reads it (the rule is
    the evaluator's, ``spark_jobs/evaluator/producer_expiry.py``)."""
    expiry = topic_expiry(stored_producers(), now)
    return {key: (PRODUCER_EXPIRY,) for key in expiry}


def active_silences(now: datetime) -> list[SilenceSpec]:
    return [silence_spec(s) for s in Silence.objects.filter(until__gt=now)]


def run_time(run: object | None) -> datetime:
    """The status run's own "now" (its results' time), else the wall clock."""
    as_of_ms = getattr(run, "as_of_ms", None)
    if as_of_ms:
        return datetime.fromtimestamp(as_of_ms / 1000, tz=UTC)
    return timezone.now()


def evaluate(now: datetime | None = None) -> EvaluationReport:
    t0 = time.perf_counter()
    now = now or timezone.now()
    report = EvaluationReport()
    rules = {r.pk: r for r in Rule.objects.filter(enabled=True).prefetch_related("channels")}
    specs = [rule_spec(r) for r in rules.values()]
    partitions = read_partitions(producer_topic_codes(now)) if specs else []
    report.partitions_read = len(partitions)
    pending = {
        (c.rule_id, c.subject_key): Pending(c.first_matched_at, c.evaluations, c.last_matched_at)
        for c in Candidate.objects.all()
    }
    open_alerts = {
        (rule_id or 0, key): pk
        for pk, rule_id, key in Alert.objects.filter(state__in=OPEN_STATES).values_list(
            "pk", "rule_id", "subject_key"
        )
    }
    plan = plan_evaluation(specs, partitions, pending, open_alerts, now)
    silences = active_silences(now)
    report.held = plan.held
    with transaction.atomic():
        _save_pending(plan.pending, pending)
        for rule_id, key in plan.forget:
            Candidate.objects.filter(rule_id=rule_id, subject_key=key).delete()
        report.fired = fire_all(rules, plan.fire, silences, now)
        for alert_id, reason in plan.resolve:
            if resolve(alert_id, reason, now, silences):
                report.resolved += 1
        _refresh(plan.refresh, silences, now)
    report.pending = Candidate.objects.count()
    report.duration_s = time.perf_counter() - t0
    return report


def _subject_fields(subject: Subject) -> dict:
    return {
        "status": subject.status,
        "diagnosis": list(subject.codes),
        "reason": subject.reason[:2000],
        "lag": subject.lag,
        "time_lag_s": subject.time_lag_s,
        "details": {"partitions": [[t, p] for t, p in subject.partitions]},
    }


def _new_alert(rule: Rule, firing: Firing, silence: SilenceSpec | None, now: datetime) -> Alert:
    s = firing.subject
    return Alert(
        rule=rule, rule_name=rule.name, subject_key=s.key, level=s.level, cluster=s.cluster,
        source=s.source, group=s.group, topic=s.topic, partition=s.partition,
        state=AlertState.FIRING, severity=rule.severity, title=title_for(rule.name, s),
        started_at=firing.started_at, fired_at=now,
        silence_id=silence.id if silence else None, last_evaluated_at=now,
        **_subject_fields(s),
    )  # fmt: skip


def fire_all(
    rules: dict[int, Rule], firings: list[Firing], silences: list[SilenceSpec], now: datetime
) -> int:
    """Open an alert per firing (silenced when a silence in ``silences`` covers it) and queue
    the firing notices of those not silenced; the count of alerts opened.

    Opens the alerts in one insert per batch (many fire at once when a whole cluster
    stalls); if another evaluation opened one of them first (the constraint on open alerts),
    fall back to one by one so only that one is skipped."""
    if not firings:
        return 0
    made = []
    for f in firings:
        silence = silence_for(silences, f.rule.id, f.subject, now)
        made.append((_new_alert(rules[f.rule.id], f, silence, now), silence))
    try:
        with transaction.atomic():
            Alert.objects.bulk_create([a for a, _ in made], batch_size=500)
    except IntegrityError:
        made = [(a, s) for a, s in made if _create_one(a)]
    events = []
    channels: dict[int, list] = {}
    for alert, silence in made:
        events.append(AlertEvent(alert=alert, at=now, kind="fired", message=alert.title))
        if silence:
            events.append(AlertEvent(
                alert=alert, at=now, kind="silenced",
                message=f"silence #{silence.id}: nothing sent",
            ))  # fmt: skip
    AlertEvent.objects.bulk_create(events, batch_size=500)
    for alert, silence in made:
        if not silence:
            rule = rules[alert.rule_id]
            if rule.pk not in channels:
                channels[rule.pk] = notify.channels_for_rule(rule)
            notify.queue(alert, "firing", channels[rule.pk])
    return len(made)


def _create_one(alert: Alert) -> bool:
    alert.pk = None
    try:
        with transaction.atomic():
            alert.save(force_insert=True)
    except IntegrityError:
        log.info("alert already open", extra={"rule": alert.rule_name, "key": alert.subject_key})
        return False
    return True


def resolve(alert_id: int, reason: str, now: datetime, silences: list[SilenceSpec]) -> bool:
    alert = Alert.objects.filter(pk=alert_id, state__in=OPEN_STATES).first()
    if alert is None:
        return False
    alert.state = AlertState.RESOLVED
    alert.resolved_at = now
    alert.resolved_reason = reason
    alert.save(update_fields=["state", "resolved_at", "resolved_reason"])
    AlertEvent.objects.create(alert=alert, at=now, kind="resolved", message=reason)
    silence = silence_for(silences, alert.rule_id, alert_subject(alert), now)
    if silence:
        AlertEvent.objects.create(
            alert=alert,
            at=now,
            kind="silenced",
            message=f"silence #{silence.id}: no resolve notice sent",
        )
    elif alert.rule is None or alert.rule.notify_resolved:
        notify.queue(alert, "resolved", notify.channels_notified(alert))
    return True


def alert_subject(alert: Alert) -> Subject:
    """The subject an alert was raised for, rebuilt from its stored fields (as the rules see
    subjects), so a silence can be matched against an alert already open."""
    partitions = tuple(tuple(x) for x in (alert.details or {}).get("partitions", []))
    return Subject(
        key=alert.subject_key,
        level=alert.level,
        cluster=alert.cluster,
        source=alert.source,
        group=alert.group,
        topic=alert.topic,
        partition=alert.partition,
        status=alert.status,
        codes=tuple(alert.diagnosis or ()),
        since=alert.started_at,
        lag=alert.lag,
        time_lag_s=alert.time_lag_s,
        partitions=partitions,  # type: ignore[arg-type]
    )


def _save_pending(states: dict, before: dict) -> None:
    """New pending matches in one insert, advanced ones in one update per batch."""
    new = [
        Candidate(rule_id=rule_id, subject_key=key, first_matched_at=st.first_matched_at,
                  evaluations=st.evaluations, last_matched_at=st.last_matched_at)
        for (rule_id, key), st in states.items() if (rule_id, key) not in before
    ]  # fmt: skip
    Candidate.objects.bulk_create(new, batch_size=500, ignore_conflicts=True)
    advanced = {k: st for k, st in states.items() if k in before}
    if not advanced:
        return
    rows = Candidate.objects.filter(rule_id__in={k[0] for k in advanced}).only(
        "pk", "rule_id", "subject_key"
    )
    changed = []
    for row in rows:
        st = advanced.get((row.rule_id, row.subject_key))
        if st is not None:
            row.first_matched_at = st.first_matched_at
            row.evaluations = st.evaluations
            row.last_matched_at = st.last_matched_at
            changed.append(row)
    Candidate.objects.bulk_update(
        changed, ["first_matched_at", "evaluations", "last_matched_at"], batch_size=500
    )


REFRESHED = ("status", "diagnosis", "reason", "lag", "time_lag_s", "details")


def _refresh(still: list[tuple[int, Subject]], silences: list[SilenceSpec], now: datetime) -> None:
    """Still matching: keep the figures current (only rows whose figures moved are written, in
    batches); a silence that ended lets the firing notice out."""
    if not still:
        return
    alerts = Alert.objects.select_related("rule").in_bulk([pk for pk, _ in still])
    changed = []
    for alert_id, subject in still:
        alert = alerts.get(alert_id)
        if alert is None:
            continue
        fields = _subject_fields(subject)
        if any(getattr(alert, name) != fields[name] for name in REFRESHED):
            for name in REFRESHED:
                setattr(alert, name, fields[name])
            alert.last_evaluated_at = now
            changed.append(alert)
        if alert.silence_id and silence_for(silences, alert.rule_id, subject, now) is None:
            alert.silence = None
            alert.save(update_fields=["silence"])
            AlertEvent.objects.create(
                alert=alert, at=now, kind="unsilenced", message="silence ended"
            )
            if alert.rule is not None:
                notify.queue(alert, "firing", notify.channels_for_rule(alert.rule))
    Alert.objects.bulk_update(changed, [*REFRESHED, "last_evaluated_at"], batch_size=500)


def on_status_applied(
    sender: object = None, run: object = None, changes: object = None, **kwargs: object
) -> EvaluationReport:
    """Receiver of ``dashboard.signals.status_applied``."""
    report = evaluate(run_time(run))
    log.info("alerts evaluated", extra={"alerts": report.__dict__})
    return report
