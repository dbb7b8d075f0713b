"""The group page: partition table, charts over ranges, members, rebalances, states; and a
query count that does not grow with the number of partitions."""

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from dashboard.monitoring.models import (
    LagRollup,
    PartitionState,
    RebalanceEvent,
    StatusChange,
    TopicConfig,
)
from dashboard.ui.params import PARTITIONS_PER_PAGE as PER_PAGE
from tests.ui import world

pytestmark = pytest.mark.django_db


def url(g, query: str = "") -> str:
    return reverse("ui:group", args=[g.pk]) + query


def test_partition_table_shows_every_column(web: Client) -> None:
    g = world.group(world.cluster(), "payments", status="ERR")
    world.partitions(g, 2, status="STOP", diagnosis=[{"code": "DEAD_CONSUMER", "evidence": {}}])
    body = web.get(url(g)).content.decode()
    for text in ("Committed", "Latest", "Lag", "Time lag", "Owner", "Diagnosis", "Last commit",
                 "DEAD_CONSUMER", "member-1", ">100<", ">106<"):  # fmt: skip
        assert text in body, text


def test_partition_table_filters_sorts_and_pages_by_link(web: Client) -> None:
    g = world.group(world.cluster(), "big")
    world.partitions(g, 2 * PER_PAGE - 3, topic="a", lag=1)
    world.partitions(g, 3, topic="b", status="STALL", lag=7)
    r = web.get(url(g))
    rows = r.context["table"]["rows"]
    assert [x["status"] for x in rows[:3]] == ["STALL"] * 3 and len(rows) == PER_PAGE
    assert rows[0]["url"] == reverse("ui:partition", args=[rows[0]["id"]])
    assert r.context["table"]["pages"] == 2
    assert 'href="?ppage=2" rel="next"' in r.content.decode()
    r = web.get(url(g, "?pstatus=STALL"))
    assert r.context["table"]["matching"] == 3
    r = web.get(url(g, "?topic=a&psort=partition&ppage=2"))
    assert [x["partition"] for x in r.context["table"]["rows"]] == list(
        range(PER_PAGE, 2 * PER_PAGE - 3)
    )


def test_short_range_charts_read_the_raw_history(web: Client) -> None:
    g = world.group(world.cluster(), "payments")
    parts = world.partitions(g, 3, lag=10)
    world.samples(parts, points=4)
    r = web.get(url(g, "?range=15m"))
    assert r.context["series_kind"] == "raw"
    lag = r.context["figures"]["lag"]["data"][0]
    assert lag["y"] == [39, 36, 33, 30]  # oldest first: 3 partitions × (10 + k)
    # The pushed counters as rates on the left axis, the pending gauge on its own right axis:
    # 3 partitions acking one record each per 10 s, pending 3 × k.
    figure = r.context["figures"]["spout"]
    spout = figure["data"]
    assert [(t["name"], t["yaxis"]) for t in spout] == [
        ("acked/s", "y"), ("failed/s", "y"), ("pending (right axis)", "y2")]  # fmt: skip
    assert spout[0]["y"] == [None, 0.3, 0.3, 0.3]
    assert spout[1]["y"] == [None, 0.0, 0.0, 0.0]
    assert spout[2]["y"] == [9, 6, 3, 0]
    assert (figure["layout"]["yaxis2"]["overlaying"], figure["layout"]["yaxis2"]["side"]) == (
        "y", "right")  # fmt: skip
    assert figure["layout"]["yaxis"]["title"]["text"] == "tuples/s"
    assert 'data-figure="fig-lag-data"' in r.content.decode()


def test_a_spouts_whole_counts_are_not_summed_over_its_partitions(web: Client) -> None:
    """Without a push every partition carries the spout's own counters (no pending): their
    sum would count the spout once per partition, so the group has no summed chart and the
    partition's chart says the counts are the whole spout's."""
    g = world.group(world.cluster(), "clicks-spout", source="storm")
    parts = world.partitions(g, 3, lag=10)
    world.samples(parts, points=4, pushed=False)
    r = web.get(url(g, "?range=15m"))
    assert r.context["figures"]["spout"] is None
    page = web.get(reverse("ui:partition", args=[parts[0].id]) + "?range=15m")
    assert page.context["figures"]["spout"]["layout"]["title"]["text"].startswith(
        "Spout counts of its whole spout"
    )


