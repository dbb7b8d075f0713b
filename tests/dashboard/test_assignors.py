"""Kafka's assignors as Lagwatch reproduces them (``dashboard.whatif``): table
tests with DOMAIN §3's examples, different subscriptions, empty groups, a member subscribed
to nothing, more members than partitions, several topics, static members and Java's orders.

Every expected answer here is also what Apache Kafka 4.1's own classes answer
(``test_assignors_against_kafka.py`` runs them on random groups)."""

from __future__ import annotations

import pytest

from dashboard.whatif import member, range_assign, round_robin, sticky, uniform
from dashboard.whatif.model import AssignorError

T10 = {"t": 10}


def parts(spec: str) -> list[tuple[str, int]]:
    """``"t:0-3 u:1"`` -> ``[("t", 0), ("t", 1), ("t", 2), ("t", 3), ("u", 1)]``."""
    out = []
    for item in spec.split():
        topic, numbers = item.split(":")
        for chunk in numbers.split(","):
            low, _, high = chunk.partition("-")
            out.extend((topic, p) for p in range(int(low), int(high or low) + 1))
    return out


def expect(**by_member: str) -> dict[str, list[tuple[str, int]]]:
    return {m: parts(spec) for m, spec in by_member.items()}


def three(topics=("t",), owned=None):
    owned = owned or {}
    return [member(m, topics, parts(owned.get(m, ""))) for m in ("a", "b", "c")]


# (case id, members, partition counts, expected)
RANGE = [
    ("domain: 10 over a, b, c is 4/3/3", three(), T10, expect(a="t:0-3", b="t:4-6", c="t:7-9")),
    ("each topic on its own: a collects both extras", [member("a", "tu"), member("b", "tu")],
     {"t": 3, "u": 3}, expect(a="t:0-1 u:0-1", b="t:2 u:2")),
    ("different subscriptions", [member("a", "t"), member("b", "tu")], {"t": 4, "u": 2},
     expect(a="t:0-1", b="t:2-3 u:0-1")),
    ("more members than partitions", three(), {"t": 2}, expect(a="t:0", b="t:1", c="")),
    ("a member subscribed to nothing", [member("a", ""), member("b", "t")], {"t": 3},
     expect(a="", b="t:0-2")),
    ("a subscribed topic that does not exist", [member("a", ["t", "gone"])], {"t": 1},
     expect(a="t:0")),
    ("static members first, by instance id", [member("a", "t"), member("b", "t", instance_id="z"),
     member("c", "t", instance_id="y")], {"t": 3}, expect(c="t:0", b="t:1", a="t:2")),
    ("Java's string order: an emoji (a surrogate pair) sorts before U+FF21",
     [member("\uff21", "t"), member("\U0001f600", "t")], {"t": 2},
     expect(**{"\U0001f600": "t:0", "\uff21": "t:1"})),
    ("empty group", [], T10, {}),
]  # fmt: skip

ROUND_ROBIN = [
    ("10 over a, b, c dealt in turn", three(), T10,
     expect(a="t:0,3,6,9", b="t:1,4,7", c="t:2,5,8")),
    ("several topics, even when all subscribe alike", [member("a", "tu"), member("b", "tu")],
     {"t": 3, "u": 3}, expect(a="t:0,2 u:1", b="t:1 u:0,2")),
    ("different subscriptions: a member is skipped for a topic it does not read",
     [member("a", "t"), member("b", "tu"), member("c", "u")], {"t": 3, "u": 3},
     expect(a="t:0,2", b="t:1 u:0,2", c="u:1")),
    ("more members than partitions", three(), {"t": 2}, expect(a="t:0", b="t:1", c="")),
    ("a member subscribed to nothing", [member("a", ""), member("b", "t")], {"t": 2},
     expect(a="", b="t:0-1")),
    ("empty group", [], T10, {}),
]  # fmt: skip

# DOMAIN §3: after c leaves, the survivors keep what they had (round-robin reshuffles).
BEFORE_C_LEFT = {"a": "t:0,3,6,9", "b": "t:1,4,7"}

