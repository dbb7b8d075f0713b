from django.urls import path

from dashboard.alerts import views

app_name = "alerts"
urlpatterns = [
    path("", views.index, name="index"),
    path("<int:alert_id>/", views.detail, name="detail"),
    path("<int:alert_id>/acknowledge/", views.acknowledge, name="acknowledge"),
    path("<int:alert_id>/silence/", views.silence, name="silence"),
    path("rules/", views.rules, name="rules"),
    path("rules/new/", views.rule_edit, name="rule_new"),
    path("rules/<int:rule_id>/", views.rule_edit, name="rule_edit"),
    path("rules/<int:rule_id>/delete/", views.rule_delete, name="rule_delete"),
    path("channels/", views.channels, name="channels"),
    path("channels/new/", views.channel_edit, name="channel_new"),
    path("channels/<int:channel_id>/", views.channel_edit, name="channel_edit"),
    path("channels/<int:channel_id>/delete/", views.channel_delete, name="channel_delete"),
    path("channels/<int:channel_id>/test/", views.channel_test, name="channel_test"),
    path("silences/", views.silences, name="silences"),
    path("silences/<int:silence_id>/end/", views.silence_end, name="silence_end"),
]