def test_long_range_charts_read_the_rollups(web: Client) -> None:
    g = world.group(world.cluster(), "payments")
    now = timezone.now()
    LagRollup.objects.bulk_create(
        LagRollup(cluster="prod", level="group", source="kafka", group="payments",
                  resolution=res, bucket_start=now - timedelta(hours=h), lag=lag,
                  max_time_lag_s=lag / 10)
        for res, h, lag in [("1h", 100, 5), ("1h", 50, 7), ("1m", 2, 9), ("1m", 30, 1)]
    )  # fmt: skip
    r = web.get(url(g, "?range=7d"))
    assert r.context["series_kind"] == "rollup 1h"
    assert r.context["figures"]["lag"]["data"][0]["y"] == [5, 7]
    r = web.get(url(g, "?range=6h"))
    assert r.context["series_kind"] == "rollup 1m"
    assert r.context["figures"]["lag"]["data"][0]["y"] == [9]


def test_empty_range_says_so(web: Client) -> None:
    g = world.group(world.cluster(), "new")
    assert "No history in this range yet" in web.get(url(g, "?range=24h")).content.decode()


def test_members_and_unowned_partitions(web: Client) -> None:
    members = [
        {"member_id": "m-1", "client_id": "app", "host": "/10.0.0.1", "assignment": [["t", 0], ["t", 1]]},
        {"member_id": "m-2", "client_id": "app", "host": "/10.0.0.2", "assignment": [["t", 2]]},
    ]  # fmt: skip
    g = world.group(world.cluster(), "payments", members=members)
    world.partitions(g, 5, topic="t")
    r = web.get(url(g))
    got = {m["member"]: (m["topics"], m["count"]) for m in r.context["members"]}
    assert got == {
        "m-1": ([("t", "0-1")], 2),
        "m-2": ([("t", "2")], 1),
        "(nobody)": ([("t", "3-4")], 2),
    }
    bars = r.context["figures"]["assignment"]["data"]
    assert bars[0]["x"] == [2, 1, 2]


def test_members_from_partition_owners_when_the_source_reports_none(web: Client) -> None:
    g = world.group(world.cluster(), "legacy", source="zookeeper", members_known=False)
    world.partitions(g, 6)
    r = web.get(url(g))
    assert sorted(m["member"] for m in r.context["members"]) == ["member-0", "member-1", "member-2"]
    assert "does not report members" in r.content.decode()


KIP848_MEMBERS = [
    {"member_id": "c-1", "instance_id": "pod-1", "client_id": "checkout", "host": "/10.0.0.1",
     "assignment": [["t", 0], ["t", 1]], "target_assignment": [["t", 0], ["t", 1]],
     "member_epoch": 14},
    {"member_id": "c-2", "instance_id": None, "client_id": "checkout", "host": "/10.0.0.2",
     "assignment": [["t", 2]], "target_assignment": [["t", 2], ["t", 3], ["u", 0]],
     "member_epoch": 13},
]  # fmt: skip


def test_kip848_group_head_shows_type_epochs_assignor_coordinator_last_commit(
    web: Client,
) -> None:
    g = world.group(world.cluster(), "checkout", members=KIP848_MEMBERS, state="Assigning",
                    group_type="consumer", generation=15, assignment_epoch=14,
                    assignor="uniform", coordinator="broker-2:9092")  # fmt: skip
    world.partitions(g, 4, topic="t")  # last commit 30 s ago
    r = web.get(url(g))
    assert r.context["membership"] == {"type": "consumer", "reconciling": 1}
    head = web.get(url(g, "?live=1")).json()["regions"]["group-head"]
    for text in ("Group type", "consumer (KIP-848)", "Generation (group epoch)</dt><dd>15<",
                 "Assignment epoch</dt><dd>14<", "Assigning", "uniform", "broker-2:9092",
                 "Last commit", "1 reconciling"):  # fmt: skip
        assert text in head, text
    assert re.search(r"Last commit</dt><dd title=\"[-0-9: ]+ UTC\">3\ds ago<", head), head


