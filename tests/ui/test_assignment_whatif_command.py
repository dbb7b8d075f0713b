"""``manage.py assignment_whatif --cluster C --group G [--source S] [--json]``: the group page's
"Assignment balance" in a terminal, the what-if document of ``/api/v1/groups/<id>/whatif/`` as
JSON, exit code 2 on an unknown cluster or group or an ambiguous name."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.ui import world

pytestmark = pytest.mark.django_db


def run(cluster: str, group: str, *args: str) -> str:
    out = StringIO()
    call_command("assignment_whatif", "--cluster", cluster, "--group", group, *args, stdout=out)
    return out.getvalue()


def held(member_id: str, *partitions: int) -> dict:
    return {"member_id": member_id, "assignment": [["t", p] for p in partitions]}


@pytest.fixture
def payments():
    members = [held("m-a", 0, 1, 2, 3, 4), held("m-b", 5), held("m-c")]
    g = world.group(world.cluster(), "payments", members=members, assignor="range")
    world.partitions(g, 8, topic="t", lag=10)
    return g


def test_json_is_the_interface_document(payments) -> None:
    doc = json.loads(run("prod", "payments", "--json"))
    assert {k: doc[k] for k in ("group", "cluster", "source", "type", "subscriptions")} == {
        "group": "payments", "cluster": "prod", "source": "kafka", "type": None,
        "subscriptions": "inferred",
    }  # fmt: skip
    assert [(m["member_id"], m["partitions"], m["lag"]) for m in doc["members"]] == [
        ("m-a", {"t": [0, 1, 2, 3, 4]}, 50), ("m-b", {"t": [5]}, 10), ("m-c", {}, 0),
    ]  # fmt: skip
    assert doc["imbalance"] == 2.5 and doc["busiest_member"] == "m-a"
    assert {name: a["moves"] for name, a in doc["assignors"].items()} == {
        "range": 2, "roundrobin": 4, "sticky": 2,
    }  # fmt: skip
    # Range over 8 partitions and 3 members: 3/3/2 in member order (DOMAIN §3).
    assert doc["assignors"]["range"]["assignment"] == {
        "m-a": {"t": [0, 1, 2]}, "m-b": {"t": [3, 4, 5]}, "m-c": {"t": [6, 7]},
    }  # fmt: skip


def test_text_table_with_what_if_columns_and_figures(payments) -> None:
    text = run("prod", "payments")
    lines = text.splitlines()
    assert lines[0] == "payments (kafka, cluster prod): 3 members, 8 partitions, assignor range"
    header = lines[2].split()
    assert header == ["member", "partitions", "lag", "time", "lag", "share", "range",
                      "round-robin", "sticky"]  # fmt: skip
    assert lines[3].split() == ["m-a", "5", "50", "4s", "62%", "3", "3", "3"]
    assert lines[6].split() == ["moved", "2", "4", "2"]
    assert "Imbalance 2.5× (most 5, mean 2.0); busiest by lag m-a (62% of the group's lag); " \
        "2 partitions held by nobody (lag 20)." in text  # fmt: skip
    assert "What-if subscriptions: inferred." in text


def test_zookeeper_group_by_source_without_what_if() -> None:
    c = world.cluster()
    world.partitions(world.group(c, "legacy", source="zookeeper", members_known=False), 3)
    world.partitions(world.group(c, "legacy", source="kafka", members=[]), 1)
    with pytest.raises(CommandError, match="2 groups named 'legacy' .*--source") as err:
        run("prod", "legacy")
    assert err.value.returncode == 2
    text = run("prod", "legacy", "--source", "zookeeper")
    assert "member-0" in text and "What-if" not in text and "range" not in text
    assert json.loads(run("prod", "legacy", "--source", "zookeeper", "--json"))["assignors"] == {}


@pytest.mark.parametrize(
    ("args", "message"),
    [(("nope", "payments"), "unknown cluster 'nope'"),
     (("prod", "nope"), "no group 'nope' in cluster 'prod'")],
)  # fmt: skip
def test_unknown_cluster_or_group_exits_2(payments, args, message) -> None:
    with pytest.raises(CommandError, match=message) as err:
        run(*args)
    assert err.value.returncode == 2


def test_hostile_names_stay_on_one_line() -> None:
    name = "evil\n<script>alert(1)</script>"
    g = world.group(world.cluster(), name, members=[held(name, 0)])
    world.partitions(g, 1, topic="t")
    text = run("prod", name)
    assert repr(name) in text.splitlines()[0] and "\nevil" not in text.replace(repr(name), "")
    assert json.loads(run("prod", name, "--json"))["members"][0]["member_id"] == name


def test_group_without_members() -> None:
    g = world.group(world.cluster(), "empty", members=[])
    world.partitions(g, 2)
    g.partitions.update(owner="")
    assert "No member known; 2 partitions held by nobody." in run("prod", "empty")
