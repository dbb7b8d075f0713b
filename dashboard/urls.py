"""URL map: login everywhere (middleware) except the views marked login_not_required
(the health check, ``/metrics`` and ``/v3``; the token-authenticated API and ingest)."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from dashboard.monitoring import views as monitoring_views

urlpatterns = [
    path("health/", monitoring_views.health, name="health"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/v1/ingest/", include("dashboard.ingest.urls")),
    path("api/v1/", include("dashboard.api.urls")),
    path("v3/", include("dashboard.api.burrow.urls")),
    path("metrics", include("dashboard.api.metrics.urls")),
    path("alerts/", include("dashboard.alerts.urls")),
    path("reports/", include("dashboard.reports.urls")),
    path("", include("dashboard.ui.urls")),
]
