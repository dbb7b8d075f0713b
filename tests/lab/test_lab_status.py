"""The whole lab, end to end: the workload's scenarios as ``lagwatch_status --json`` shows them.

A stack of its own with every service (ZooKeeper, broker, Redis, the workload with its
consumers, ZooKeeper consumer and Storm spouts, web, worker, collector, beat). Nothing is
called in-process: beat dispatches the cycles, the collector stores them, the workload's
clients push their statistics and spout counts to the web's ingest endpoint, and the test
reads the result the way a user would, through ``manage.py lagwatch_status --json``.
"""

from __future__ import annotations

import http.cookiejar
import json
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from lab.stack import REPO, Stack
from lab.workload.control import start_scenario
from tests.lab_world import lagwatch_status
from tests.waiting import wait_for

pytestmark = pytest.mark.lab

SERVICES = ["zookeeper", "kafka", "redis", "workload", "web", "worker", "collector", "beat"]
# Each read of the status is a manage.py process (~1.5 CPU-s): read every few seconds, as the
# figures change once a poll, not back to back (a core taken from the rest of the suite).
STATUS_EVERY_S = 3.0


def group(doc: dict, source: str, name: str) -> dict | None:
    return next((g for g in doc["groups"] if g["source"] == source and g["group"] == name), None)


def partitions(doc: dict, source: str, name: str) -> dict[tuple[str, int], dict]:
    return {
        (p["topic"], p["partition"]): p
        for p in doc["partitions"]
        if p["source"] == source and p["group"] == name
    }


def everyone_reported(doc: dict) -> bool:
    """Every demo consumer is collected with owners known (pushed statistics have arrived)."""
    kafka = partitions(doc, "kafka", "orders-processor")
    spouts = partitions(doc, "storm", "orders-spout")
    return (
        bool(kafka and spouts)
        and all(p["owner"] for p in kafka.values())
        and all(p["pending"] is not None for p in spouts.values())
    )


def producer_expiry_is_shown(stack: Stack, endpoints: dict[str, str]) -> None:
    """producer-expiry: its producer's `_MSG_TIMED_OUT` reports, counted by the client, arrive
    exactly as the ingest's expired count, and show in lagwatch_status, /api/v1/producers/,
    /metrics, the producers page and the page of a group reading the topic."""
    result = start_scenario(endpoints["control"], "producer-expiry", timeout=300)["details"]
    topic, client = result["topic"], result["client_id"]
    print(f"producer-expiry: {result}")
    # The broker was paused longer than the timeout: every record produced then expired,
    # and the records before and after were delivered.
    assert result["timed_out"] >= result["produced_during_pause"] > 0, result
    assert result["failed_other"] == 0, result
    assert result["delivered"] + result["timed_out"] == result["sent"], result

    def pushed(doc: dict) -> dict | None:
        rows = [p for p in doc["producers"] if p["client_id"] == client and p["topic"] == topic]
        return rows[0] if rows and rows[0]["delivered"] == result["delivered"] else None

    row = wait_for(
        lambda: pushed(lagwatch_status(stack.run_dir)),
        120,
        "the final counts pushed",
        STATUS_EVERY_S,
    )
    assert row["expired"] == result["timed_out"], (row, result)
    assert row["failed"] == 0 and row["failed_by_reason"] == {"_MSG_TIMED_OUT": row["expired"]}
    doc = lagwatch_status(stack.run_dir)
    (expiry,) = [e for e in doc["producer_expiry"] if e["topic"] == topic]
    assert expiry["diagnosis"] == "PRODUCER_EXPIRY" and expiry["expired"] >= row["expired"]
    sentence = f"{expiry['expired']} records expired before reaching the broker"
    assert expiry["reason"].startswith(sentence)

    env = stack.django_env()
    token = _manage(env, "api_token", "create", "expiry-test", "--quiet").strip()
    web = endpoints["web"].rstrip("/")
    api = json.loads(_get(web, f"/api/v1/producers/?topic={topic}", token))
    (api_row,) = [r for r in api["producers"] if r["client_id"] == client]
    assert api_row["expired"] == row["expired"]
    assert [e["expired"] for e in api["producer_expiry"]] == [expiry["expired"]]
    metrics = _get(web, "/metrics", token)
    series = f'lagwatch_producer_records_expired_total{{client_id="{client}",cluster="lab",topic="{topic}"}}'
    assert f"{series} {float(row['expired'])}" in metrics, series
    assert f'lagwatch_topic_producer_expiry{{cluster="lab",topic="{topic}"}} 1.0' in metrics

    user = "lab"
    password = _manage(env, "demo_user", user).strip()
    opener = _logged_in(web, user, password)
    page = opener.open(f"{web}/producers/", timeout=30).read().decode()
    assert sentence in page and client in page
    groups = json.loads(_get(web, "/api/v1/groups/?name=orders-processor", token))["results"]
    group_page = opener.open(f"{web}/groups/{groups[0]['id']}/", timeout=30).read().decode()
    assert sentence in group_page and "PRODUCER_EXPIRY" in group_page


