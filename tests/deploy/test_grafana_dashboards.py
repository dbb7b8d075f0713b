"""deploy/grafana/'s dashboards and deploy/prometheus/'s rules, read without Prometheus.

The dashboards import into any Grafana with any Prometheus data source (each asks for one), link
to each other by uid, define every variable their queries use, and every ``lagwatch_*`` series
they and the rules read is one ``/metrics`` serves. That last check is the one the promtool unit
tests cannot make: their input series are written by hand, so a misspelt series name in a rule
would be misspelt the same way there and pass. Whether each query returns series from a real
Prometheus is tests/deploy/test_prometheus_live.py's.
"""

from __future__ import annotations

import re

import pytest
import yaml
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from tests.deploy import grafana
from tests.deploy.prometheus_server import RULES
from tests.deploy.test_prometheus_live import VALUES
from tests.deploy.world import dashboard_world

SERIES = re.compile(r"(?<![\w:])lagwatch_\w+")  # not a recorded name's middle
RECORDED = re.compile(r"\b\w+:lagwatch_\w+:\w+")
GRAFANA_BUILTINS = {"__rate_interval", "__interval", "__range", "__url_time_range", "__data"}


def boards() -> list[tuple[str, dict]]:
    return [(path.name, grafana.load(path)) for path in grafana.DASHBOARDS]


def test_three_dashboards_with_their_own_uids() -> None:
    uids = {name: board["uid"] for name, board in boards()}
    assert set(uids) == {"lagwatch-overview.json", "lagwatch-group.json",
                         "lagwatch-storm-spouts.json"}  # fmt: skip
    assert len(set(uids.values())) == len(uids)
    for name, board in boards():
        assert board["title"].startswith("Lagwatch / "), name
        assert "lagwatch" in board["tags"], name


def test_every_panel_asks_for_the_data_source_variable() -> None:
    """No data source uid of the machine they were made on: an import picks its own."""
    for name, board in boards():
        variables = {v["name"]: v for v in board["templating"]["list"]}
        assert variables["datasource"]["type"] == "datasource"
        assert variables["datasource"]["query"] == "prometheus"
        for panel in grafana.panels(board):
            if panel["type"] == "row":
                continue
            assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, name
            assert panel["description"], f"{name} / {panel['title']}: say what it shows"
            for target in panel["targets"]:
                assert target["datasource"]["uid"] == "${datasource}", name


def test_every_variable_a_query_uses_is_defined_and_given_a_value_in_the_live_test() -> None:
    for name, board in boards():
        defined = {v["name"] for v in board["templating"]["list"]}
        path = grafana.ROOT / "deploy" / "grafana" / name
        for query in [*grafana.queries(path), *grafana.variable_queries(path)]:
            used = grafana.used_variables(query.expr) - GRAFANA_BUILTINS
            assert used <= defined, f"{query}: {used - defined} undefined"
            assert used <= set(VALUES), f"{query}: the live test gives no value to {used}"


def test_links_open_dashboards_that_exist() -> None:
    uids = {board["uid"] for _, board in boards()}
    for name, board in boards():
        for panel in grafana.panels(board):
            for link in panel.get("fieldConfig", {}).get("defaults", {}).get("links", []):
                uid = re.match(r"/d/([\w-]+)", link["url"])
                assert uid and uid[1] in uids, f"{name} / {panel['title']}: {link['url']}"


@pytest.mark.django_db
def test_every_series_read_is_one_metrics_serves(client: Client) -> None:
    dashboard_world()
    served = set()
    for family in text_string_to_metric_families(client.get("/metrics").content.decode()):
        served |= {sample.name for sample in family.samples}
    rules = yaml.safe_load(RULES.read_text())["groups"]
    recorded = {rule["record"] for group in rules for rule in group["rules"] if "record" in rule}
    read: dict[str, str] = {}
    for path in grafana.DASHBOARDS:
        for query in [*grafana.queries(path), *grafana.variable_queries(path)]:
            read |= {name: str(query) for name in SERIES.findall(query.expr)}
    for group in rules:
        for rule in group["rules"]:
            where = f"rule {rule.get('record') or rule.get('alert')}"
            read |= {name: where for name in SERIES.findall(rule["expr"])}
            for name in RECORDED.findall(rule["expr"]):
                assert name in recorded, f"{where} reads {name}, which no rule records"
    unknown = {name: where for name, where in read.items() if name not in served}
    assert not unknown, unknown
