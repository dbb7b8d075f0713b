from django.urls import path

from dashboard.reports import views

app_name = "reports"
urlpatterns = [
    path("", views.index, name="index"),
    path("progress.json", views.progress, name="progress"),
    path("<int:report_id>/download/", views.download, name="download"),
]
