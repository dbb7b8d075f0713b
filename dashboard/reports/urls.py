from django.urls import path

from dashboard.reports import schedule_views, views

app_name = "reports"
urlpatterns = [
    path("", views.index, name="index"),
    path("progress.json", views.progress, name="progress"),
    path("<int:report_id>/download/", views.download, name="download"),
    path("schedules/", schedule_views.schedules, name="schedules"),
    path("schedules/new/", schedule_views.schedule_edit, name="schedule_new"),
    path("schedules/<int:schedule_id>/", schedule_views.schedule_detail, name="schedule_detail"),
    path("schedules/<int:schedule_id>/edit/", schedule_views.schedule_edit, name="schedule_edit"),
    path(
        "schedules/<int:schedule_id>/delete/",
        schedule_views.schedule_delete,
        name="schedule_delete",
    ),
]
