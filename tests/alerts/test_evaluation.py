"""Status runs announced through the real signal, evaluated against the real database."""

from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction

from dashboard.alerts.evaluation import evaluate
from dashboard.alerts.models import Alert, AlertState, Candidate, Channel, Delivery, Rule, Silence

pytestmark = pytest.mark.django_db


def events(alert: Alert) -> list[str]:
    return list(alert.events.values_list("kind", flat=True))


def test_default_rule_exists_from_the_migration():
    rule = Rule.objects.get(name="Stuck partition (default)")
    assert rule.enabled and sorted(rule.statuses) == ["ERR", "STALL", "STOP"]
    assert (rule.min_evaluations, rule.level, rule.diagnoses) == (2, "partition", [])


def test_stuck_partition_fires_once_then_resolves(mworld):
    mworld.set("orders", "orders", 0, "STALL", ["POISON_MESSAGE"], reason="committed offset frozen")
    mworld.set("orders", "orders", 1, "OK")
    mworld.apply()
    assert not Alert.objects.exists() and Candidate.objects.count() == 1
    fired_at = mworld.apply()
    alert = Alert.objects.get()
    assert (alert.state, alert.group, alert.topic, alert.partition) == (
        "firing",
        "orders",
        "orders",
        0,
    )
    assert alert.fired_at == fired_at and alert.diagnosis == ["POISON_MESSAGE"]
    assert alert.reason == "committed offset frozen" and not Candidate.objects.exists()
    for _ in range(3):
        mworld.apply()
    assert Alert.objects.count() == 1 and events(alert) == ["fired"]
    mworld.set("orders", "orders", 0, "OK")
    resolved_at = mworld.apply()
    alert.refresh_from_db()
    assert (alert.state, alert.resolved_at, alert.resolved_reason) == (
        "resolved", resolved_at, "status cleared",
    )  # fmt: skip
    assert events(alert) == ["fired", "resolved"]


def test_source_unreachable_holds_the_alert_open(mworld):
    mworld.set("legacy", "audit", 0, "STOP", source="zookeeper")
    mworld.apply()
    mworld.apply()
    alert = Alert.objects.get()
    mworld.set("legacy", "audit", 0, "UNKNOWN", ["SOURCE_UNREACHABLE"], source="zookeeper")
    for _ in range(4):
        mworld.apply()
    alert.refresh_from_db()
    assert alert.state == "firing" and Alert.objects.count() == 1


def test_source_unreachable_never_fires(mworld):
    Rule.objects.create(name="anything", statuses=["STOP", "UNKNOWN"],
                        diagnoses=["SOURCE_UNREACHABLE"], min_evaluations=1)  # fmt: skip
    for p in range(3):
        mworld.set("legacy", "audit", p, "UNKNOWN", ["SOURCE_UNREACHABLE"], source="zookeeper")
    for _ in range(3):
        mworld.apply()
    assert not Alert.objects.exists()


def test_acknowledged_alert_still_resolves(mworld):
    from dashboard.alerts.lifecycle import acknowledge

    mworld.set("g", "t", 0, "STOP")
    mworld.apply()
    mworld.apply()
    alert = acknowledge(Alert.objects.get().pk, by="alice")
    assert alert.state == "acknowledged" and alert.acknowledged_by == "alice"
    mworld.apply()
    assert Alert.objects.get().state == "acknowledged"
    mworld.set("g", "t", 0, "OK")
    mworld.apply()
    alert.refresh_from_db()
    assert alert.state == "resolved"
    assert events(alert) == ["fired", "acknowledged", "resolved"]


def test_database_refuses_a_second_open_alert_for_the_same_rule_and_subject(mworld):
    mworld.set("g", "t", 0, "STOP")
    mworld.apply()
    mworld.apply()
    alert = Alert.objects.get()
    fields = {f.name: getattr(alert, f.name) for f in Alert._meta.concrete_fields if f.name != "id"}
    with pytest.raises(IntegrityError), transaction.atomic():
        Alert.objects.create(**fields)
    Alert.objects.filter(pk=alert.pk).update(state=AlertState.RESOLVED)
    Alert.objects.create(**{**fields, "state": "firing"})  # a closed one does not count


