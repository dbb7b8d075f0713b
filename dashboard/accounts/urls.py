from django.urls import path

from dashboard.accounts import views

app_name = "accounts"
urlpatterns = [path("", views.audit_log, name="audit")]
