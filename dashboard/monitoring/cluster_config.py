"""Applies a validated clusters file to the database, all or nothing."""

from dataclasses import replace
from typing import Any

from django.db import transaction

from dashboard.monitoring.config_file import ClusterConfig
from dashboard.monitoring.models import Cluster
from dashboard.secrecy import is_secret_key


def apply_config(clusters: list[ClusterConfig]) -> dict[str, list[str]]:
    """Create or update each cluster by name; clusters absent from the file are left alone.
    A secret librdkafka setting the file leaves out keeps its stored value (an export leaves
    secrets out or refers to the environment); one set to null is removed.

    Idempotent: applying the same file twice changes nothing the second time.
    """
    outcome: dict[str, list[str]] = {"created": [], "updated": [], "unchanged": []}
    with transaction.atomic():
        for given in clusters:
            cluster = Cluster.objects.filter(name=given.name).first()
            stored = dict(cluster.kafka_config or {}) if cluster is not None else {}
            config = replace(given, kafka_config=merge_secrets(stored, given.kafka_config))
            fields = config.as_fields()
            name = fields.pop("name")
            fields["storm_ui_url"] = fields["storm_ui_url"] or ""
            if cluster is None:
                Cluster(name=name, **fields).save()
                outcome["created"].append(name)
                continue
            if cluster.to_config() == config:
                outcome["unchanged"].append(name)
                continue
            for key, value in fields.items():
                setattr(cluster, key, value)
            cluster.save()
            outcome["updated"].append(name)
    return outcome


def merge_secrets(stored: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """The settings to store: ``given``, plus the stored secrets it leaves out, minus the
    secrets it sets to None."""
    kept = {k: v for k, v in stored.items() if is_secret_key(k) and k not in given}
    return {k: v for k, v in {**given, **kept}.items() if v is not None}


def current_config() -> list[ClusterConfig]:
    return [c.to_config() for c in Cluster.objects.order_by("name")]
