"""apply_client_reports: the clients' own assignments merged into the broker's group snapshots."""

from __future__ import annotations

import copy

from collectors.client_assignments import apply_client_reports
from collectors.client_reports import CONSUMER, PRODUCER, ClientReport
from collectors.records import GroupMember, GroupSnapshot, Source


def rep(
    client_id: str,
    assignment: tuple[tuple[str, int], ...],
    *,
    group: str | None = "g",
    name: str | None = None,
    host: str | None = None,
    time_ms: int = 1000,
    kind: str = CONSUMER,
    cgrp_state: str | None = "up",
) -> ClientReport:
    return ClientReport(
        kind=kind,
        client_id=client_id,
        name=name or f"{client_id}#consumer-1",
        group=group,
        time_ms=time_ms,
        host=host,
        assignment=assignment,
        cgrp_state=cgrp_state,
    )


def snap(
    members: tuple[GroupMember, ...] = (),
    *,
    group: str = "g",
    members_known: bool = True,
    topics: tuple[str, ...] = ("t",),
) -> GroupSnapshot:
    return GroupSnapshot(
        source=Source.KAFKA,
        group=group,
        state="Stable",
        members=members,
        members_known=members_known,
        topics=topics,
    )


def member(
    member_id: str, client_id: str | None, host: str | None = None, *tps: tuple[str, int]
) -> GroupMember:
    return GroupMember(member_id=member_id, client_id=client_id, host=host, assignment=tuple(tps))


T0, T1, T2, T3 = ("t", 0), ("t", 1), ("t", 2), ("t", 3)


def assignments(s: GroupSnapshot) -> dict[str, tuple[tuple[str, int], ...]]:
    return {m.member_id: m.assignment for m in s.members}


def test_a_member_without_assignment_gets_its_clients_report() -> None:
    (out,) = apply_client_reports(
        [snap((member("m1", "a"), member("m2", "b")))], [rep("a", (T0, T1)), rep("b", (T2,))]
    )
    assert assignments(out) == {"m1": (T0, T1), "m2": (T2,)}
    assert out.members_known


def test_an_assignment_the_broker_reported_is_never_overwritten() -> None:
    original = snap((member("m1", "a", None, T0), member("m2", "b")))
    (out,) = apply_client_reports([original], [rep("a", (T2, T3)), rep("b", (T0, T1))])
    # m1 keeps the broker's T0; m2's report claims T0 too, but the broker's owner wins.
    assert assignments(out) == {"m1": (T0,), "m2": (T1,)}


def test_nothing_to_fill_returns_the_same_snapshot() -> None:
    original = snap((member("m1", "a", None, T0),))
    assert apply_client_reports([original], [rep("a", (T1,))])[0] is original
    other = snap((member("m1", "a"),))
    assert apply_client_reports([other], [])[0] is other


def test_a_report_of_another_group_does_not_apply() -> None:
    (out,) = apply_client_reports([snap((member("m1", "a"),))], [rep("a", (T0,), group="other")])
    assert assignments(out) == {"m1": ()}


def test_producer_reports_are_ignored() -> None:
    (out,) = apply_client_reports([snap((member("m1", "a"),))], [rep("a", (T0,), kind=PRODUCER)])
    assert assignments(out) == {"m1": ()}


def test_a_member_without_client_id_cannot_be_matched() -> None:
    (out,) = apply_client_reports([snap((member("m1", None),))], [rep("", (T0,))])
    assert assignments(out) == {"m1": ()}


def test_a_groupless_report_serves_the_only_group_with_that_client_id() -> None:
    groups = [snap((member("m1", "a"),), group="g"), snap((member("x1", "b"),), group="h")]
    out = apply_client_reports(groups, [rep("a", (T0,), group=None)])
    assert assignments(out[0]) == {"m1": (T0,)} and assignments(out[1]) == {"x1": ()}


def test_a_groupless_report_whose_client_id_is_in_two_groups_serves_neither() -> None:
    groups = [snap((member("m1", "a"),), group="g"), snap((member("x1", "a"),), group="h")]
    out = apply_client_reports(groups, [rep("a", (T0,), group=None)])
    assert assignments(out[0]) == {"m1": ()} and assignments(out[1]) == {"x1": ()}


def test_a_report_naming_the_group_beats_a_groupless_one() -> None:
    reports = [rep("a", (T0,), group=None, name="a#consumer-9"), rep("a", (T1,), group="g")]
    (out,) = apply_client_reports([snap((member("m1", "a"),))], reports)
    assert assignments(out) == {"m1": (T1,)}


def test_members_sharing_a_client_id_are_told_apart_by_host() -> None:
    members = (member("m1", "svc", "/10.0.0.1"), member("m2", "svc", "/10.0.0.2"))
    reports = [rep("svc", (T0,), host="10.0.0.2"), rep("svc", (T1,), host="::ffff:10.0.0.1")]
    (out,) = apply_client_reports([snap(members)], reports)
    assert assignments(out) == {"m1": (T1,), "m2": (T0,)}


