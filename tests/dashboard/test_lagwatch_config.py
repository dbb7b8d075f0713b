"""``lagwatch_config import/export``: idempotent, and a bad file changes nothing."""

import io
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from dashboard.monitoring.config_file import ConfigError, parse_config
from dashboard.monitoring.models import Cluster

GOOD = """\
clusters:
  - name: local
    poll_interval_s: 10
    kafka:
      bootstrap_servers: "127.0.0.1:9092"
      config: {"security.protocol": "PLAINTEXT"}
      read_consumer_offsets_topic: false
    zookeeper:
      hosts: "127.0.0.1:2181"
      storm_spout_roots: ["/kafka-spout"]
      zk_consumers: true
    storm_ui_url: null
    broker_metrics_urls: ["http://127.0.0.1:7071/metrics", "https://b2.example:7071/metrics"]
  - name: zk-only
    zookeeper:
      hosts: "zk1:2181,zk2:2181/chroot"
"""


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "clusters.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("lagwatch_config", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_import_creates_then_is_idempotent(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    assert "created: local, zk-only" in run("import", path)
    local = Cluster.objects.get(name="local")
    assert local.kafka_bootstrap_servers == "127.0.0.1:9092"
    assert local.kafka_config == {"security.protocol": "PLAINTEXT"}
    assert local.storm_spout_roots == ["/kafka-spout"]
    assert local.zk_consumers is True
    assert local.storm_ui_url == ""
    assert local.broker_metrics_urls == [
        "http://127.0.0.1:7071/metrics", "https://b2.example:7071/metrics"
    ]
    assert Cluster.objects.get(name="zk-only").broker_metrics_urls == []
    stamp = local.updated_at
    assert "unchanged: local, zk-only" in run("import", path)
    assert Cluster.objects.get(name="local").updated_at == stamp
    assert Cluster.objects.count() == 2


@pytest.mark.django_db
def test_import_updates_changed_clusters(tmp_path: Path) -> None:
    run("import", write(tmp_path, GOOD))
    assert "updated: local" in run("import", write(tmp_path, GOOD.replace("10", "30", 1)))
    assert Cluster.objects.get(name="local").poll_interval_s == 30


@pytest.mark.django_db
def test_export_round_trips(tmp_path: Path) -> None:
    run("import", write(tmp_path, GOOD))
    exported = run("export")
    assert parse_config(exported) == parse_config(GOOD)


@pytest.mark.django_db
def test_bad_file_changes_nothing(tmp_path: Path) -> None:
    run("import", write(tmp_path, GOOD))
    bad = GOOD.replace("poll_interval_s: 10", "poll_interval_s: 10\n    pol_interval: 5")
    with pytest.raises(CommandError, match=r"clusters\[0\]\.pol_interval: unknown key.*line 4"):
        run("import", write(tmp_path, bad))
    assert Cluster.objects.get(name="local").poll_interval_s == 10