def test_group_level_rule_one_alert_for_a_dead_group(mworld):
    Rule.objects.update(enabled=False)
    Rule.objects.create(name="dead groups", statuses=["STOP"], level="group", severity="critical")
    for p in range(4):
        mworld.set("payments-ledger", "payments", p, "STOP", ["DEAD_CONSUMER"])
    mworld.apply()
    mworld.apply()
    alert = Alert.objects.get()
    assert alert.level == "group" and alert.severity == "critical" and alert.partition is None
    assert alert.details["partitions"] == [["payments", p] for p in range(4)]
    assert alert.lag == 40


def test_silenced_alert_is_recorded_but_sends_nothing(mworld, run_on_commit, hook):
    Channel.objects.create(name="hook", kind="webhook", url=hook.url)
    Silence.objects.create(group_pattern="orders*", until=mworld.now + timedelta(hours=1),
                           reason="maintenance", created_by="alice")  # fmt: skip
    mworld.set("orders", "orders", 0, "STALL")
    mworld.set("payments", "payments", 0, "STOP")
    run_on_commit(mworld)
    run_on_commit(mworld)
    silenced = Alert.objects.get(group="orders")
    loud = Alert.objects.get(group="payments")
    assert silenced.silenced and events(silenced) == ["fired", "silenced"]
    assert not silenced.deliveries.exists()
    assert [b["alert"]["group"] for b in hook.bodies()] == ["payments"]
    mworld.set("orders", "orders", 0, "OK")
    mworld.set("payments", "payments", 0, "OK")
    run_on_commit(mworld)
    assert [(b["notice"], b["alert"]["id"]) for b in hook.bodies()] == [
        ("firing", loud.pk), ("resolved", loud.pk),
    ]  # fmt: skip


def test_silence_ending_lets_the_firing_notice_out(mworld, run_on_commit, hook):
    Channel.objects.create(name="hook", kind="webhook", url=hook.url)
    Silence.objects.create(until=mworld.now + timedelta(seconds=40))
    mworld.set("orders", "orders", 0, "STALL")
    run_on_commit(mworld)
    run_on_commit(mworld)
    assert Alert.objects.get().silenced and not hook.requests
    run_on_commit(mworld)
    run_on_commit(mworld)  # the silence has ended
    alert = Alert.objects.get()
    assert not alert.silenced and "unsilenced" in events(alert)
    assert [b["notice"] for b in hook.bodies()] == ["firing"]


def test_disabled_rule_resolves_its_alerts(mworld):
    mworld.set("g", "t", 0, "STOP")
    mworld.apply()
    mworld.apply()
    Rule.objects.update(enabled=False)
    mworld.apply()
    assert Alert.objects.get().resolved_reason == "rule disabled or deleted"


def test_deleted_partition_resolves(mworld):
    row = mworld.set("g", "t", 0, "STOP")
    mworld.apply()
    mworld.apply()
    row.delete()
    mworld.apply()
    assert Alert.objects.get().state == "resolved"


def test_rule_naming_channels_sends_only_to_them(mworld, run_on_commit, hook):
    Channel.objects.create(name="all-hands", kind="webhook", url=hook.url + "/other")
    mine = Channel.objects.create(name="mine", kind="webhook", url=hook.url)
    Rule.objects.get().channels.add(mine)
    mworld.set("g", "t", 0, "STOP")
    run_on_commit(mworld)
    run_on_commit(mworld)
    assert [r["path"] for r in hook.requests] == ["/hooks/T000/SECRETTOKEN123"]
    assert list(Delivery.objects.values_list("channel_name", "state")) == [("mine", "sent")]


def test_evaluation_of_20000_ok_partitions_reads_only_the_bad_ones(mworld):
    from dashboard.monitoring.models import PartitionState

    g = mworld.group("big")
    PartitionState.objects.bulk_create(
        PartitionState(
            group=g, topic=f"t{i // 100}", partition=i % 100, status="OK", sampled_at=mworld.now
        )  # fmt: skip
        for i in range(20_000)
    )
    PartitionState.objects.filter(topic="t7", partition__lt=3).update(status="STALL")
    PartitionState.objects.filter(topic="t8", partition=0).update(
        diagnosis=[{"code": "REBALANCING", "evidence": {}}]
    )
    report = evaluate(mworld.now)
    assert report.partitions_read == 4 and report.pending == 3


