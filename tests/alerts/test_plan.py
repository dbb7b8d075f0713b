"""One evaluation planned (pure): pending matches, firing, resolving, holding, dedup."""

from datetime import UTC, datetime, timedelta

from dashboard.alerts.plan import Pending, plan_evaluation
from dashboard.alerts.rules import GROUP, PARTITION, PartitionFacts, RuleSpec, subject_key

T0 = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
STEP = timedelta(seconds=15)
RULE = RuleSpec(id=1, name="default")  # STALL/STOP/ERR for two evaluations
KEY = subject_key(PARTITION, "c", "storm", "orders-spout", "orders", 0)


def p(status="STALL", codes=(), partition=0, **kw):
    return PartitionFacts(
        cluster="c", source="storm", group="orders-spout", topic="orders", partition=partition,
        status=status, codes=tuple(codes), **kw,
    )  # fmt: skip


class World:
    """Feeds successive evaluations through the planner, applying its plan like the DB does."""

    def __init__(self, rules=(RULE,)):
        self.rules = list(rules)
        self.pending: dict = {}
        self.open: dict = {}
        self.next_id = 1
        self.fired: list = []
        self.resolved: list = []

    def run(self, now, partitions):
        plan = plan_evaluation(self.rules, partitions, dict(self.pending), dict(self.open), now)
        for k in plan.forget:
            self.pending.pop(k, None)
        self.pending.update(plan.pending)
        for f in plan.fire:
            k = (f.rule.id, f.subject.key)
            assert k not in self.open, "fired twice"
            self.open[k] = self.next_id
            self.fired.append((self.next_id, f))
            self.next_id += 1
        for alert_id, reason in plan.resolve:
            self.open = {k: v for k, v in self.open.items() if v != alert_id}
            self.resolved.append((alert_id, reason))
        return plan


def test_default_rule_fires_on_second_evaluation_once():
    w = World()
    w.run(T0, [p()])
    assert not w.fired and w.pending[(1, KEY)].evaluations == 1
    w.run(T0 + STEP, [p()])
    assert len(w.fired) == 1 and (1, KEY) not in w.pending
    for i in range(2, 10):  # stays stuck: one alert, refreshed, never a second
        plan = w.run(T0 + i * STEP, [p()])
        assert not plan.fire and [a for a, _ in plan.refresh] == [1]
    assert len(w.fired) == 1


def test_a_blip_of_one_evaluation_never_fires():
    w = World()
    for i, status in enumerate(["STALL", "OK", "STOP", "OK", "ERR", "OK"]):
        w.run(T0 + i * STEP, [p(status)])
    assert not w.fired and not w.pending


def test_status_changing_between_listed_statuses_keeps_counting():
    w = World()
    w.run(T0, [p("STALL")])
    w.run(T0 + STEP, [p("STOP")])
    assert len(w.fired) == 1 and w.fired[0][1].subject.status == "STOP"


def test_resolves_when_status_clears_and_a_new_fault_is_a_new_alert():
    w = World()
    w.run(T0, [p()])
    w.run(T0 + STEP, [p()])
    w.run(T0 + 2 * STEP, [])  # OK partitions are not passed
    assert w.resolved == [(1, "status cleared")] and not w.open
    w.run(T0 + 3 * STEP, [p()])
    w.run(T0 + 4 * STEP, [p()])
    assert [a for a, _ in w.fired] == [1, 2]


def test_same_evaluation_twice_counts_once():
    w = World()
    w.run(T0, [p()])
    w.run(T0, [p()])
    assert not w.fired and w.pending[(1, KEY)].evaluations == 1


def test_source_unreachable_neither_fires_nor_resolves_nor_advances():
    w = World()
    w.run(T0, [p()])
    unreachable = [p("UNKNOWN", ("SOURCE_UNREACHABLE",))]
    for i in range(1, 5):
        w.run(T0 + i * STEP, unreachable)
    assert not w.fired and w.pending[(1, KEY)].evaluations == 1
    w.run(T0 + 5 * STEP, [p()])
    assert len(w.fired) == 1
    for i in range(6, 9):  # the source goes down while firing: the alert stays open
        plan = w.run(T0 + i * STEP, [p("STOP", ("SOURCE_UNREACHABLE",))])
        assert not plan.resolve and not plan.refresh
    assert w.open and not w.resolved
    w.run(T0 + 9 * STEP, [])
    assert w.resolved == [(1, "status cleared")]


