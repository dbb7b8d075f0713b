"""Applies a validated clusters file to the database, all or nothing."""

from django.db import transaction

from dashboard.monitoring.config_file import ClusterConfig
from dashboard.monitoring.models import Cluster


def apply_config(clusters: list[ClusterConfig]) -> dict[str, list[str]]:
    """Create or update each cluster by name; clusters absent from the file are left alone.

    Idempotent: applying the same file twice changes nothing the second time.
    """
    outcome: dict[str, list[str]] = {"created": [], "updated": [], "unchanged": []}
    with transaction.atomic():
        for config in clusters:
            fields = config.as_fields()
            name = fields.pop("name")
            fields["storm_ui_url"] = fields["storm_ui_url"] or ""
            cluster = Cluster.objects.filter(name=name).first()
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


def current_config() -> list[ClusterConfig]:
    return [c.to_config() for c in Cluster.objects.order_by("name")]