@pytest.mark.django_db
def test_an_unreadable_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="cannot read"):
        run("import", str(tmp_path / "missing.yaml"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty file"),
        ("clusters: [", "not valid YAML.*line"),
        ("other: 1", "other: unknown key"),
        ("clusters: {}", "clusters: expected a list"),
        ("clusters:\n  - poll_interval_s: 5\n", r"clusters\[0\]: missing 'name' \(line 2\)"),
        ("clusters:\n  - name: 'a b'\n    zookeeper: {hosts: x}\n", r"\.name: use letters"),
        ("clusters:\n  - name: a\n", "has neither 'kafka' nor 'zookeeper'"),
        (
            "clusters:\n  - name: a\n    poll_interval_s: ten\n    zookeeper: {hosts: x}\n",
            r"poll_interval_s: expected an integer \(line 3\)",
        ),
        (
            "clusters:\n  - name: a\n    poll_interval_s: true\n    zookeeper: {hosts: x}\n",
            "poll_interval_s: expected an integer",
        ),
        (
            "clusters:\n  - name: a\n    poll_interval_s: 0\n    zookeeper: {hosts: x}\n",
            "poll_interval_s: must be between 1",
        ),
        ("clusters:\n  - name: a\n    kafka: {config: {}}\n", "kafka: missing 'bootstrap_servers'"),
        (
            "clusters:\n  - name: a\n    kafka: {bootstrap_servers: b, config: [1]}\n",
            "kafka.config: expected a mapping",
        ),
        (
            "clusters:\n  - name: a\n    zookeeper: {hosts: x, storm_spout_roots: [spouts]}\n",
            r"storm_spout_roots\[0\]: a ZooKeeper path starts with '/'",
        ),
        (
            "clusters:\n  - name: a\n    zookeeper: {hosts: x, zk_consumers: 'yes'}\n",
            "zk_consumers: expected true or false",
        ),
        (
            "clusters:\n  - name: a\n    zookeeper: {hosts: x}\n    storm_ui_url: ftp://x\n",
            "storm_ui_url: expected an http",
        ),
        (
            "clusters:\n  - name: a\n    zookeeper: {hosts: x}\n    broker_metrics_urls: http://b\n",
            r"clusters\[0\]\.broker_metrics_urls: expected a list \(line 4\)",
        ),
        (
            "clusters:\n  - name: a\n    zookeeper: {hosts: x}\n"
            "    broker_metrics_urls: [http://b:1/m, ftp://b:2/m]\n",
            r"broker_metrics_urls\[1\]: expected an http:// or https:// URL \(line 4\)",
        ),
        (
            "clusters:\n  - name: a\n    zookeeper: {hosts: x}\n    broker_metrics_urls: [7071]\n",
            r"broker_metrics_urls\[0\]: expected a non-empty string",
        ),
        (
            "clusters:\n  - name: a\n    zookeeper: {hosts: x}\n    broker_metrics_urls: ['http:///m']\n",
            r"broker_metrics_urls\[0\]: the URL names no host",
        ),
        (
            "clusters:\n  - name: a\n    zookeeper: {hosts: x}\n    broker_metrics_urls: ['http://b:99999/']\n",
            r"broker_metrics_urls\[0\]: not a valid URL",
        ),
        (
            "clusters:\n  - name: a\n    zookeeper: {hosts: x}\n    broker_metrics_urls: [http://b/, http://b/]\n",
            r"broker_metrics_urls\[1\]: listed twice",
        ),
        (
            "clusters:\n  - name: a\n    zookeeper: {hosts: x}\n    retention_risk_s: -1\n",
            r"retention_risk_s: must be between 0 and 31536000 \(line 4\)",
        ),
        (
            "clusters:\n  - name: a\n    zookeeper: {hosts: x}\n    retention_risk_s: 1h\n",
            "retention_risk_s: expected an integer",
        ),
        (
            "clusters:\n  - name: a\n    zookeeper: {hosts: x}\n  - name: a\n    zookeeper: {hosts: y}\n",
            r"clusters\[1\]\.name: duplicate cluster name \(line 4\)",
        ),
        ("clusters:\n  - name: a\n    name: b\n", "name: duplicate key"),
        # The evaluator's thresholds: the evaluate_window document's checks, the key named.
        (
            "clusters:\n  - name: a\n    zookeeper: {hosts: x}\n    evaluator: {window: 0}\n",
            r"evaluator\.window.*\(line 4\)",
        ),
        (
            "clusters:\n  - name: a\n    zookeeper: {hosts: x}\n    evaluator: {allowed_lag: -1}\n",
            r"evaluator\.allowed_lag",
        ),
        (
            "clusters:\n  - name: a\n    zookeeper: {hosts: x}\n    evaluator: {alowed_lag: 5}\n",
            "alowed_lag",
        ),
        (
            "clusters:\n  - name: a\n    zookeeper: {hosts: x}\n    evaluator: {minimum_complete: 2}\n",
            r"evaluator\.minimum_complete",
        ),
        (
            "clusters:\n  - name: a\n    zookeeper: {hosts: x}\n    evaluator: [window, 5]\n",
            "evaluator",
        ),
        (
            "clusters:\n  - name: a\n    zookeeper: {hosts: x}\n    evaluator: {window: '5'}\n",
            r"evaluator\.window",
        ),
    ],
)
def test_bad_input_names_the_key_and_line(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(text)


def test_non_ascii_and_punctuated_names_parse() -> None:
    clusters = parse_config("clusters:\n  - name: prod-eu_1.a\n    kafka: {bootstrap_servers: k}\n")
    assert clusters[0].name == "prod-eu_1.a"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("http://b/", "a list of http"),
        (["javascript:alert(1)"], r"broker_metrics_urls\[0\]: expected an http"),
        (["http://b/", "http://b/"], "listed twice"),
        (["http://b/", None], r"broker_metrics_urls\[1\]: expected a non-empty string"),
    ],
)
def test_the_admin_refuses_bad_broker_metrics_urls_naming_the_key(value, message) -> None:
    from django.core.exceptions import ValidationError

    cluster = Cluster(name="c", zk_hosts="x", broker_metrics_urls=value)
    with pytest.raises(ValidationError, match=message):
        cluster.full_clean()


