from django.contrib import admin

from dashboard.monitoring.models import ServiceHeartbeat


@admin.register(ServiceHeartbeat)
class ServiceHeartbeatAdmin(admin.ModelAdmin):
    list_display = ("name", "at")
    readonly_fields = ("name", "at")