def test_firing_what_another_evaluation_opened_meanwhile_skips_only_that(mworld):
    from dashboard.alerts.evaluation import fire_all, read_partitions, rule_spec
    from dashboard.alerts.plan import Firing
    from dashboard.alerts.rules import match_rule

    mworld.set("g", "t", 0, "STOP")
    mworld.set("g", "t", 1, "STOP")
    mworld.apply()
    mworld.apply()
    assert Alert.objects.filter(state="firing").count() == 2
    mworld.set("g", "t", 2, "STOP")
    rule = Rule.objects.get()
    spec = rule_spec(rule)
    firings = [
        Firing(spec, s, mworld.now) for s in match_rule(spec, read_partitions()).matching.values()
    ]
    assert len(firings) == 3  # as a stale plan would have it
    assert fire_all({rule.pk: rule}, firings, [], mworld.now) == 1
    assert sorted(Alert.objects.values_list("partition", flat=True)) == [0, 1, 2]


def test_producer_expiry_rule_fires_for_the_topic_and_resolves_after_the_window(mworld, settings):
    """PRODUCER_EXPIRY is no status run's: it comes from a producer's pushed counts, and a
    rule listing it matches the OK partitions of the topic (docs/ALERTS.md)."""
    from collectors.ingest_parsing import parse_librdkafka_stats
    from collectors.producer_deliveries import parse_deliveries
    from dashboard.ingest.store import store_client_report
    from tests.collectors.ingest_documents import producer_doc

    settings.LAGWATCH_PRODUCER_EXPIRY_WINDOW_S = 60
    Rule.objects.update(enabled=False)
    Rule.objects.create(name="expired", statuses=[], diagnoses=["PRODUCER_EXPIRY"],
                        level="group", min_evaluations=1)  # fmt: skip
    mworld.set("orders-processor", "orders", 0, "OK")
    mworld.set("orders-processor", "orders", 1, "OK")
    mworld.set("audit-reader", "audit", 0, "OK")
    mworld.apply()
    assert not Alert.objects.exists()

    doc = producer_doc()
    doc["time"] = int(mworld.now.timestamp())
    report = parse_librdkafka_stats(doc, None, 0)
    block = {"counts": [{"topic": "orders", "partition": 1, "failed": {"_MSG_TIMED_OUT": 7}}]}
    store_client_report(mworld.cluster, report, mworld.now, parse_deliveries(block))
    mworld.apply()
    alert = Alert.objects.get()
    assert (alert.state, alert.group, alert.status) == ("firing", "orders-processor", "OK")
    assert alert.diagnosis == ["PRODUCER_EXPIRY"]
    assert alert.details["partitions"] == [["orders", 0], ["orders", 1]]
    mworld.apply(step_s=120)  # no new expiry within the window


def test_a_rule_on_retention_risk_fires_whatever_the_status(mworld):
    """RETENTION_RISK is a finding on any status (a consumer catching up too slowly is OK and
    still about to lose messages): a rule naming it, with no status, fires; the default rule
    (statuses only) does not."""
    Rule.objects.filter(name="Stuck partition (default)").update(enabled=False)
    Rule.objects.create(name="retention", statuses=[], diagnoses=["RETENTION_RISK"],
                        min_evaluations=1)  # fmt: skip
    mworld.set("slow", "short", 0, "OK", ["RETENTION_RISK"], reason="catching up")
    mworld.set("slow", "short", 1, "OK")
    mworld.apply()
    alert = Alert.objects.get()
    assert (alert.topic, alert.partition, alert.diagnosis) == ("short", 0, ["RETENTION_RISK"])
    mworld.set("slow", "short", 0, "OK")  # the consumer caught up: the finding is gone
    mworld.apply()
    alert.refresh_from_db()
    assert alert.state == "resolved"
