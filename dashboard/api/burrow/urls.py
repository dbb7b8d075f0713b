r"""The Burrow-compatible subset under /v3/ (open by default, SPEC §9; docs/API.md).

Group names may hold ``/`` (Kafka allows it) and even newlines, hence a pattern that takes
any character (``[\s\S]+``, unlike ``path``'s ``.+``) before the fixed ``/status`` and
``/lag`` suffixes. The consumer detail (no suffix) comes after them: a path ending in
``/status`` or ``/lag`` is that endpoint of the group before it.
"""

from django.urls import path, re_path

from dashboard.api.burrow import views as burrow_views

app_name = "burrow"
_CLUSTER = r"(?P<cluster>[^/]+)"
_GROUP = r"(?P<group>[\s\S]+)"
urlpatterns = [
    path("kafka", burrow_views.cluster_list, name="clusters"),
    path("kafka/", burrow_views.cluster_list),
    re_path(rf"^kafka/{_CLUSTER}/consumer/?$", burrow_views.consumer_list, name="consumers"),
    re_path(
        rf"^kafka/{_CLUSTER}/consumer/{_GROUP}/status$", burrow_views.consumer_status, name="status"
    ),  # fmt: skip
    re_path(rf"^kafka/{_CLUSTER}/consumer/{_GROUP}/lag$", burrow_views.consumer_lag, name="lag"),
    re_path(
        rf"^kafka/{_CLUSTER}/consumer/{_GROUP}$", burrow_views.consumer_detail, name="detail"
    ),  # fmt: skip
    re_path(r"^[\s\S]*$", burrow_views.unsupported),
]
