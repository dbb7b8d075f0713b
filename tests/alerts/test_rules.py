"""Rule matching, case by case (pure functions, no database)."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from dashboard.alerts.rules import (
    GROUP,
    PARTITION,
    PartitionFacts,
    RuleSpec,
    SilenceSpec,
    condition_holds,
    in_scope,
    is_due,
    is_held,
    match_rule,
    partition_subject,
    silence_for,
    subject_key,
    title_for,
    with_topic_codes,
)

T0 = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
DEFAULT = RuleSpec(id=1, name="default")


def facts(status="STALL", codes=(), group="g", topic="t", partition=0, cluster="c", **kw):
    return PartitionFacts(
        cluster=cluster, source="kafka", group=group, topic=topic, partition=partition,
        status=status, codes=tuple(codes), **kw,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("patterns", "names", "expected"),
    [
        (("*", "*", "*"), ("c", "g", "t"), True),
        (("prod-*", "*", "*"), ("prod-eu", "g", "t"), True),
        (("prod-*", "*", "*"), ("staging", "g", "t"), False),
        (("*", "orders-spout", "*"), ("c", "orders-spout", "t"), True),
        (("*", "orders-spout", "*"), ("c", "orders-spout-2", "t"), False),
        (("*", "orders-*", "*"), ("c", "Orders-x", "t"), False),  # case-sensitive
        (("*", "*", "orders"), ("c", "g", "orders"), True),
        (("*", "*", "order?"), ("c", "g", "orders"), True),
        (("*", "*", "[ab]*"), ("c", "g", "beta"), True),
        (("*", "*", "[ab]*"), ("c", "g", "gamma"), False),
        (("*", "[[]x]", "*"), ("c", "[x]", "t"), True),  # a literal bracket, escaped
    ],
)
def test_scope_globs(patterns, names, expected):
    rule = RuleSpec(id=1, name="r", cluster_pattern=patterns[0], group_pattern=patterns[1],
                    topic_pattern=patterns[2])  # fmt: skip
    assert in_scope(rule, *names) is expected


@pytest.mark.parametrize(
    ("rule_kw", "status", "codes", "lag", "time_lag", "expected"),
    [
        ({}, "STALL", (), 5, 10.0, True),
        ({}, "STOP", (), None, None, True),
        ({}, "ERR", ("OUT_OF_RANGE",), None, None, True),
        ({}, "WARN", (), 5, 1.0, False),  # the default rule ignores WARN
        ({}, "OK", (), 0, 0.0, False),
        ({}, "REWIND", (), 0, 0.0, False),
        ({"statuses": frozenset({"WARN"})}, "WARN", (), 5, 1.0, True),
        # Never on SOURCE_UNREACHABLE, whatever the rule lists.
        ({}, "STOP", ("SOURCE_UNREACHABLE",), 10, 99.0, False),
        ({"diagnoses": frozenset({"SOURCE_UNREACHABLE"}), "statuses": frozenset()},
         "UNKNOWN", ("SOURCE_UNREACHABLE",), None, None, False),
        ({"statuses": frozenset({"UNKNOWN"})}, "UNKNOWN", (), None, None, False),
        # Diagnoses: any listed code; with statuses, both must hold.
        ({"statuses": frozenset(), "diagnoses": frozenset({"POISON_MESSAGE"})},
         "STALL", ("POISON_MESSAGE",), 1, 1.0, True),
        ({"statuses": frozenset(), "diagnoses": frozenset({"POISON_MESSAGE"})},
         "STALL", ("PENDING_LEAK",), 1, 1.0, False),
        ({"diagnoses": frozenset({"DEAD_CONSUMER"})}, "STOP", ("DEAD_CONSUMER",), 1, 1.0, True),
        ({"diagnoses": frozenset({"DEAD_CONSUMER"})}, "WARN", ("DEAD_CONSUMER",), 1, 1.0, False),
        ({"statuses": frozenset(), "diagnoses": frozenset({"REBALANCING"})},
         "OK", ("REBALANCING",), 0, 0.0, True),
        ({"statuses": frozenset(), "diagnoses": frozenset()}, "STOP", (), 1, 1.0, False),
        # RETENTION_RISK rides on any status; the default rule (statuses only) ignores it on OK.
        ({"statuses": frozenset(), "diagnoses": frozenset({"RETENTION_RISK"})},
         "OK", ("RETENTION_RISK",), 50, 240.0, True),
        ({"statuses": frozenset(), "diagnoses": frozenset({"RETENTION_RISK"})},
         "STALL", ("RETENTION_RISK", "DEAD_CONSUMER"), 50, 240.0, True),
        ({"statuses": frozenset(), "diagnoses": frozenset({"RETENTION_RISK"})},
         "UNKNOWN", ("RETENTION_RISK", "SOURCE_UNREACHABLE"), 50, 240.0, False),
        ({}, "OK", ("RETENTION_RISK",), 50, 240.0, False),
        # Thresholds: met at equality, missing figures do not meet them, both must hold.
        ({"min_lag": 100}, "STALL", (), 100, None, True),
        ({"min_lag": 100}, "STALL", (), 99, None, False),
        ({"min_lag": 100}, "STALL", (), None, None, False),
        ({"min_time_lag_s": 60.0}, "STALL", (), 1, 60.0, True),
        ({"min_time_lag_s": 60.0}, "STALL", (), 10**6, 59.9, False),
        ({"min_time_lag_s": 60.0}, "STALL", (), 1, None, False),
        ({"min_lag": 10, "min_time_lag_s": 60.0}, "STALL", (), 10, 60.0, True),
        ({"min_lag": 10, "min_time_lag_s": 60.0}, "STALL", (), 9, 600.0, False),
        ({"min_lag": 0}, "STALL", (), 0, None, True),
    ],
)  # fmt: skip
def test_condition(rule_kw, status, codes, lag, time_lag, expected):
    rule = RuleSpec(id=1, name="r", **rule_kw)
    assert condition_holds(rule, status, codes, lag, time_lag) is expected


@pytest.mark.parametrize(
    ("status", "codes", "held"),
    [("UNKNOWN", (), True), ("STOP", ("SOURCE_UNREACHABLE",), True), ("STOP", (), False),
     ("OK", ("REBALANCING",), False), ("STALL", ("POISON_MESSAGE", "SOURCE_UNREACHABLE"), True)],
)  # fmt: skip
def test_held(status, codes, held):
    assert is_held(status, codes) is held


@pytest.mark.parametrize(
    ("min_evals", "min_s", "evals", "elapsed_s", "due"),
    [
        (2, 0, 1, 0, False), (2, 0, 2, 0, True), (2, 0, 3, 0, True), (1, 0, 1, 0, True),
        (0, 0, 1, 0, True),  # at least one evaluation, whatever the rule says
        (1, 120, 1, 119, False), (1, 120, 5, 120, True), (3, 60, 2, 600, False),
        (3, 60, 3, 59, False), (3, 60, 3, 61, True),
    ],
)  # fmt: skip
def test_due(min_evals, min_s, evals, elapsed_s, due):
    rule = RuleSpec(id=1, name="r", min_evaluations=min_evals, min_duration_s=min_s)
    assert is_due(rule, evals, T0, T0 + timedelta(seconds=elapsed_s)) is due


def test_partition_rule_one_subject_per_matching_partition():
    seen = match_rule(DEFAULT, [
        facts("STALL", partition=0), facts("OK", partition=1), facts("STOP", partition=2),
        facts("STOP", ("SOURCE_UNREACHABLE",), partition=3), facts("UNKNOWN", partition=4),
    ])  # fmt: skip
    assert sorted(s.partition for s in seen.matching.values()) == [0, 2]
    assert seen.held == {
        subject_key(PARTITION, "c", "kafka", "g", "t", 3),
        subject_key(PARTITION, "c", "kafka", "g", "t", 4),
    }


def test_out_of_scope_partitions_are_neither_matched_nor_held():
    rule = RuleSpec(id=1, name="r", group_pattern="orders-spout")
    seen = match_rule(rule, [facts("STOP", group="payments"), facts("UNKNOWN", group="payments")])
    assert not seen.matching and not seen.held


def test_group_rule_aggregates_matching_partitions():
    rule = RuleSpec(id=1, name="r", level=GROUP)
    since = T0 - timedelta(minutes=5)
    seen = match_rule(rule, [
        facts("STALL", partition=0, lag=10, time_lag_s=30.0, since=since, reason="stuck"),
        facts("STOP", partition=1, lag=5, time_lag_s=90.0, since=T0, reason="dead"),
        facts("OK", partition=2, lag=1000),
        facts("STALL", group="other", partition=0),
    ])  # fmt: skip
    assert len(seen.matching) == 2
    g = seen.matching[subject_key(GROUP, "c", "kafka", "g")]
    assert (g.status, g.lag, g.time_lag_s, g.since, g.reason) == ("STOP", 15, 90.0, since, "dead")
    assert g.partitions == (("t", 0), ("t", 1)) and g.topic == "" and g.partition is None


def test_group_rule_held_only_when_nothing_matches():
    rule = RuleSpec(id=1, name="r", level=GROUP)
    key = subject_key(GROUP, "c", "kafka", "g")
    seen = match_rule(rule, [facts("UNKNOWN", ("SOURCE_UNREACHABLE",), partition=0)])
    assert seen.held == {key} and not seen.matching
    seen = match_rule(rule, [facts("UNKNOWN", ("SOURCE_UNREACHABLE",)), facts("STOP", partition=1)])
    assert key in seen.matching and key not in seen.held


def test_group_rule_topic_pattern_limits_the_partitions():
    rule = RuleSpec(id=1, name="r", level=GROUP, topic_pattern="orders")
    seen = match_rule(rule, [facts("STOP", topic="clicks"), facts("STALL", topic="orders")])
    (g,) = seen.matching.values()
    assert g.partitions == (("orders", 0),) and g.status == "STALL"


def test_subject_keys_are_distinct_and_stable():
    keys = {
        subject_key(PARTITION, "c", "kafka", "g", "t", 0),
        subject_key(PARTITION, "c", "kafka", "g", "t", 1),
        subject_key(PARTITION, "c", "storm", "g", "t", 0),
        subject_key(PARTITION, "c", "kafka", "g", "t0", None),
        subject_key(GROUP, "c", "kafka", "g"),
        subject_key(PARTITION, "c", "kafka", "g\x1ft", "", 0),
    }
    assert len(keys) == 6
    assert subject_key(GROUP, "c", "kafka", "g") == subject_key(GROUP, "c", "kafka", "g")
    assert len(subject_key(GROUP, "c" * 255, "kafka", "g" * 255)) == 64


@pytest.mark.parametrize(
    ("silence_kw", "until_s", "rule_id", "silenced"),
    [
        ({}, 60, 1, True),
        ({}, 0, 1, False),  # ended
        ({}, -60, 1, False),
        ({"group_pattern": "g"}, 60, 1, True),
        ({"group_pattern": "other"}, 60, 1, False),
        ({"cluster_pattern": "c*", "topic_pattern": "t"}, 60, 1, True),
        ({"topic_pattern": "x"}, 60, 1, False),
        ({"rule_id": 1}, 60, 1, True),
        ({"rule_id": 2}, 60, 1, False),
    ],
)
def test_silence_for_partition(silence_kw, until_s, rule_id, silenced):
    subject = partition_subject(facts("STALL"))
    s = SilenceSpec(id=7, until=T0 + timedelta(seconds=until_s), **silence_kw)
    assert (silence_for([s], rule_id, subject, T0) is s) is silenced


def test_silence_of_a_group_subject_needs_every_topic_covered():
    rule = RuleSpec(id=1, name="r", level=GROUP)
    (g,) = match_rule(rule, [facts("STOP", topic="a"), facts("STOP", topic="b")]).matching.values()
    until = T0 + timedelta(hours=1)
    assert silence_for([SilenceSpec(1, until, topic_pattern="a")], 1, g, T0) is None
    assert silence_for([SilenceSpec(1, until, topic_pattern="[ab]")], 1, g, T0) is not None


def test_title_names_subject_and_diagnosis():
    s = partition_subject(facts("STALL", ("POISON_MESSAGE",), group="orders-spout", topic="orders"))
    assert title_for("r", s) == "STALL orders-spout orders/0 on c (POISON_MESSAGE)"


# --- topic-level diagnoses (PRODUCER_EXPIRY) ---------------------------------------------------

EXPIRY_RULE = RuleSpec(id=9, name="expiry", statuses=frozenset(), diagnoses=frozenset({"PRODUCER_EXPIRY"}))  # fmt: skip
EXPIRING = {("c", "t"): ("PRODUCER_EXPIRY",)}


@pytest.mark.parametrize(
    ("p", "topic_codes", "codes"),
    [
        (facts("OK"), EXPIRING, ("PRODUCER_EXPIRY",)),  # an OK partition of the topic
        (facts("WARN", ["SLOW_CONSUMER"]), EXPIRING, ("SLOW_CONSUMER", "PRODUCER_EXPIRY")),
        (facts("OK", ["PRODUCER_EXPIRY"]), EXPIRING, ("PRODUCER_EXPIRY",)),  # not twice
        (facts("OK", topic="u"), EXPIRING, ()),  # another topic
        (facts("OK", cluster="d"), EXPIRING, ()),  # same topic name, another cluster
        (facts("OK"), {}, ()),
    ],
)
def test_with_topic_codes(p, topic_codes, codes):
    (out,) = with_topic_codes([p], topic_codes)
    assert out.codes == codes


@pytest.mark.parametrize(
    ("rule", "p", "matches"),
    [
        (EXPIRY_RULE, facts("OK"), True),
        (EXPIRY_RULE, facts("OK", topic="u"), False),
        (EXPIRY_RULE, facts("UNKNOWN"), False),  # held: nothing known of the consumer
        (replace(EXPIRY_RULE, topic_pattern="orders*"), facts("OK"), False),
        (replace(EXPIRY_RULE, statuses=frozenset({"STALL"})), facts("OK"), False),
        (replace(EXPIRY_RULE, level=GROUP), facts("OK"), True),
        (DEFAULT, facts("OK"), False),  # a status rule ignores the diagnosis
    ],
)
def test_a_rule_matches_producer_expiry(rule, p, matches):
    matched = match_rule(rule, with_topic_codes([p], EXPIRING))
    assert bool(matched.matching) is matches
    if matches:
        (subject,) = matched.matching.values()
        assert "PRODUCER_EXPIRY" in subject.codes
