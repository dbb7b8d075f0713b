"""Broker purgatory end to end in the shared lab stack (``lab_world``): the lab broker runs
with the real Prometheus JMX exporter agent, the lab cluster names its endpoint
(``broker_metrics_urls`` in the generated clusters.yaml), and the real collector scrapes it
each cycle.

The ``fetch-purgatory`` scenario parks the fetches of 10 consumers (``fetch.min.bytes``
1 MiB, ``fetch.wait.max.ms`` 30 s) on the quiet topic: the fetch purgatory must rise by at
least 8 over the lowest figure before the scenario and above the highest one, on the cluster
page, in ``/api/v1/clusters/lab/``, in ``/metrics`` and in ``lagwatch_status --json``; their
expirations show as a rate; after the scenario stops it goes back to the range it was in (each
parked fetch expires within 30 s of its client closing). Seen on a loaded machine: 16-19
before, 26 with the 10 consumers.

The baseline is not 0 in the shared stack: the workload's other consumers (about 20 clients)
park their own fetches for up to their ``fetch.wait.max.ms`` (500 ms by default) whenever
their partitions have nothing new, so the broker read 14-21 delayed fetches at any moment
before the scenario when this test was written. The test reads the baseline over a few
cycles first, and uses more waiting consumers than the baseline's spread, so that the figure
it waits for cannot be reached without them.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.waiting import wait_for

pytestmark = pytest.mark.lab

CONSUMERS = 10
POLL_S = 5  # tests/lab_world.py
# A parked fetch lives up to 30 s; a cycle comes every 5 s; waits allow for a loaded machine.
PARKED_TIMEOUT_S = 180
DRAINED_TIMEOUT_S = 180


def _broker(doc: dict[str, Any]) -> dict[str, Any] | None:
    rows = [b for b in doc.get("brokers", []) if b["cluster"] == "lab"]
    return rows[0] if len(rows) == 1 else None


def _metrics_fetch(web_url: str) -> float | None:
    text = requests.get(f"{web_url}/metrics", timeout=30).text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if (sample.name == "lagwatch_broker_purgatory_size"
                    and sample.labels.get("cluster") == "lab"
                    and sample.labels.get("operation") == "fetch"):  # fmt: skip
                return sample.value
    return None


def _page_fetch(session: requests.Session, web_url: str) -> int | None:
    page = session.get(f"{web_url}/clusters/lab/", timeout=30)
    assert page.status_code == 200, page.status_code
    match = re.search(r'data-figure="fetch_purgatory">([\d,]+)<', page.text)
    return int(match.group(1).replace(",", "")) if match else None


def _logged_in(web_url: str, login: tuple[str, str]) -> requests.Session:
    session = requests.Session()
    session.get(f"{web_url}/accounts/login/", timeout=30)
    done = session.post(
        f"{web_url}/accounts/login/",
        data={"username": login[0], "password": login[1],
              "csrfmiddlewaretoken": session.cookies["csrftoken"]},
        headers={"Referer": f"{web_url}/accounts/login/"}, timeout=30,
    )  # fmt: skip
    assert done.status_code == 200 and "/accounts/login/" not in done.url, done.url
    return session


def test_fetch_purgatory_shows_on_the_page_the_api_and_metrics(lab_world) -> None:
    web = lab_world.web_url
    token = lab_world.manage("api_token", "create", "purgatory-test", "--quiet").stdout.strip()
    api = requests.Session()
    api.headers["Authorization"] = f"Bearer {token}"
    page = _logged_in(web, lab_world.login)

    # The broker's endpoint is scraped before the scenario: an answered scrape, no error.
    # The baseline: what the other clients park, over 4 scrapes.
    seen: dict[str, int] = {}

    def baseline(doc: dict[str, Any]) -> bool:
        b = _broker(doc)
        if b and b["as_of"] and not b["error"] and b["fetch_purgatory"] is not None:
            assert b["url"].startswith("http://127.0.0.1:") and b["url"].endswith("/metrics")
            seen[b["as_of"]] = b["fetch_purgatory"]
        return len(seen) >= 4

    lab_world.wait_until(baseline, 180, "4 scrapes of the lab broker's metrics endpoint")
    low, high = min(seen.values()), max(seen.values())
    print(f"fetch purgatory before the scenario: {sorted(seen.items())}")
    # Above everything seen before, and up by nearly CONSUMERS over the lowest (2 of slack:
    # a fetch between its expiry and the next one, or a quieter moment of the others').
    wanted = max(low + CONSUMERS - 2, high + 2)

    started = lab_world.start_scenario("fetch-purgatory", consumers=CONSUMERS)
    try:
        assert started["details"]["consumers"] == CONSUMERS
        parked = lab_world.wait_until(
            lambda d: (b := _broker(d)) and (b["fetch_purgatory"] or 0) >= wanted and b,
            PARKED_TIMEOUT_S, f"lagwatch_status: fetch purgatory >= {wanted}",
        )  # fmt: skip
        print(f"fetch purgatory during the scenario: {parked['fetch_purgatory']}")
        assert parked["error"] is None
        wait_for(
            lambda: (_page_fetch(page, web) or 0) >= wanted,
            PARKED_TIMEOUT_S, "the cluster page's fetch purgatory", every=3.0,
        )  # fmt: skip
        wait_for(
            lambda: (
                (b := api.get(f"{web}/api/v1/clusters/lab/", timeout=30).json()["brokers"])
                and (b[0]["fetch_purgatory"] or 0) >= wanted
            ),
            PARKED_TIMEOUT_S, "/api/v1/clusters/lab/ brokers[0].fetch_purgatory", every=3.0,
        )  # fmt: skip
        wait_for(
            lambda: (_metrics_fetch(web) or 0) >= wanted,
            PARKED_TIMEOUT_S, "/metrics lagwatch_broker_purgatory_size{operation=fetch}",
            every=3.0,
        )  # fmt: skip
        # The parked fetches expire every 30 s and are replaced: a rate between two scrapes.
        lab_world.wait_until(
            lambda d: (b := _broker(d)) and (b["fetch_expirations_per_s"] or 0) > 0,
            PARKED_TIMEOUT_S, "fetch expirations per second > 0",
        )  # fmt: skip
    finally:
        lab_world.stop_scenario("fetch-purgatory")

    lab_world.wait_until(
        lambda d: (b := _broker(d)) and b["fetch_purgatory"] is not None
        and b["fetch_purgatory"] <= high and not b["error"],
        DRAINED_TIMEOUT_S, f"fetch purgatory back to the baseline (<= {high}) after the stop",
    )  # fmt: skip
    wait_for(lambda: (_metrics_fetch(web) or 0) <= high, DRAINED_TIMEOUT_S,
             f"/metrics back to the baseline (<= {high})", every=3.0)  # fmt: skip
