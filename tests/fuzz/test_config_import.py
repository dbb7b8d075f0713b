"""Fuzzed YAML imports: ``manage.py lagwatch_config import`` (clusters, SPEC §2.4) and
``manage.py alerts_config import`` (channels, rules, silences; docs/ALERTS.md).

Properties: a valid file is applied and exports back to the same configuration; a bad one is a
``CommandError`` naming what is wrong, and the database is exactly as it was; whatever is
accepted satisfies the models' own constraints (lengths, choices), which PostgreSQL enforces
even where SQLite does not. Never another exception.
"""

from __future__ import annotations

import io
import json
from typing import Any
from unittest import mock

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db.models import JSONField, Model
from hypothesis import assume, given
from hypothesis import strategies as st

from dashboard.alerts import config_file as alerts_config_file
from dashboard.alerts.models import Channel, Rule, Silence
from dashboard.monitoring.cluster_config import current_config
from dashboard.monitoring.config_file import parse_config
from dashboard.monitoring.models import Cluster
from tests.fuzz import strategies as fs

pytestmark = pytest.mark.django_db

# YAML that a hand-edited or hostile file may hold: tags of other types and of Python
# objects, aliases, merge keys, complex keys, documents, control characters.
YAML_SNIPPETS = [
    "", "---", "--- []\n--- []", "clusters:", "clusters: []", "clusters: {}", "{[a]: 1}",
    "? [a, b]\n: 1", "clusters: [{name: !!binary aGVsbG8=, kafka: {bootstrap_servers: x}}]",
    "clusters: [{name: a, kafka: {bootstrap_servers: x, config: {x: !!binary aGk=}}}]",
    "clusters: [{name: a, kafka: {bootstrap_servers: x, config: {x: 2001-01-01}}}]",
    "clusters: [{name: a, kafka: {bootstrap_servers: x, config: {x: [1, {y: 2}]}}}]",
    "clusters: [{name: a, kafka: {bootstrap_servers: x, config: {x: .nan}}}]",
    "clusters: [{name: a, kafka: {bootstrap_servers: !!python/object:object {}}}]",
    "clusters: [{name: a, kafka: {bootstrap_servers: !foo x}}]",
    "clusters: [{name: a, kafka: {bootstrap_servers: \"\\ud800\"}}]",
    "clusters: [{name: a, zookeeper: {hosts: h, storm_spout_roots: [\"/a\\ud800\"]}}]",
    "clusters: [{name: a, storm_ui_url: \"http://x/\\ud800\", zookeeper: {hosts: h}}]",
    "clusters: [{name: a, broker_metrics_urls: [\"http://x/\\ud800\"], zookeeper: {hosts: h}}]",
    "clusters: [{name: a, broker_metrics_urls: [[a]], zookeeper: {hosts: h}}]",
    "clusters: [{name: a, broker_metrics_urls: {a: 1}, zookeeper: {hosts: h}}]",
    "clusters: [&a {name: a, zookeeper: {hosts: h}}, *a]", "a: &x [*x]",
    "clusters: [{<<: {name: a}, zookeeper: {hosts: h}}]", "clusters: !!set {a, b}",
    "channels: [{name: [a], kind: webhook, url: 'http://x.example/'}]",
    "rules: [{name: r, statuses: [STALL], channels: [{a: 1}]}]",
    "rules: [{name: r, statuses: [STALL], channels: [[a]]}]",
    "rules: [{name: r, statuses: STALL}]", "silences: [{hours: .nan}]",
    "silences: [{hours: 1, created_by: " + "x" * 300 + "}]",
    "silences: [{until: 9999-12-31T23:59:59+14:00}]", "silences: [{rule: [x], hours: 1}]",
    "channels: [{name: \"\\ud800\", kind: email, recipients: [a@b.com]}]",
]  # fmt: skip
yaml_text = st.sampled_from(YAML_SNIPPETS) | st.text(max_size=80)


def to_yaml(doc: Any) -> str:
    try:
        return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
    except (yaml.YAMLError, UnicodeEncodeError):
        assume(False)  # no YAML for it: nothing to import
        raise


