from django.contrib import admin

from dashboard.monitoring.models import Cluster, ServiceHeartbeat


@admin.register(Cluster)
class ClusterAdmin(admin.ModelAdmin):
    list_display = ("name", "enabled", "kafka_bootstrap_servers", "zk_hosts", "poll_interval_s")
    list_filter = ("enabled",)
    search_fields = ("name", "kafka_bootstrap_servers", "zk_hosts")


@admin.register(ServiceHeartbeat)
class ServiceHeartbeatAdmin(admin.ModelAdmin):
    list_display = ("name", "at")
    readonly_fields = ("name", "at")