def _manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _get(web: str, path: str, token: str) -> str:
    request = urllib.request.Request(web + path, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.read().decode()


def _logged_in(web: str, user: str, password: str) -> urllib.request.OpenerDirector:
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    opener.open(f"{web}/accounts/login/", timeout=30).read()
    csrf = next(c.value for c in jar if c.name == "csrftoken")
    form = {"username": user, "password": password, "csrfmiddlewaretoken": csrf}
    request = urllib.request.Request(
        f"{web}/accounts/login/", data=urllib.parse.urlencode(form).encode(),
        headers={"Referer": f"{web}/accounts/login/"},
    )  # fmt: skip
    opener.open(request, timeout=30).read()
    return opener


def test_scenarios_show_up_in_lagwatch_status(tmp_path: Path) -> None:
    stack = Stack(tmp_path)
    try:
        endpoints = stack.up(SERVICES)
        doc = wait_for(
            lambda: (d := lagwatch_status(tmp_path)) and everyone_reported(d) and d,
            120, "every source collected with pushed statistics", STATUS_EVERY_S,
        )  # fmt: skip

        # Healthy state: owners, liveness, spout counts, ZooKeeper consumers' generation.
        processor = partitions(doc, "kafka", "orders-processor")
        assert all(p["alive"] is True and p["lag"] is not None for p in processor.values())
        legacy = group(doc, "zookeeper", "legacy-audit")
        assert legacy is not None and legacy["generation"] is not None and legacy["members"] == 1
        assert all(p["owner"] for p in partitions(doc, "zookeeper", "legacy-audit").values())
        spout = group(doc, "storm", "orders-spout")
        assert spout is not None and spout["owner"] == "orders-enricher"
        assert doc["errors"] == []

        control = endpoints["control"]
        poison = start_scenario(control, "poison-message")["details"]
        for scenario in ("dead-consumer", "rebalance-storm"):
            start_scenario(control, scenario)

        seen: dict[str, object] = {}

        def pinned_and_dead(d: dict) -> bool:
            """The spout's commit has reached the poison offset (it advances up to it first)
            and the dead group is seen Empty: the events themselves, not a clock."""
            spout = partitions(d, "storm", "orders-spout")[("orders", poison["partition"])]
            ledger = group(d, "kafka", "payments-ledger")
            # Kept for the failure message: which of the two events did not come.
            seen.update(spout=spout, ledger=ledger and ledger["state"], poison=poison)
            return (
                spout["committed"] == poison["offset"]
                and (spout["failed"] or 0) > 0
                and ledger is not None
                and ledger["state"] == "Empty"
            )

        try:
            first = wait_for(
                lambda: (d := lagwatch_status(tmp_path)) and pinned_and_dead(d) and d,
                # ~60 s on a quiet machine; red once at 120 s in a fresh-clone run (load 10-12).
                240, "the poison offset committed and the dead group seen Empty", STATUS_EVERY_S,
            )  # fmt: skip
        except AssertionError as exc:
            raise AssertionError(f"{exc}; last seen: {seen}") from exc
        poisoned = partitions(first, "storm", "orders-spout")[("orders", 0)]
        time.sleep(25)  # two more cycles
        later = lagwatch_status(tmp_path)

        # Poison message: the spout's commit is pinned while its failures keep rising.
        still = partitions(later, "storm", "orders-spout")[("orders", 0)]
        assert still["committed"] == poisoned["committed"] == poison["offset"]
        assert still["failed"] > poisoned["failed"] >= 0
        assert still["lag"] > poisoned["lag"]

        # Dead consumer: nobody owns its partitions, its lag grows.
        dead = partitions(later, "kafka", "payments-ledger")
        assert all(p["alive"] is False and p["owner"] is None for p in dead.values())
        assert sum(p["lag"] for p in dead.values()) > sum(
            p["lag"] for p in partitions(first, "kafka", "payments-ledger").values()
        )
        # Rebalance storm: membership churn recorded as events with their causes.
        causes = {r["cause"] for r in later["rebalances"] if r["group"] == "clicks-aggregator"}
        assert causes & {"member_joined", "member_left"}, later["rebalances"]
        assert any(r["group"] == "payments-ledger" for r in later["rebalances"])
        assert later["errors"] == []

        # Last, because it pauses the broker under every client of this stack: nothing is
        # asserted about the other scenarios after it.
        producer_expiry_is_shown(stack, endpoints)
    finally:
        stack.down()
