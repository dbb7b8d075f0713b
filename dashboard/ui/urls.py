"""The dashboard's pages. Groups and partitions are addressed by their primary keys: names
from monitored systems may hold any character, and a number survives every reload."""

from django.urls import path

from dashboard.ui.views.cluster import cluster
from dashboard.ui.views.group import group
from dashboard.ui.views.groups import groups
from dashboard.ui.views.health import jobs, sources
from dashboard.ui.views.overview import overview
from dashboard.ui.views.partition import partition
from dashboard.ui.views.producers import producers

app_name = "ui"
urlpatterns = [
    path("", overview, name="overview"),
    path("clusters/<str:name>/", cluster, name="cluster"),
    path("groups/", groups, name="groups"),
    path("groups/<int:pk>/", group, name="group"),
    path("partitions/<int:pk>/", partition, name="partition"),
    path("sources/", sources, name="sources"),
    path("jobs/", jobs, name="jobs"),
    path("producers/", producers, name="producers"),
]