def run_import(command: str, text: str) -> str | None:
    """``manage.py <command> import -`` with ``text`` on stdin; None when it was applied, else
    the CommandError's message."""
    with mock.patch("sys.stdin", io.StringIO(text)):
        try:
            call_command(command, "import", "-", stdout=io.StringIO())
        except CommandError as exc:
            return str(exc)
    return None


# --- clusters ----------------------------------------------------------------------------------


def _clusters_snapshot() -> list[dict]:
    return list(Cluster.objects.order_by("pk").values())


def check_columns(row: Model) -> None:
    """What PostgreSQL would refuse where SQLite stores it: a string longer than its column,
    a JSON value that is not strict JSON (NaN, infinities)."""
    for field in row._meta.concrete_fields:
        value = getattr(row, field.attname)
        name = f"{type(row).__name__}.{field.name}"
        if isinstance(value, str) and field.max_length is not None:
            assert len(value) <= field.max_length, f"{name}: {len(value)} > {field.max_length}"
        if isinstance(field, JSONField):
            json.dumps(value, allow_nan=False)


def _check_cluster_models() -> None:
    for cluster in Cluster.objects.all():
        check_columns(cluster)


def check_clusters_import(text: str) -> str:
    """Import ``text``; "accepted", or "refused: <the message>"."""
    before = _clusters_snapshot()
    error = run_import("lagwatch_config", text)
    if error is not None:
        assert error.endswith("; nothing was changed") and error.split(":")[0], error
        error.encode("utf-8")  # printable
        assert _clusters_snapshot() == before, "a refused import changed the clusters"
        return f"refused: {error}"
    _check_cluster_models()
    exported = io.StringIO()
    call_command("lagwatch_config", "export", stdout=exported)
    assert parse_config(exported.getvalue()) == current_config()
    return "accepted"


@given(fs.cluster_files())
def test_valid_clusters_file_is_applied_and_exports_back(doc: dict) -> None:
    if Cluster.objects.count() > 20:  # each check exports every cluster: keep it bounded
        Cluster.objects.all().delete()
    text = to_yaml(doc)
    assert check_clusters_import(text) == "accepted"
    stored = {c.name: c for c in current_config()}
    for config in parse_config(text):
        assert stored[config.name] == config
    assert check_clusters_import(text) == "accepted"  # idempotent


@given(fs.spoiled(fs.cluster_files()) | fs.edge_numbered(fs.cluster_files()) | fs.json_values)
def test_spoiled_clusters_file_is_refused_and_changes_nothing(doc: Any) -> None:
    check_clusters_import(to_yaml(doc))


@given(yaml_text)
def test_clusters_yaml_text_is_refused_or_applied(text: str) -> None:
    check_clusters_import(text)


# --- alerts ------------------------------------------------------------------------------------


def _alerts_snapshot() -> tuple:
    return (
        list(Channel.objects.order_by("pk").values()),
        list(Rule.objects.order_by("pk").values()),
        sorted(Rule.channels.through.objects.values_list("rule_id", "channel_id")),
        list(Silence.objects.order_by("pk").values()),
    )


def _check_alert_models() -> None:
    for model in (Channel, Rule, Silence):
        for row in model.objects.all():
            check_columns(row)


def check_alerts_import(text: str) -> str:
    """Import ``text``; "accepted", or "refused: <the message>"."""
    before = _alerts_snapshot()
    error = run_import("alerts_config", text)
    if error is not None:
        assert error.endswith("; nothing was changed"), error
        error.encode("utf-8")  # printable
        assert _alerts_snapshot() == before, "a refused import changed the alerts configuration"
        return f"refused: {error}"
    _check_alert_models()
    return "accepted"


@given(fs.alerts_files())
def test_valid_alerts_file_is_applied(doc: dict) -> None:
    silences = Silence.objects.count()
    assert check_alerts_import(to_yaml(doc)) == "accepted"
    exported = alerts_config_file.export()
    channels = {c["name"]: c for c in exported["channels"]}
    for channel in doc["channels"]:
        assert channels[channel["name"]]["kind"] == channel["kind"]
    rules = {r["name"]: r for r in exported["rules"]}
    for rule in doc["rules"]:
        assert sorted(rules[rule["name"]]["statuses"]) == sorted(rule["statuses"])
        assert sorted(rules[rule["name"]]["channels"]) == sorted(rule.get("channels") or [])
    assert Silence.objects.count() == silences + len(doc["silences"])