def test_members_table_with_instance_ids_epochs_and_reconciling_targets(web: Client) -> None:
    g = world.group(world.cluster(), "checkout", members=KIP848_MEMBERS, group_type="consumer")
    world.partitions(g, 4, topic="t")
    r = web.get(url(g))
    members = {m["member"]: m for m in r.context["members"]}
    one, two = members["c-1"], members["c-2"]
    assert (one["instance_id"], one["member_epoch"], one["reconciling"]) == ("pod-1", 14, False)
    assert one["target"] == []  # holds its target: nothing to show
    assert (two["instance_id"], two["member_epoch"], two["reconciling"]) == ("", 13, True)
    assert two["topics"] == [("t", "2")] and two["target"] == [("t", "2-3"), ("u", "0")]
    assert members["(nobody)"]["topics"] == [("t", "3")]
    table = r.content.decode().split('id="members-table"')[1].split("</table>")[0]
    for text in ("Instance", "Member epoch", "Target", "pod-1", "/10.0.0.2", ">13<",
                 "reconciling", "t: 2-3", "u: 0"):  # fmt: skip
        assert text in table, text


def test_old_member_rows_and_classic_groups_read_as_unknowns(web: Client) -> None:
    old = [{"member_id": "m-1", "client_id": "app", "host": "/h", "assignment": [["t", 0]]}]
    g = world.group(world.cluster(), "billing", members=old, generation=3)
    world.partitions(g, 1, topic="t", last_commit_at=None)
    r = web.get(url(g))
    (member,) = r.context["members"]
    assert (member["instance_id"], member["member_epoch"], member["reconciling"]) == (
        "", None, False,
    )  # fmt: skip
    assert r.context["membership"] == {"type": None, "reconciling": 0}
    head = web.get(url(g, "?live=1")).json()["regions"]["group-head"]
    assert "Group type" in head and "unknown" in head and "Assignment epoch" not in head
    assert "Last commit</dt><dd>—" in head
    zk = world.group(world.cluster("zk"), "legacy", source="zookeeper", members_known=False)
    world.partitions(zk, 2)
    body = web.get(url(zk)).content.decode()
    assert "Group type" not in body and "Member epoch" not in body


def test_rebalance_timeline_with_causes(web: Client) -> None:
    g = world.group(world.cluster(), "payments", generation=7)
    now = timezone.now()
    RebalanceEvent.objects.create(
        group=g,
        at=now - timedelta(minutes=5),
        generation=6,
        cause="member_left",
        detail={"causes": ["member_left"], "left": ["m-3"]},
    )
    RebalanceEvent.objects.create(
        group=g,
        at=now - timedelta(minutes=1),
        generation=7,
        cause="member_joined",
        detail={"causes": ["member_joined", "assignment_changed"]},
    )
    RebalanceEvent.objects.create(
        group=g, at=now - timedelta(days=3), generation=1, cause="old", detail={}
    )
    r = web.get(url(g))
    assert [e["generation"] for e in r.context["events"]] == [6, 7]
    fig = r.context["figures"]["rebalances"]["data"][0]
    assert fig["y"] == ["member_left", "member_joined"]
    assert fig["text"] == ["gen 6", "gen 7"] and fig["mode"] == "markers+text"
    body = r.content.decode()
    assert "member_joined, assignment_changed" in body and "left: [&#x27;m-3&#x27;]" in body


