"""``/api/v1/ingest/<cluster>/…``: where clients push reports (docs/INGEST.md)."""

from django.urls import path

from dashboard.ingest import views

app_name = "ingest"
urlpatterns = [
    path("<str:cluster>/librdkafka", views.librdkafka, name="librdkafka"),
    path("<str:cluster>/spout", views.spout, name="spout"),
]