@given(fs.spoiled(fs.alerts_files()) | fs.edge_numbered(fs.alerts_files()) | fs.json_values)
def test_spoiled_alerts_file_is_refused_and_changes_nothing(doc: Any) -> None:
    check_alerts_import(to_yaml(doc))


# Found by the fuzzing: a channel whose kind is a list or a mapping crashed the import
# (TypeError: unhashable) before the channel's own check could name the field.
@pytest.mark.parametrize("kind", [[], ["webhook"], {"a": 1}, 7, None])
def test_a_channel_kind_of_the_wrong_type_is_refused(kind: Any) -> None:
    doc = {"channels": [{"name": "0", "kind": kind, "url": "http://a.example/"}]}
    outcome = check_alerts_import(to_yaml(doc))
    assert outcome.startswith("refused: ") and "kind" in outcome, outcome


@given(yaml_text)
def test_alerts_yaml_text_is_refused_or_applied(text: str) -> None:
    check_alerts_import(text)


@pytest.mark.parametrize("text", YAML_SNIPPETS)
def test_known_hostile_snippets(text: str) -> None:
    """Each of the snippets, every time (the properties above draw from them)."""
    check_clusters_import(text)
    check_alerts_import(text)


# Found by the fuzzing (each was a traceback, or a row PostgreSQL would refuse); fixed in
# dashboard/monitoring/config_file.py and dashboard/alerts/config_file.py.
_KAFKA = "clusters: [{name: a, kafka: {bootstrap_servers: x, config: {x: %s}}}]"
FOUND = [
    ("lagwatch_config", "{[a]: 1}", "file: a key must be a name"),
    ("lagwatch_config", _KAFKA % "!!binary aGk=", "clusters[0].kafka.config.x: a librdkafka"),
    ("lagwatch_config", _KAFKA % "2001-01-01", "clusters[0].kafka.config.x: a librdkafka"),
    ("lagwatch_config", _KAFKA % ".nan", "clusters[0].kafka.config.x: a librdkafka"),
    ("lagwatch_config", "clusters: [{name: a, kafka: {bootstrap_servers: !foo x}}]",
     "clusters[0].kafka.bootstrap_servers: unsupported value"),
    ("lagwatch_config", 'clusters: [{name: a, kafka: {bootstrap_servers: "\\ud800"}}]',
     "clusters[0].kafka.bootstrap_servers: not valid Unicode"),
    ("lagwatch_config", "clusters: [{name: a, zookeeper: {hosts: " + "h" * 1001 + "}}]",
     "clusters[0].zookeeper.hosts: at most 1000 characters"),
    ("lagwatch_config", "clusters: [{name: a, zookeeper: {hosts: h}, storm_ui_url: http://"
     + "u" * 200 + "}]", "clusters[0].storm_ui_url: at most 200 characters"),
    ("alerts_config", "rules: [{name: r, statuses: [STALL], channels: [{a: 1}]}]",
     "rules[0] (r): channels: a list of channel names expected"),
    ("alerts_config", 'channels: [{name: "\\ud800", kind: email, recipients: [a@b.com]}]',
     "channels[0].name: not valid Unicode"),
    ("alerts_config", "silences: [{hours: 1, created_by: " + "x" * 151 + "}]",
     "silences[0]: created_by: at most 150 characters"),
    ("alerts_config", "{1: [], x: []}", "unknown section(s): 1, x"),
    ("alerts_config", "silences: [{hours: 1" + "0" * 400 + "}]", "silences[0]: hours:"),
    ("alerts_config", "silences: [{hours: .nan}]", "silences[0]: hours:"),
]  # fmt: skip


@pytest.mark.parametrize(("command", "text", "message"), FOUND)
def test_found_by_fuzzing_is_refused_naming_the_key(command: str, text: str, message: str) -> None:
    error = run_import(command, text)
    assert error is not None and message in error, error