def test_states_not_evaluated_window_incomplete_stale(web: Client) -> None:
    c = world.cluster()
    g = world.group(c, "fresh", status="UNKNOWN", evaluated_at=None, complete=None)
    assert "Not evaluated yet" in web.get(url(g)).content.decode()
    g = world.group(c, "young", complete=0.4)
    assert "Window not complete yet: 40%" in web.get(url(g)).content.decode()
    world.health(c, "kafka", reachable=False, error="all brokers down")
    g = world.group(c, "blind", stale=True)
    world.partitions(g, 1, stale=True)
    body = web.get(url(g)).content.decode()
    assert "Kafka of cluster prod unreachable" in body
    assert "stale: figures as of" in body
    assert 'class="stale"' in body


def test_a_partition_that_left_the_group_is_marked_in_its_table(web: Client) -> None:
    g = world.group(world.cluster(), "g")
    left, _ = world.partitions(g, 2)
    PartitionState.objects.filter(pk=left.pk).update(present=False)
    body = web.get(url(g)).content.decode()
    assert body.count("left the group</span>") == 1


def test_status_changes_listed(web: Client) -> None:
    g = world.group(world.cluster(), "payments", status="ERR")
    StatusChange.objects.create(group=g, topic="orders", partition=1, at=timezone.now(),
                                old_status="OK", new_status="STOP",
                                diagnosis=[{"code": "DEAD_CONSUMER", "evidence": {}}],
                                reason="no commit for 60 s")  # fmt: skip
    body = web.get(url(g)).content.decode()
    assert "orders/1" in body and "DEAD_CONSUMER" in body and "no commit for 60 s" in body


def test_missing_group_is_404_and_bad_range_400(web: Client) -> None:
    assert web.get(reverse("ui:group", args=[999])).status_code == 404
    g = world.group(world.cluster(), "x")
    r = web.get(url(g, "?range=2y"))
    assert r.status_code == 400 and b"'range'" in r.content


def _queries(web: Client, path: str) -> int:
    with CaptureQueriesContext(connection) as ctx:
        assert web.get(path).status_code == 200
    return len(ctx.captured_queries)


