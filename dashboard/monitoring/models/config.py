"""Monitored clusters (SPEC §2.4), editable in the admin and importable from YAML."""

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models

from dashboard.monitoring.config_file import (
    MAX_BROKER_METRICS_URLS,
    NAME_RE,
    ClusterConfig,
    evaluator_problem,
    metrics_url_problem,
)


def _validate_spout_roots(value: object) -> None:
    if not isinstance(value, list) or not all(
        isinstance(r, str) and r.startswith("/") for r in value
    ):
        raise ValidationError("a list of ZooKeeper paths, each starting with '/'")


def _validate_metrics_urls(value: object) -> None:
    if not isinstance(value, list):
        raise ValidationError("broker_metrics_urls: a list of http:// or https:// URLs")
    if len(value) > MAX_BROKER_METRICS_URLS:
        raise ValidationError(f"broker_metrics_urls: at most {MAX_BROKER_METRICS_URLS} URLs")
    for i, url in enumerate(value):
        if (problem := metrics_url_problem(url)) is not None:
            raise ValidationError(f"broker_metrics_urls[{i}]: {problem}")
    if len(set(value)) != len(value):
        raise ValidationError("broker_metrics_urls: a URL is listed twice")


def _validate_evaluator(value: object) -> None:
    if (problem := evaluator_problem(value)) is not None:
        raise ValidationError(problem)


class Cluster(models.Model):
    name = models.CharField(max_length=100, unique=True, validators=[RegexValidator(NAME_RE)])
    enabled = models.BooleanField(default=True)
    poll_interval_s = models.PositiveIntegerField(default=10, validators=[MinValueValidator(1)])
    kafka_bootstrap_servers = models.CharField(max_length=1000, blank=True)
    kafka_config = models.JSONField(
        default=dict, blank=True, help_text="Extra librdkafka settings (SASL, TLS…)."
    )
    # On by default (SPEC §2.2): commit times and classic generations come from this topic;
    # a cluster that denies reading it falls back to the AdminClient with a source warning.
    read_consumer_offsets_topic = models.BooleanField(default=True)
    zk_hosts = models.CharField("ZooKeeper hosts", max_length=1000, blank=True)
    storm_spout_roots = models.JSONField(
        default=list, blank=True, validators=[_validate_spout_roots]
    )
    zk_consumers = models.BooleanField("ZooKeeper-based consumers", default=False)
    storm_ui_url = models.URLField("Storm UI URL", blank=True, default="")
    broker_metrics_urls = models.JSONField(
        "broker metrics URLs",
        default=list,
        blank=True,
        validators=[_validate_metrics_urls],
        help_text="The brokers' Prometheus JMX exporter endpoints, e.g. "
        '["http://broker1:7071/metrics"]: delayed fetch and produce (purgatory) figures.',
    )
    # The evaluator's RETENTION_RISK threshold (spark_jobs/evaluator/retention.py).
    retention_risk_s = models.PositiveIntegerField(
        "retention risk threshold (s)",
        default=3600,
        help_text="RETENTION_RISK when retention may delete unread messages within this many "
        "seconds; 0 turns it off.",
    )
    # The evaluator's thresholds this cluster sets itself, over LAGWATCH_EVALUATOR (SPEC §2.4).
    evaluator = models.JSONField(
        "evaluator thresholds",
        default=dict,
        blank=True,
        validators=[_validate_evaluator],
        help_text='This cluster\'s own status thresholds, e.g. {"allowed_lag": 100, "window": 20}; '
        "allowed_lag, minimum_complete, window, min_distance_s, rebalance_storm_count, "
        "backpressure_share. Empty: the deployment's (LAGWATCH_EVALUATOR).",
    )
    # When the cluster's offsets history last started over (a source's identity changed:
    # rebuilt under this name, dashboard/store/identity.py); the status job reads no sample
    # before it. Null: the whole history is this cluster's.
    history_from = models.DateTimeField(null=True, blank=True, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def to_config(self) -> ClusterConfig:
        return ClusterConfig(
            name=self.name,
            poll_interval_s=self.poll_interval_s,
            kafka_bootstrap_servers=self.kafka_bootstrap_servers,
            kafka_config=dict(self.kafka_config or {}),
            read_consumer_offsets_topic=self.read_consumer_offsets_topic,
            zk_hosts=self.zk_hosts,
            storm_spout_roots=list(self.storm_spout_roots or []),
            zk_consumers=self.zk_consumers,
            storm_ui_url=self.storm_ui_url or None,
            broker_metrics_urls=list(self.broker_metrics_urls or []),
            retention_risk_s=self.retention_risk_s,
            evaluator=dict(self.evaluator or {}),
        )
