"""Clusters and the pipeline's records in the Django admin; permissions follow the roles
(RoleAdmin). A cluster's secret librdkafka settings are never rendered: the form shows
``********`` in their place and keeps the stored value when the mask comes back unchanged."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from dashboard.accounts.access import RoleAdmin
from dashboard.accounts.roles import Action
from dashboard.monitoring.models import (
    BrokerPurgatory,
    Cluster,
    CollectionError,
    ServiceHeartbeat,
    SourceHealth,
    SparkJobRun,
)
from dashboard.secrecy import MASK, is_secret_key, mask_config


class MaskedConfigField(forms.JSONField):
    """The librdkafka settings as JSON with every secret value shown as ``********``, on the
    first display and on a form sent back with errors alike (a secret just typed included:
    retype it after fixing the error)."""

    def prepare_value(self, value: Any) -> str:
        if isinstance(value, dict):
            value = mask_config(value)
        return super().prepare_value(value)


class ClusterAdminForm(forms.ModelForm):
    kafka_config = MaskedConfigField(
        required=False,
        help_text=f"Extra librdkafka settings (SASL, TLS…). Secret values show as {MASK}; "
        "leave one so to keep it, type a new value to change it, remove the key to drop it.",
    )

    class Meta:
        model = Cluster
        fields = [f.name for f in Cluster._meta.fields if f.editable and not f.primary_key]

    def clean_kafka_config(self) -> dict:
        config = self.cleaned_data.get("kafka_config") or {}
        if not isinstance(config, dict):
            raise forms.ValidationError("A JSON object of librdkafka settings.")
        stored = (self.instance.kafka_config or {}) if self.instance.pk else {}
        kept = dict(config)
        for key, value in config.items():
            if value == MASK and is_secret_key(key):
                if key not in stored:
                    raise forms.ValidationError(f"{key}: give a value ({MASK} keeps a stored one)")
                kept[key] = stored[key]
        return kept


@admin.register(Cluster)
class ClusterAdmin(RoleAdmin):
    change_action = Action.EDIT_CLUSTERS
    form = ClusterAdminForm
    list_display = ("name", "enabled", "kafka_bootstrap_servers", "zk_hosts", "poll_interval_s")
    # broker_metrics_urls is edited as JSON (a list of URLs); its validator names the bad one.
    list_filter = ("enabled",)
    search_fields = ("name", "kafka_bootstrap_servers", "zk_hosts")

    @admin.display(description="Kafka config")
    def masked_kafka_config(self, obj: Cluster) -> str:
        return json.dumps(mask_config(obj.kafka_config), indent=1, sort_keys=True)

    def get_fields(self, request: HttpRequest, obj: Cluster | None = None) -> list[str]:
        """Read-only (a viewer, an operator): every value is printed, so the settings are
        shown masked instead."""
        fields = list(super().get_fields(request, obj))
        if obj is not None and not self.has_change_permission(request, obj):
            fields = ["masked_kafka_config" if f == "kafka_config" else f for f in fields]
        return fields

    def get_readonly_fields(self, request: HttpRequest, obj: Cluster | None = None) -> tuple:
        if obj is not None and not self.has_change_permission(request, obj):
            return ("masked_kafka_config",)
        return ()


@admin.register(ServiceHeartbeat)
class ServiceHeartbeatAdmin(RoleAdmin):
    list_display = ("name", "at")
    readonly_fields = ("name", "at")


class ReadOnlyAdmin(RoleAdmin):
    """Records the pipeline writes: visible to operators, never edited by hand."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(SourceHealth)
class SourceHealthAdmin(ReadOnlyAdmin):
    list_display = ("cluster", "source", "reachable", "last_success_at", "last_error_at",
                    "last_duration_s", "consecutive_failures")  # fmt: skip
    list_filter = ("reachable", "source")


@admin.register(BrokerPurgatory)
class BrokerPurgatoryAdmin(ReadOnlyAdmin):
    list_display = ("cluster", "broker", "fetch_purgatory", "produce_purgatory",
                    "fetch_expires_per_s", "as_of", "error")  # fmt: skip
    list_filter = ("cluster",)


@admin.register(CollectionError)
class CollectionErrorAdmin(ReadOnlyAdmin):
    list_display = ("cluster", "source", "where", "error", "at")
    list_filter = ("source",)
    search_fields = ("where", "error")


@admin.register(SparkJobRun)
class SparkJobRunAdmin(ReadOnlyAdmin):
    list_display = ("job", "started_at", "duration_s", "input_rows", "output_rows", "outcome")
    list_filter = ("job", "outcome")
