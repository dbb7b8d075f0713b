"""BACKPRESSURE end to end in the shared lab stack (``lab_world``): the ``backpressure``
scenario slows audit-archiver's bolt behind a small ``max.spout.pending``; the spout pushes its
tuples in flight and its cap, the collector writes them to the sample log, the status job
(beat → worker, every 15 s) judges the window: every audit-spout partition WARN with
BACKPRESSURE, and no other spout shows it. The figure is then where a user looks: the group's
page (diagnosis and the in-flight chart), ``/api/v1``, ``/metrics`` and ``lagwatch_status
--json``.

The product's target is the verdict within a window plus two job periods of the fault's start
(``TARGET_S``); as in ``test_lab_verdicts`` the test prints how long it took and waits up to
three times that (``DEADLINE_S``): a figure, not a clock this test races on a loaded machine.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.lab_world import JOB_S, POLL_S, WINDOW, Browser
from tests.waiting import wait_for

pytestmark = pytest.mark.lab

TOPOLOGY = "audit-archiver"
SPOUT = "audit-spout"
CAP = 20
TARGET_S = WINDOW * POLL_S + 2 * JOB_S
DEADLINE_S = 3 * TARGET_S
OTHER_SPOUTS = ("orders-spout", "clicks-spout")


def spout_partitions(doc: dict[str, Any], group: str) -> list[dict[str, Any]]:
    return [p for p in doc["partitions"] if p["source"] == "storm" and p["group"] == group]


def codes(p: dict[str, Any]) -> list[str]:
    return [d["code"] for d in p["diagnosis"] or []]


def backpressured(doc: dict[str, Any]) -> list[dict[str, Any]] | None:
    """audit-spout's partitions when every one is WARN with BACKPRESSURE."""
    found = spout_partitions(doc, SPOUT)
    if found and all(p["status"] == "WARN" and "BACKPRESSURE" in codes(p) for p in found):
        return found
    return None


def scrape(text: str) -> dict[str, dict[tuple, float]]:
    out: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return out


def test_backpressure_fires_on_the_slow_spout_only_and_shows_everywhere(lab_world) -> None:
    others_with_it: list[str] = []

    def check(doc: dict[str, Any]) -> list[dict[str, Any]] | None:
        for group in OTHER_SPOUTS:
            for p in spout_partitions(doc, group):
                if "BACKPRESSURE" in codes(p):
                    others_with_it.append(f"{group}/{p['topic']}/{p['partition']}: {p['reason']}")
        return backpressured(doc)

    started = time.time()
    details = lab_world.start_scenario("backpressure")["details"]
    try:
        assert details["topology"] == TOPOLOGY and details["max_spout_pending"] == CAP
        seen: list[dict[str, Any]] = []

        def judged(doc: dict[str, Any]) -> list[dict[str, Any]] | None:
            seen[:] = [doc]
            return check(doc)

        try:
            pressed = lab_world.wait_for_verdict(
                judged, DEADLINE_S, "every audit-spout partition WARN with BACKPRESSURE"
            )
        except AssertionError as exc:  # say what it was instead, for the post-mortem
            last = [
                (p["partition"], p["status"], codes(p), p["reason"], p["pending"])
                for p in (spout_partitions(seen[0], SPOUT) if seen else [])
            ]
            raise AssertionError(f"{exc}; audit-spout at the last read: {last}") from None
        took = time.time() - started
        print(f"backpressure: BACKPRESSURE after {took:.0f} s (target {TARGET_S} s)", flush=True)
        (lab_world.run_dir / "backpressure_timing.json").write_text(
            json.dumps({"target_s": TARGET_S, "took_s": round(took, 1)})
        )
        for p in pressed:
            found = {d["code"]: d["evidence"] for d in p["diagnosis"]}
            assert found["BACKPRESSURE"]["max_spout_pending"] == CAP
            assert found["BACKPRESSURE"]["share_at_cap"] >= 0.8
            assert p["reason"]
        assert others_with_it == [], others_with_it

        # lagwatch_status --json: the spout's latest whole figures, at its cap.
        doc = wait_for(
            lambda: (d := lab_world.status())
            and any(s["spout_id"] == SPOUT and s["pending"] == CAP for s in d["spouts"])
            and d,
            60, "audit-spout's figures at the cap in lagwatch_status",
        )  # fmt: skip
        (figures,) = [s for s in doc["spouts"] if s["spout_id"] == SPOUT]
        assert figures["max_spout_pending"] == CAP and figures["cluster"] == "lab"
        assert figures["emitted"] and figures["acked"] and figures["complete_latency_ms"]
        topology_id = figures["topology_id"]
        others = [s for s in doc["spouts"] if s["spout_id"] in OTHER_SPOUTS]
        assert others and all(s["max_spout_pending"] == 1000 for s in others), others

        # /metrics: the same figures, labelled by cluster, topology instance and spout.
        browser = Browser(lab_world.web_url)
        key = (("cluster", "lab"), ("spout_id", SPOUT), ("topology_id", topology_id))
        metrics = wait_for(
            lambda: (m := scrape(browser.get("/metrics")[1].decode()))
            and m.get("lagwatch_spout_pending", {}).get(key) == CAP
            and m,
            60, "lagwatch_spout_pending at the cap in /metrics",
        )  # fmt: skip
        assert metrics["lagwatch_spout_max_pending"][key] == CAP
        assert metrics["lagwatch_spout_emitted_total"][key] > 0
        assert metrics["lagwatch_spout_complete_latency_ms"][key] > 0

        # /api/v1 and the group's page, with a logged-in session.
        browser.login(*lab_world.login)
        status, body, _ = browser.get(f"/api/v1/groups/?cluster=lab&source=storm&name={SPOUT}")
        assert status == 200
        (group,) = json.loads(body)["results"]
        status, body, _ = browser.get(f"/api/v1/groups/{group['id']}/")
        detail = json.loads(body)
        assert [s["max_spout_pending"] for s in detail["spouts"]] == [CAP]
        assert any("BACKPRESSURE" in codes(p) for p in detail["partition_list"])
        status, page, _ = browser.get(f"/groups/{group['id']}/")
        text = page.decode()
        assert status == 200 and "BACKPRESSURE" in text
        assert 'id="fig-spout_pending"' in text and 'id="fig-spout_rates"' in text
    finally:
        lab_world.stop_scenario("backpressure")
