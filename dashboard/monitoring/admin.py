from django.contrib import admin

from dashboard.monitoring.models import (
    BrokerPurgatory,
    Cluster,
    CollectionError,
    ServiceHeartbeat,
    SourceHealth,
    SparkJobRun,
)


@admin.register(Cluster)
class ClusterAdmin(admin.ModelAdmin):
    list_display = ("name", "enabled", "kafka_bootstrap_servers", "zk_hosts", "poll_interval_s")
    # broker_metrics_urls is edited as JSON (a list of URLs); its validator names the bad one.
    list_filter = ("enabled",)
    search_fields = ("name", "kafka_bootstrap_servers", "zk_hosts")


@admin.register(ServiceHeartbeat)
class ServiceHeartbeatAdmin(admin.ModelAdmin):
    list_display = ("name", "at")
    readonly_fields = ("name", "at")


class ReadOnlyAdmin(admin.ModelAdmin):
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
