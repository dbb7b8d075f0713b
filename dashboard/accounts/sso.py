"""Single sign-on with an OpenID Connect issuer, on mozilla-django-oidc (docs/SECURITY.md).

mozilla-django-oidc runs the authorization code flow (with PKCE and a nonce), checks the ID
token's signature against the issuer's JWKS and reads the userinfo claims. What this module
adds:

- **discovery**: the endpoints come from the issuer's ``/.well-known/openid-configuration``,
  fetched once per process when first needed (not at start-up, so a process whose issuer is
  down still serves local logins and everything else);
- **who the person is**: the issuer and ``sub`` pair (``SsoIdentity``), never the email
  address (the library's default, which a local account could share); a new person gets a
  user named after ``LAGWATCH_OIDC_USERNAME_CLAIM`` (another name if a local account holds
  it), with no usable password;
- **the role**, at every login, from the groups claim through ``LAGWATCH_OIDC_GROUP_ROLES``
  (the highest mapped role): a person whose group was taken away loses the role at their next
  login; one in no mapped group is a viewer, or refused with ``LAGWATCH_OIDC_REQUIRE_GROUP``.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import requests
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import SuspiciousOperation
from django.db import transaction
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils import timezone
from django.utils.decorators import method_decorator
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import import_from_settings
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
)

from dashboard.accounts.management.commands.lagwatch_user import assign_role
from dashboard.accounts.models import SsoIdentity
from dashboard.accounts.roles import ROLE_ORDER, Role

log = logging.getLogger(__name__)

# mozilla-django-oidc's endpoint settings ← the discovery document's names
_DISCOVERED = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}


class DiscoveryError(RuntimeError):
    """The issuer's discovery document could not be had, or does not name the issuer."""


@functools.lru_cache(maxsize=4)
def discovery(issuer: str) -> dict[str, Any]:
    """The issuer's discovery document (cached for the process; a failure is not cached)."""
    url = issuer + "/.well-known/openid-configuration"
    try:
        answer = requests.get(url, timeout=settings.OIDC_TIMEOUT)
        answer.raise_for_status()
        doc = answer.json()
    except (requests.RequestException, ValueError) as exc:
        raise DiscoveryError(f"no discovery document at {url}: {exc}") from exc
    if not isinstance(doc, dict) or doc.get("issuer", "").rstrip("/") != issuer:
        raise DiscoveryError(f"{url} names another issuer")
    missing = [name for name in _DISCOVERED.values() if not doc.get(name)]
    if missing:
        raise DiscoveryError(f"{url} lacks {', '.join(missing)}")
    return doc


def oidc_setting(attr: str, *default: Any) -> Any:
    """mozilla-django-oidc's settings, the issuer's endpoints from its discovery document."""
    if attr in _DISCOVERED and not hasattr(settings, attr):
        return discovery(settings.LAGWATCH_OIDC_ISSUER)[_DISCOVERED[attr]]
    return import_from_settings(attr, *default)


def role_from_claims(claims: dict[str, Any]) -> Role | None:
    """The highest role the claims' groups map to; None when none maps."""
    groups = claims.get(settings.LAGWATCH_OIDC_GROUPS_CLAIM) or []
    if isinstance(groups, str):
        groups = [groups]
    mapped = {settings.LAGWATCH_OIDC_GROUP_ROLES.get(str(g)) for g in groups}
    found = [role for role in ROLE_ORDER if role.value in mapped]
    return found[-1] if found else None


class Backend(OIDCAuthenticationBackend):
    get_settings = staticmethod(oidc_setting)

    def verify_claims(self, claims: dict[str, Any]) -> bool:
        if not claims.get("sub"):
            return False
        if settings.LAGWATCH_OIDC_REQUIRE_GROUP and role_from_claims(claims) is None:
            log.warning("single sign-on refused: no group of the person maps to a role")
            return False
        return True

    def filter_users_by_claims(self, claims: dict[str, Any]):  # noqa: ANN201 - a QuerySet
        return self.UserModel.objects.filter(
            sso_identity__issuer=settings.LAGWATCH_OIDC_ISSUER,
            sso_identity__subject=str(claims["sub"]),
        )

    def get_username(self, claims: dict[str, Any]) -> str:
        wanted = str(claims.get(settings.LAGWATCH_OIDC_USERNAME_CLAIM) or claims["sub"])[:140]
        name, n = wanted, 1
        while self.UserModel.objects.filter(username=name).exists():
            n += 1
            name = f"{wanted}-sso{n if n > 2 else ''}"
        return name

    def create_user(self, claims: dict[str, Any]):  # noqa: ANN201 - the user model
        with transaction.atomic():
            user = self.UserModel.objects.create_user(
                self.get_username(claims), email=claims.get("email") or ""
            )
            SsoIdentity.objects.create(
                user=user, issuer=settings.LAGWATCH_OIDC_ISSUER, subject=str(claims["sub"])
            )
        return self.update_user(user, claims)

    def update_user(self, user, claims: dict[str, Any]):  # noqa: ANN001, ANN201
        """The claims' role (viewer when none maps), the name and address they give."""
        fields = {
            "email": claims.get("email") or user.email,
            "first_name": str(claims.get("given_name") or claims.get("name") or "")[:150],
            "last_name": str(claims.get("family_name") or "")[:150],
        }
        changed = [k for k, v in fields.items() if getattr(user, k) != v]
        for key in changed:
            setattr(user, key, fields[key])
        if changed:
            user.save(update_fields=changed)
        assign_role(user, role_from_claims(claims) or Role.VIEWER)
        SsoIdentity.objects.filter(user=user).update(last_login_at=timezone.now())
        return self.UserModel.objects.get(pk=user.pk)  # fresh: no cached role


@method_decorator(login_not_required, name="dispatch")
class AuthenticationRequestView(OIDCAuthenticationRequestView):
    """``/oidc/authenticate/``: to the issuer's login; back to the login page with a message
    when the issuer cannot be reached."""

    get_settings = staticmethod(oidc_setting)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._problem: str | None = None
        try:
            super().__init__(*args, **kwargs)
        except DiscoveryError as exc:
            self._problem = str(exc)

    def get(self, request: HttpRequest) -> HttpResponse:
        if self._problem is not None:
            log.error("single sign-on unavailable: %s", self._problem)
            messages.error(request, "The identity provider cannot be reached; try again later.")
            return HttpResponseRedirect(reverse("login"))
        return super().get(request)


@method_decorator(login_not_required, name="dispatch")
class AuthenticationCallbackView(OIDCAuthenticationCallbackView):
    get_settings = staticmethod(oidc_setting)

    def get(self, request: HttpRequest) -> HttpResponse:
        try:
            return super().get(request)
        except (SuspiciousOperation, DiscoveryError, requests.RequestException) as exc:
            log.warning("single sign-on failed: %s", exc)
            return self.login_failure()