@pytest.mark.parametrize("query", ["", "?range=15m", "?live=1", "?live=charts", "?range=7d"])
def test_query_count_does_not_grow_with_partitions(web: Client, query: str) -> None:
    c = world.cluster()
    counts = []
    for n in (10, 200):
        members = [
            {"member_id": f"m{i}", "assignment": [["t", i]], "instance_id": f"i{i}",
             "member_epoch": 3, "target_assignment": [["t", i], ["t", n // 2 + i]]}
            for i in range(n // 2)
        ]  # fmt: skip
        g = world.group(c, f"g{n}", members=members, status="ERR", group_type="consumer",
                        assignment_epoch=4)  # fmt: skip
        parts = world.partitions(g, n, topic="t", status="STALL")
        world.samples(parts, points=3)
        RebalanceEvent.objects.create(group=g, at=timezone.now(), generation=1, cause="x")
        counts.append(_queries(web, url(g, query)))
        p = parts[0]
        counts.append(_queries(web, reverse("ui:partition", args=[p.pk]) + query))
    assert counts[0] == counts[2], counts
    assert counts[1] == counts[3], counts
    assert counts[0] <= 14, counts


def test_a_spout_group_charts_its_storm_ui_figures_and_escapes_names(web: Client) -> None:
    c = world.cluster()
    g = world.group(c, world.XSS, source="storm", topology_id="topo-1")
    world.partitions(g, 2)
    world.spout_samples(c, "topo-1", world.XSS, points=4)
    world.spout_samples(c, "other-topology", world.XSS, points=4, cap=999)  # not this group's
    r = web.get(url(g, "?range=15m"))
    figs = r.context["figures"]
    rates = {d["name"]: d["y"] for d in figs["spout_rates"]["data"]}
    assert rates == {
        "emitted/s": [None, 10.0, 10.0, 10.0],
        "acked/s": [None, 9.0, 9.0, 9.0],
        "failed/s": [None, 0.0, 0.1, 0.0],
    }
    assert figs["spout_latency"]["data"][0]["y"] == [100.0, 101.0, 102.0, 103.0]
    pending = {d["name"]: d["y"] for d in figs["spout_pending"]["data"]}
    assert pending == {"in flight": [20] * 4, "max.spout.pending": [20] * 4}
    body = r.content.decode()
    assert 'id="fig-spout_rates"' in body and 'id="fig-spout_pending"' in body
    assert world.XSS not in body and world.XSS not in str(figs["spout_rates"]["layout"])
    assert "&lt;script&gt;" in figs["spout_rates"]["layout"]["title"]["text"]
    live = web.get(url(g, "?live=charts")).json()["figures"]
    assert {"spout_rates", "spout_latency", "spout_pending"} <= set(live)


def test_a_kafka_group_has_no_spout_charts(web: Client) -> None:
    g = world.group(world.cluster(), "payments")
    world.partitions(g, 2)
    figs = web.get(url(g)).context["figures"]
    assert figs["spout_rates"] is None and figs["spout_pending"] is None


@pytest.mark.parametrize("query", ["", "?live=charts", "?range=7d"])
def test_a_spout_groups_query_count_does_not_grow(web: Client, query: str) -> None:
    c = world.cluster()
    counts = []
    for n in (10, 200):
        g = world.group(c, f"spout{n}", source="storm", topology_id=f"topo-{n}")
        parts = world.partitions(g, n)
        world.samples(parts, points=3)
        world.spout_samples(c, f"topo-{n}", f"spout{n}", points=n)
        counts.append(_queries(web, url(g, query)))
    assert counts[0] == counts[1], counts


def test_live_update_regions(web: Client) -> None:
    g = world.group(world.cluster(), "payments", status="ERR")
    world.partitions(g, 2, status="STOP")
    doc = web.get(url(g, "?live=1")).json()
    assert set(doc["regions"]) == {"group-head", "partitions"}
    assert "STOP" in doc["regions"]["partitions"]
    figs = web.get(url(g, "?live=charts")).json()["figures"]
    assert {"lag", "time_lag", "assignment", "rebalances", "spout"} <= set(figs)


def test_a_retention_left_dash_says_why(web: Client) -> None:
    """"—" in "Retention left" is never bare: each says why that partition has no forecast,
    and a note under the table lists the reasons on the page."""
    c = world.cluster()
    g = world.group(c, "mixed")
    now = timezone.now()
    TopicConfig.objects.create(cluster=c, topic="kept", retention_ms=7 * 86_400_000,
                               cleanup_policy="delete", read_at=now)  # fmt: skip
    TopicConfig.objects.create(cluster=c, topic="table", retention_ms=86_400_000,
                               cleanup_policy="compact", read_at=now)  # fmt: skip
    reading, caught_up, behind_since = world.partitions(g, 3, topic="kept", lag=0)
    PartitionState.objects.filter(pk=reading.pk).update(lag=40, retention_left_s=6 * 86_400.0)
    # Lag now, none when the status job judged it (the figure is the job's, the lag the poll's).
    PartitionState.objects.filter(pk=behind_since.pk).update(lag=12)
    world.partitions(g, 1, topic="kept-idle", lag=0)  # no settings read for this topic
    world.partitions(g, 1, topic="table", lag=9)
    r = web.get(url(g, "?psort=partition"))
    rows = {(x["topic"], x["partition"]): x for x in r.context["table"]["rows"]}
    assert "no_forecast" not in rows[("kept", 0)]
    assert rows[("kept", 1)]["no_forecast"].startswith("nothing is waiting to be read")
    assert rows[("kept-idle", 0)]["no_forecast"].startswith(
        "the topic's retention settings have not been read yet")
    assert rows[("table", 0)]["no_forecast"] == "the topic is compacted, not deleted by time"
    assert rows[("kept", 2)]["no_forecast"].startswith(
        "at the status job's last judgement nothing was waiting to be read")
    body = r.content.decode()
    assert body.count('<span class="no-forecast" title="No forecast: ') == 4
    assert ">6d<" in body
    assert 'id="no-forecast-note"' in body and "the topic is compacted" in body