@pytest.mark.django_db
def test_retention_risk_threshold_imports_exports_and_defaults(tmp_path: Path) -> None:
    text = GOOD.replace("    storm_ui_url: null\n", "    storm_ui_url: null\n    retention_risk_s: 0\n")
    run("import", write(tmp_path, text))
    assert Cluster.objects.get(name="local").retention_risk_s == 0  # off
    assert Cluster.objects.get(name="zk-only").retention_risk_s == 3600  # the default
    exported = parse_config(run("export"))
    assert {c.name: c.retention_risk_s for c in exported} == {"local": 0, "zk-only": 3600}


@pytest.mark.django_db
def test_evaluator_thresholds_per_cluster_import_export_and_reach_the_status_job(
    tmp_path: Path,
) -> None:
    """SPEC §2.4: a cluster's own thresholds, over the deployment's (LAGWATCH_EVALUATOR)."""
    from dashboard.status.runs import cluster_evaluator_configs, evaluator_config

    text = GOOD.replace(
        "    storm_ui_url: null\n",
        "    storm_ui_url: null\n    evaluator: {allowed_lag: 500, window: 20}\n",
    )
    run("import", write(tmp_path, text))
    assert Cluster.objects.get(name="local").evaluator == {"allowed_lag": 500, "window": 20}
    assert Cluster.objects.get(name="zk-only").evaluator == {}
    exported = parse_config(run("export"))
    assert {c.name: c.evaluator for c in exported} == {
        "local": {"allowed_lag": 500, "window": 20},
        "zk-only": {},
    }
    default = evaluator_config()
    configs = cluster_evaluator_configs()
    # Every cluster, with its RETENTION_RISK horizon (Cluster.retention_risk_s, default 3600);
    # the other cluster keeps the deployment's thresholds.
    assert set(configs) == {"local", "zk-only"}
    assert configs["zk-only"] == default and default.retention_risk_s == 3600
    own = configs["local"]
    assert (own.allowed_lag, own.window) == (500, 20)
    # What the cluster does not name stays the deployment's.
    assert own.minimum_complete == default.minimum_complete
    assert own.rebalance_storm_count == default.rebalance_storm_count


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"window": 0}, r"evaluator\.window"),
        ({"backpressure_share": 0}, r"evaluator\.backpressure_share"),
        ({"nonsense": 1}, "nonsense"),
        ("allowed_lag=5", "evaluator"),
    ],
)
def test_the_admin_refuses_bad_evaluator_thresholds_naming_the_key(value, message) -> None:
    from django.core.exceptions import ValidationError

    cluster = Cluster(name="c", zk_hosts="x", evaluator=value)
    with pytest.raises(ValidationError, match=message):
        cluster.full_clean()
    Cluster(name="c", zk_hosts="x", evaluator={"allowed_lag": 3}).full_clean()
