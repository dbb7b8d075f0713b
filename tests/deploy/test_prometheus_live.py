"""deploy/grafana/ and deploy/prometheus/ against a real Prometheus scraping a real /metrics.

The API tests' world (tests/api/world.py: a STALL partition, a source down, a failed status
run, a PRODUCER_EXPIRY topic, a Storm spout...) with what the dashboards also show (a stored
cycle, trends, retention forecasts, a rollups run) is served by Django's live server; Debian's
Prometheus scrapes it with the shipped example configuration and rules. Then every query of
every dashboard (its variables set to the world's cluster, group and spout) must return series,
every variable must offer values, every recording rule must record, and exactly the alerts the
world's faults call for must be active, their texts rendered. A query that parses but names a
label Prometheus stores under another name (``job`` becomes ``exported_job`` at the scrape)
returns nothing, and fails here, which no reading of the JSON would catch.

No lab stack: Prometheus and the live server start in a few seconds.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.deploy import grafana
from tests.deploy.prometheus_server import RULES, Prometheus, PrometheusError, running_prometheus
from tests.deploy.world import dashboard_world
from tests.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)  # the live server reads what it commits

# The dashboards' variables, set as a user looking at the world's faults would set them.
VALUES = {
    "cluster": "prod",
    "source": "kafka",
    "group": "billing",
    "topology": "orders-topo-1-1700000000",
    "spout": "orders-spout",
    "__rate_interval": "1m",
}
# (alert, its identifying labels) the world's faults make active (pending: the rules' `for`
# has not passed in a test of seconds), and no other.
EXPECTED_ALERTS = {
    ("LagwatchPartitionsStuck", (("cluster", "prod"), ("group", "billing"), ("source", "kafka"),
                                 ("status", "STALL"))),  # invoices/1
    ("LagwatchSourceDown", (("cluster", "prod"), ("source", "zookeeper"))),
    ("LagwatchSparkStatusJobFailing", (("exported_job", "status"),)),  # its last run failed
    ("LagwatchRetentionRisk", (("cluster", "prod"), ("group", "billing"), ("source", "kafka"))),
    ("LagwatchProducerExpiry", (("cluster", "prod"), ("topic", "invoices"))),
}  # fmt: skip
IDENTIFYING = {"cluster", "source", "group", "status", "topic", "exported_job", "process"}


@pytest.fixture
def prometheus(live_server, tmp_path: Path):
    dashboard_world()
    target = live_server.url.removeprefix("http://")
    with running_prometheus(tmp_path, target) as server:
        yield server


def returns_series(prometheus: Prometheus, expr: str) -> str | None:
    """None if ``expr`` returns at least one series, else why not."""
    try:
        return None if prometheus.query(expr) else "no series"
    except PrometheusError as exc:
        return str(exc)


def test_dashboards_and_rules_on_a_real_prometheus(prometheus: Prometheus) -> None:
    failures = []
    # Every panel's query, its variables set.
    for path in grafana.DASHBOARDS:
        for query in grafana.queries(path):
            expr = grafana.substitute(query.expr, VALUES)
            if why := returns_series(prometheus, expr):
                failures.append(f"{query}\n    as sent: {expr}\n    -> {why}")
    # Every variable offers values, among them the one the queries above were given.
    for path in grafana.DASHBOARDS:
        for query in grafana.variable_queries(path):
            found = grafana.LABEL_VALUES.match(query.expr)
            assert found, f"{query}: not label_values(selector, label)"
            selector = found["selector"] and grafana.substitute(found["selector"], VALUES)
            values = prometheus.label_values(found["label"], selector)
            name = query.panel.removeprefix("variable ")
            if VALUES.get(name) not in values:
                failures.append(f"{query}\n    -> {values}, not {VALUES.get(name)!r}")

    # Every recording rule records, once the rules have been evaluated after the scrapes.
    records = [
        rule["record"]
        for group in yaml.safe_load(RULES.read_text())["groups"]
        for rule in group["rules"]
        if "record" in rule
    ]
    try:
        wait_for(lambda: all(prometheus.query(r) for r in records), timeout=20,
                 what="every recording rule recorded")  # fmt: skip
    except AssertionError:
        failures += [f"recording rule {r}: no series" for r in records if not prometheus.query(r)]

    # Exactly the alerts the world's faults call for, with their texts rendered.
    def active() -> set[tuple[str, tuple]]:
        return {
            (a["labels"]["alertname"],
             tuple(sorted((k, v) for k, v in a["labels"].items() if k in IDENTIFYING)))
            for a in prometheus.get("/api/v1/alerts")["alerts"]
        }  # fmt: skip

    try:
        wait_for(lambda: active() == EXPECTED_ALERTS, timeout=20, what="the world's alerts")
    except AssertionError:
        failures.append(
            f"alerts: missing {EXPECTED_ALERTS - active()}, unexpected {active() - EXPECTED_ALERTS}"
        )
    for alert in prometheus.get("/api/v1/alerts")["alerts"]:
        for key, text in alert["annotations"].items():
            if "error expanding template" in text or "<no value>" in text:
                failures.append(f"{alert['labels']['alertname']} {key}: {text}")

    assert not failures, "\n".join(failures)
