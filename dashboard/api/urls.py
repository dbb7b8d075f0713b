"""The REST API under /api/v1/ (token authentication; docs/API.md)."""

from django.urls import path, re_path

from dashboard.api.views import (
    alerts,
    clusters,
    events,
    groups,
    history,
    index,
    openapi,
    partitions,
    producers,
    reports,
    status,
)

app_name = "api"
urlpatterns = [
    path("", index.index, name="index"),
    path("openapi.json", openapi.openapi_document, name="openapi"),
    path("clusters/", clusters.cluster_list, name="clusters"),
    path("clusters/<str:name>/", clusters.cluster_detail, name="cluster"),
    path("groups/", groups.group_list, name="groups"),
    path("groups/<int:group_id>/", groups.group_detail, name="group"),
    path("groups/<int:group_id>/history/", history.group_history, name="group-history"),
    path("groups/<int:group_id>/whatif/", groups.group_whatif, name="group-whatif"),
    path("partitions/", partitions.partition_list, name="partitions"),
    path("partitions/<int:partition_id>/", partitions.partition_detail, name="partition"),
    path(
        "partitions/<int:partition_id>/history/",
        history.partition_history,
        name="partition-history",
    ),
    path("status/", status.status_list, name="status"),
    path("status/changes/", status.status_changes, name="status-changes"),
    path("rebalances/", events.rebalance_list, name="rebalances"),
    path("producers/", producers.producer_list, name="producers"),
    path("alerts/", alerts.alert_list, name="alerts"),
    path("alerts/<int:alert_id>/", alerts.alert_detail, name="alert"),
    path("alerts/<int:alert_id>/acknowledge", alerts.alert_acknowledge, name="alert-acknowledge"),
    path("alerts/<int:alert_id>/acknowledge/", alerts.alert_acknowledge),
    path("reports/", reports.report_list, name="reports"),
    path("reports/export", reports.report_export, name="report-export"),
    path("reports/<int:report_id>/", reports.report_detail, name="report"),
    path("reports/<int:report_id>/download", reports.report_download, name="report-download"),
    re_path(r"^(?P<rest>[\s\S]*)$", index.unknown),
]