def test_members_sharing_a_client_id_and_host_stay_unknown() -> None:
    members = (member("m1", "rdkafka", "/10.0.0.1"), member("m2", "rdkafka", "/10.0.0.1"))
    reports = [
        rep("rdkafka", (T0,), host="10.0.0.1", name="rdkafka#consumer-1"),
        rep("rdkafka", (T1,), host="10.0.0.1", name="rdkafka#consumer-2"),
    ]
    (out,) = apply_client_reports([snap(members)], reports)
    assert assignments(out) == {"m1": (), "m2": ()}


def test_one_member_and_two_candidate_reports_is_not_guessed() -> None:
    reports = [rep("svc", (T0,), host="10.0.0.1"), rep("svc", (T1,), host="10.0.0.2")]
    (out,) = apply_client_reports([snap((member("m1", "svc"),))], reports)
    assert assignments(out) == {"m1": ()}


def test_a_report_from_another_host_does_not_match() -> None:
    (out,) = apply_client_reports(
        [snap((member("m1", "a", "/10.0.0.1"),))], [rep("a", (T0,), host="10.0.0.9")]
    )
    assert assignments(out) == {"m1": ()}


def test_the_newest_report_of_one_client_instance_is_used() -> None:
    reports = [rep("a", (T0,), time_ms=5000), rep("a", (T1,), time_ms=1000)]
    (out,) = apply_client_reports([snap((member("m1", "a"),))], reports)
    assert assignments(out) == {"m1": (T0,)}


def test_members_are_synthesized_when_the_broker_lists_none() -> None:
    group = snap(members_known=False, topics=("t",))
    reports = [
        rep("b", (T2, T3), name="b#consumer-1", host="10.0.0.2"),
        rep("a", (T0, T1, ("u", 0)), name="a#consumer-1", host="10.0.0.1"),
        rep("c", (T0,), group=None),  # no group declared: cannot be a member of "g"
    ]
    (out,) = apply_client_reports([group], reports)
    assert out.members_known is True
    assert out.members == (
        GroupMember("a#consumer-1", "a", "10.0.0.1", (T0, T1, ("u", 0))),
        GroupMember("b#consumer-1", "b", "10.0.0.2", (T2, T3)),
    )
    assert out.topics == ("t", "u")
    assert (out.state, out.group) == ("Stable", "g")


def test_synthesized_members_with_the_same_name_are_told_apart_by_host() -> None:
    reports = [
        rep("svc", (T0,), name="svc#consumer-1", host="10.0.0.1"),
        rep("svc", (T1,), name="svc#consumer-1", host="10.0.0.2"),
    ]
    (out,) = apply_client_reports([snap(members_known=False)], reports)
    assert assignments(out) == {"svc#consumer-1@10.0.0.1": (T0,), "svc#consumer-1@10.0.0.2": (T1,)}


def test_a_stale_report_loses_partitions_to_a_newer_one() -> None:
    # After a rebalance the old owner's last report still claims T1.
    reports = [
        rep("a", (T0, T1), name="a#consumer-1", time_ms=1000),
        rep("b", (T1, T2), name="b#consumer-1", time_ms=2000),
    ]
    (out,) = apply_client_reports([snap(members_known=False)], reports)
    assert assignments(out) == {"a#consumer-1": (T0,), "b#consumer-1": (T1, T2)}


def test_a_terminating_consumer_is_not_synthesized() -> None:
    reports = [rep("a", (T0,), cgrp_state="term"), rep("b", (T1,))]
    (out,) = apply_client_reports([snap(members_known=False)], reports)
    assert assignments(out) == {"b#consumer-1": (T1,)}


def test_no_reports_for_a_memberless_group_leaves_it_alone() -> None:
    group = snap(members_known=False)
    assert apply_client_reports([group], [rep("a", (T0,), group="h")])[0] is group


def test_an_empty_group_stays_empty() -> None:
    # The broker says Empty with no members (members_known True): reports must be stale.
    group = snap(members_known=True)
    assert apply_client_reports([group], [rep("a", (T0,))])[0] is group


def test_order_and_untouched_groups_are_kept() -> None:
    groups = [
        snap(group="z", members_known=False),
        snap((member("m", "a"),), group="g"),
        snap(group="b"),
    ]
    out = apply_client_reports(groups, [rep("a", (T0,))])
    assert [s.group for s in out] == ["z", "g", "b"]
    assert out[0] is groups[0] and out[2] is groups[2]


def test_the_input_is_not_modified() -> None:
    groups = [snap((member("m1", "a"),))]
    before = copy.deepcopy(groups)
    apply_client_reports(groups, [rep("a", (T0,))])
    assert groups == before
