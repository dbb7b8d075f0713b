"""URL map: login everywhere (middleware) except the views marked login_not_required
(the health check, ``/metrics`` and ``/v3``; the token-authenticated API and ingest; the
single sign-on views, when it is on)."""

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from dashboard.monitoring import views as monitoring_views

urlpatterns = [
    path("health/", monitoring_views.health, name="health"),
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(
            extra_context={"sso_name": settings.LAGWATCH_OIDC_PROVIDER_NAME}
            if settings.SSO_ENABLED
            else {}
        ),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("audit/", include("dashboard.accounts.urls")),
    path("api/v1/ingest/", include("dashboard.ingest.urls")),
    path("api/v1/", include("dashboard.api.urls")),
    path("v3/", include("dashboard.api.burrow.urls")),
    path("metrics", include("dashboard.api.metrics.urls")),
    path("alerts/", include("dashboard.alerts.urls")),
    path("reports/", include("dashboard.reports.urls")),
    path("", include("dashboard.ui.urls")),
]
# A database that does not answer is a 503 saying so, not an anonymous 500 (dashboard/errors.py).
handler500 = "dashboard.errors.server_error_or_unavailable"

if settings.SSO_ENABLED:  # /oidc/authenticate/ and /oidc/callback/ (dashboard/accounts/sso.py)
    urlpatterns.insert(3, path("oidc/", include("mozilla_django_oidc.urls")))