def test_never_fires_on_source_unreachable_alone():
    rule = RuleSpec(id=1, name="r", statuses=frozenset({"STOP", "UNKNOWN"}), min_evaluations=1)
    w = World([rule])
    for i in range(5):
        w.run(T0 + i * STEP, [p("STOP", ("SOURCE_UNREACHABLE",)), p("UNKNOWN", partition=1)])
    assert not w.fired and not w.pending


def test_minimum_duration_in_seconds_uses_the_status_start():
    rule = RuleSpec(id=1, name="r", min_evaluations=1, min_duration_s=300)
    w = World([rule])
    w.run(T0, [p(since=T0 - timedelta(seconds=200))])
    assert not w.fired
    w.run(T0 + timedelta(seconds=100), [p(since=T0 - timedelta(seconds=200))])
    assert len(w.fired) == 1
    assert w.fired[0][1].started_at == T0 - timedelta(seconds=200)


def test_threshold_not_met_resets_the_count():
    rule = RuleSpec(id=1, name="r", min_lag=100)
    w = World([rule])
    w.run(T0, [p(lag=150)])
    w.run(T0 + STEP, [p(lag=50)])
    w.run(T0 + 2 * STEP, [p(lag=150)])
    assert not w.fired
    w.run(T0 + 3 * STEP, [p(lag=150)])
    assert len(w.fired) == 1


def test_two_rules_two_alerts_for_one_partition():
    other = RuleSpec(id=2, name="poison", statuses=frozenset(),
                     diagnoses=frozenset({"POISON_MESSAGE"}), min_evaluations=1,
                     severity="critical")  # fmt: skip
    w = World([RULE, other])
    w.run(T0, [p("STALL", ("POISON_MESSAGE",))])
    assert [f.rule.id for _, f in w.fired] == [2]
    w.run(T0 + STEP, [p("STALL", ("POISON_MESSAGE",))])
    assert sorted(f.rule.id for _, f in w.fired) == [1, 2]


def test_group_rule_one_alert_for_many_partitions():
    rule = RuleSpec(id=1, name="g", level=GROUP)
    w = World([rule])
    parts = [p("STOP", partition=i) for i in range(8)]
    w.run(T0, parts)
    w.run(T0 + STEP, parts[:3])
    assert len(w.fired) == 1 and len(w.fired[0][1].subject.partitions) == 3
    w.run(T0 + 2 * STEP, parts[:1])
    assert not w.resolved
    w.run(T0 + 3 * STEP, [])
    assert len(w.resolved) == 1


def test_open_alerts_of_a_disabled_rule_resolve():
    w = World()
    w.run(T0, [p()])
    w.run(T0 + STEP, [p()])
    w.rules = []
    w.run(T0 + 2 * STEP, [p()])
    assert w.resolved == [(1, "rule disabled or deleted")]


def test_pending_of_another_rule_untouched():
    rule2 = RuleSpec(id=2, name="other", group_pattern="nothing-matches")
    plan = plan_evaluation([RULE, rule2], [p()], {(2, "x"): Pending(T0, 1, T0)}, {}, T0 + STEP)
    assert (2, "x") in plan.forget  # rule 2's own pending match cleared
    assert all(k[0] in (1, 2) for k in plan.pending)


def test_twenty_thousand_stuck_partitions_each_pending_once():
    rules = [RULE, RuleSpec(id=2, name="g", level=GROUP, group_pattern="group-1*")]
    parts = [
        PartitionFacts("c", "kafka", f"group-{i % 500}", f"topic-{i % 40}", i, "STALL")
        for i in range(20_000)
    ]
    plan = plan_evaluation(rules, parts, {}, {}, T0)
    assert len(plan.pending) == 20_000 + 111  # every partition, and groups 1, 10-19, 100-199