STICKY = [
    ("from nothing: like round-robin", three(), T10,
     expect(a="t:0,3,6,9", b="t:1,4,7", c="t:2,5,8")),
    ("domain: c left, a and b keep theirs and share c's",
     three(owned=BEFORE_C_LEFT)[:2], T10, expect(a="t:0,2-3,6,9", b="t:1,4-5,7-8")),
    ("balanced already: nothing moves", three(owned={"a": "t:0-3", "b": "t:4-6", "c": "t:7-9"}),
     T10, expect(a="t:0-3", b="t:4-6", c="t:7-9")),
    ("a member joins: the busiest give up the least", three(owned={"a": "t:0-4", "b": "t:5-9"}),
     T10, expect(a="t:0-3", b="t:5-7", c="t:4,8-9")),
    ("orphans (nobody held them) fill the least loaded", three(owned={"a": "t:0-3", "b": "t:4"}),
     T10, expect(a="t:0-3", b="t:4-5,7", c="t:6,8-9")),
    ("more members than partitions keep theirs", three(owned={"c": "t:0", "a": "t:1"}),
     {"t": 2}, expect(a="t:1", b="", c="t:0")),
    ("different subscriptions (the general builder)", [member("a", "t"), member("b", "tu")],
     {"t": 2, "u": 2}, expect(a="t:0-1", b="u:0-1")),
    ("a topic no longer subscribed is revoked, then the balance restored",
     [member("a", "u", parts("t:0-1")), member("b", "tu", parts("u:0"))], {"t": 2, "u": 2},
     expect(a="u:0-1", b="t:0-1")),
    # Kafka's allSubscriptionsEqual starts from the first non-empty subscription in its HashMap
    # order: "a" comes first, so the group counts as homogeneous and a is given partitions...
    ("quirk: a member subscribed to nothing, first in Kafka's map",
     [member("a", ""), member("b", "t")], {"t": 4}, expect(a="t:0,2", b="t:1,3")),
    # ...while here "b" (subscribed to nothing) comes second: heterogeneous, a takes all.
    ("a member subscribed to nothing, second in Kafka's map",
     [member("a", "t"), member("b", "")], {"t": 4}, expect(a="t:0-3", b="")),
    ("a partition two members claim is taken from both and dealt again",
     [member("a", "t", parts("t:0-1")), member("b", "t", parts("t:1"))], {"t": 4},
     expect(a="t:0-1", b="t:2-3")),
    ("empty group", [], T10, {}),
]  # fmt: skip

UNIFORM = [
    ("from nothing: the last member in the broker's order takes the extra", three(), T10,
     expect(a="t:0-2", b="t:3-5", c="t:6-9")),
    ("balanced already: nothing moves (KAFKA-18688)",
     three(owned={"a": "t:0-3", "b": "t:4-6", "c": "t:7-9"}), T10,
     expect(a="t:0-3", b="t:4-6", c="t:7-9")),
    ("c left: a and b keep theirs", three(owned={"a": "t:0-3", "b": "t:4-6", "c": "t:7-9"})[:2],
     T10, expect(a="t:0-3,7", b="t:4-6,8-9")),
    ("different subscriptions: most partitions per subscriber first, then least loaded",
     [member("a", "t"), member("b", "tu")], {"t": 4, "u": 2},
     expect(a="t:0-2", b="t:3 u:0-1")),
    ("more members than partitions", three(), {"t": 2}, expect(a="", b="t:0", c="t:1")),
    ("a member subscribed to nothing", [member("a", ""), member("b", "t")], {"t": 3},
     expect(a="", b="t:0-2")),
    ("nobody subscribed to an existing topic", [member("a", ["gone"])], {"t": 3}, expect(a="")),
    ("empty group", [], T10, {}),
]  # fmt: skip


def _cases(table):
    return pytest.mark.parametrize(
        ("members", "partitions", "expected"), [c[1:] for c in table], ids=[c[0] for c in table]
    )


@_cases(RANGE)
def test_range(members, partitions, expected) -> None:
    assert range_assign(members, partitions) == expected


@_cases(ROUND_ROBIN)
def test_round_robin(members, partitions, expected) -> None:
    assert round_robin(members, partitions) == expected


@_cases(STICKY)
def test_sticky(members, partitions, expected) -> None:
    assert sticky(members, partitions) == expected


@_cases(UNIFORM)
def test_uniform(members, partitions, expected) -> None:
    assert uniform(members, partitions) == expected


def moved(before: dict[str, str], after: dict[str, list]) -> int:
    now = {tp: m for m, tps in after.items() for tp in tps}
    return sum(1 for m, spec in before.items() for tp in parts(spec) if now[tp] != m)


def test_domain_a_member_leaves_sticky_keeps_round_robin_reshuffles() -> None:
    survivors = three(owned=BEFORE_C_LEFT)[:2]
    assert moved(BEFORE_C_LEFT, sticky(survivors, T10)) == 0
    assert moved(BEFORE_C_LEFT, round_robin(survivors, T10)) == 3
    assert moved(BEFORE_C_LEFT, range_assign(survivors, T10)) == 4


def test_the_brokers_range_is_range_whatever_was_held() -> None:
    held = three(owned={"a": "t:7-9", "b": "t:0-3", "c": "t:4-6"})
    assert range_assign(held, T10) == expect(a="t:0-3", b="t:4-6", c="t:7-9")


def test_uniform_refuses_a_partition_two_previous_targets_share() -> None:
    with pytest.raises(AssignorError, match="left unassigned"):
        uniform([member("a", "t", parts("t:0-1")), member("b", "t", parts("t:1"))], {"t": 4})


@pytest.mark.parametrize("assign", [range_assign, round_robin, sticky, uniform])
def test_every_partition_once_and_balanced_when_subscriptions_agree(assign) -> None:
    held = {1: "t:0", 2: "u:1-2", 4: "u:3-7 v:0-2"}  # m-4 holds far more than its share
    members = [member(f"m-{i}", "tuv", parts(held.get(i, ""))) for i in range(7)]
    result = assign(members, {"t": 5, "u": 8, "v": 3})
    got = sorted(tp for tps in result.values() for tp in tps)
    assert got == parts("t:0-4 u:0-7 v:0-2")
    sizes = sorted(len(tps) for tps in result.values())
    assert sizes[-1] - sizes[0] <= (3 if assign is range_assign else 1)  # range: per topic
