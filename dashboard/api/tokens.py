"""Creating, checking and revoking API tokens: the one place that knows how secrets look."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from dashboard.api.models import ApiToken, TokenScope

PREFIX = "lw_"
# How stale ``last_used_at`` may get: one write a minute per token, not one per request,
# so a scraper hitting the API every second does not contend with the collectors for SQLite.
LAST_USED_RESOLUTION = timedelta(seconds=60)


class TokenError(ValueError):
    """A token cannot be created or changed as asked (name taken, unknown token)."""


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def new_secret() -> str:
    return PREFIX + secrets.token_urlsafe(32)


def set_new_secret(token: ApiToken) -> str:
    """Give ``token`` a fresh secret (hash and display prefix); returns the secret."""
    secret = new_secret()
    token.prefix = secret[: len(PREFIX) + 6]
    token.secret_hash = hash_secret(secret)
    return secret


def create_token(
    name: str, scope: str = TokenScope.READ, created_by: AbstractBaseUser | None = None
) -> tuple[ApiToken, str]:
    """A new token and its secret; the secret is not kept anywhere, show it to the user now."""
    name = name.strip()
    if not name:
        raise TokenError("a token needs a name")
    if len(name) > ApiToken._meta.get_field("name").max_length:
        raise TokenError("a token name has at most 100 characters")
    if scope not in TokenScope.values:
        raise TokenError(f"scope must be one of {', '.join(TokenScope.values)}, not {scope!r}")
    token = ApiToken(name=name, scope=scope, created_by=created_by)
    secret = set_new_secret(token)
    try:
        with transaction.atomic():
            token.save()
    except IntegrityError as exc:
        raise TokenError(f"a token named {name!r} already exists") from exc
    return token, secret


def authenticate(secret: str) -> ApiToken | None:
    """The active token with this secret, or None (unknown or revoked)."""
    if not secret or len(secret) > 200:
        return None
    token = ApiToken.objects.filter(secret_hash=hash_secret(secret)).first()
    if token is None or not token.active:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        # Conditional, so concurrent requests of one token write once.
        stale = Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_RESOLUTION)
        ApiToken.objects.filter(stale, pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token


def revoke_token(name: str) -> ApiToken:
    token = ApiToken.objects.filter(name=name).first()
    if token is None:
        raise TokenError(f"no token named {name!r}")
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token
