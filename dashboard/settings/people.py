"""Settings of how people get in: single sign-on (OIDC), login limits, the audit log's
client address and the Content-Security-Policy (docs/SECURITY.md, "People").

Kept apart from ``base.py``, which imports everything here; every value comes from the
environment. Single sign-on is on when ``LAGWATCH_OIDC_ISSUER`` is set: the issuer's
discovery document names its endpoints (fetched once per process, at the first login:
``dashboard.accounts.sso``), so a deployment sets the issuer, the client and the group map.
"""

from datetime import timedelta
from urllib.parse import urlparse

from django.core.exceptions import ImproperlyConfigured

from dashboard.env import env_bool, env_int, env_str
from dashboard.ui.plotly_csp import csp_hash, injected_style_hashes

# --- Single sign-on (mozilla-django-oidc) ------------------------------------------------------

LAGWATCH_OIDC_ISSUER = env_str("LAGWATCH_OIDC_ISSUER", "").strip().rstrip("/")
SSO_ENABLED = bool(LAGWATCH_OIDC_ISSUER)
LAGWATCH_OIDC_PROVIDER_NAME = env_str("LAGWATCH_OIDC_PROVIDER_NAME", "single sign-on")
# Which claim carries the user's groups, and which group gives which role ("group=role,…").
LAGWATCH_OIDC_GROUPS_CLAIM = env_str("LAGWATCH_OIDC_GROUPS_CLAIM", "groups")
LAGWATCH_OIDC_USERNAME_CLAIM = env_str("LAGWATCH_OIDC_USERNAME_CLAIM", "preferred_username")
# Refuse a login whose groups map to no role (otherwise such a user is a viewer, as a local
# account in no role group is).
LAGWATCH_OIDC_REQUIRE_GROUP = env_bool("LAGWATCH_OIDC_REQUIRE_GROUP", False)


def _group_roles(raw: str) -> dict[str, str]:
    roles = ("viewer", "operator", "admin")
    mapping: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in raw.split(","))):
        group, sep, role = item.rpartition("=")
        if not sep or not group.strip() or role.strip() not in roles:
            raise ImproperlyConfigured(
                f"LAGWATCH_OIDC_GROUP_ROLES: {item!r} is not group=viewer|operator|admin"
            )
        mapping[group.strip()] = role.strip()
    return mapping


LAGWATCH_OIDC_GROUP_ROLES = _group_roles(env_str("LAGWATCH_OIDC_GROUP_ROLES", ""))

OIDC_RP_CLIENT_ID = env_str("LAGWATCH_OIDC_CLIENT_ID", "")
OIDC_RP_CLIENT_SECRET = env_str("LAGWATCH_OIDC_CLIENT_SECRET", "")
OIDC_RP_SCOPES = env_str("LAGWATCH_OIDC_SCOPES", "openid email profile groups")
OIDC_RP_SIGN_ALGO = env_str("LAGWATCH_OIDC_SIGN_ALGO", "RS256")
OIDC_TIMEOUT = env_int("LAGWATCH_OIDC_TIMEOUT_S", 10)
OIDC_USE_PKCE = True
OIDC_AUTHENTICATE_CLASS = "dashboard.accounts.sso.AuthenticationRequestView"
OIDC_CALLBACK_CLASS = "dashboard.accounts.sso.AuthenticationCallbackView"
LOGIN_REDIRECT_URL_FAILURE = "/accounts/login/?sso=failed"

if SSO_ENABLED:
    if not (OIDC_RP_CLIENT_ID and OIDC_RP_CLIENT_SECRET):
        raise ImproperlyConfigured(
            "LAGWATCH_OIDC_ISSUER is set: LAGWATCH_OIDC_CLIENT_ID and "
            "LAGWATCH_OIDC_CLIENT_SECRET must be set too"
        )
    if urlparse(LAGWATCH_OIDC_ISSUER).scheme != "https" and not env_bool(
        "LAGWATCH_OIDC_ALLOW_HTTP", False
    ):
        raise ImproperlyConfigured(
            "LAGWATCH_OIDC_ISSUER must be an https:// URL (LAGWATCH_OIDC_ALLOW_HTTP=1 allows "
            "plain HTTP, for a local issuer only)"
        )

# --- Login limits (django-axes) ---------------------------------------------------------------

# django-axes's backend first: a locked-out user and address get no further with any backend.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    *(["dashboard.accounts.sso.Backend"] if SSO_ENABLED else []),
    "django.contrib.auth.backends.ModelBackend",
]
AXES_ENABLED = env_bool("LAGWATCH_LOGIN_LIMITS", True)
# Failures of one user name from one address before a lockout; how long it lasts. Per user
# and address: a password guesser is stopped, and the same person elsewhere is not.
AXES_FAILURE_LIMIT = env_int("LAGWATCH_LOGIN_FAILURE_LIMIT", 5)
LOCKOUT_MINUTES = env_int("LAGWATCH_LOGIN_LOCKOUT_MINUTES", 15)
AXES_COOLOFF_TIME = timedelta(minutes=LOCKOUT_MINUTES)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_CLIENT_IP_CALLABLE = "dashboard.accounts.clients.axes_client_address"
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False
if AXES_FAILURE_LIMIT < 1 or LOCKOUT_MINUTES < 1:
    raise ImproperlyConfigured(
        "LAGWATCH_LOGIN_FAILURE_LIMIT and LAGWATCH_LOGIN_LOCKOUT_MINUTES must be at least 1"
    )

# --- The client's address (the audit log, the login limits: dashboard/accounts/clients.py) -----

# How many proxies in front append to X-Forwarded-For; 0: the peer's address is the client's.
LAGWATCH_TRUSTED_PROXY_HOPS = env_int("LAGWATCH_TRUSTED_PROXY_HOPS", 0)
if LAGWATCH_TRUSTED_PROXY_HOPS < 0:
    raise ImproperlyConfigured("LAGWATCH_TRUSTED_PROXY_HOPS must be 0 or more")

# --- Content-Security-Policy (django-csp) -------------------------------------------------------

# Scripts only from the site's own files: no inline script, no eval (every page's script is a
# static file; its data comes in data- attributes or as JSON). Styles, without 'unsafe-inline'
# either: Plotly sets its charts' styles through the CSSOM, which a policy does not govern; it
# adds its own rules to an EMPTY <style> element it creates (insertRule) and sets some EMPTY
# style attributes, both allowed by the hash of the empty text and nothing else; the one
# stylesheet it injects with text (maplibre's) is allowed by that text's hash, read from the
# installed bundle (dashboard/ui/plotly_csp.py). data: images are the admin's icons.
# docs/SECURITY.md, "Content-Security-Policy".
EMPTY = csp_hash("")
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", EMPTY, *injected_style_hashes()],
        "style-src-attr": ["'unsafe-hashes'", EMPTY],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}
