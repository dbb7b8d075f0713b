"""API tokens (SPEC §9): what scripts and scrapers present instead of a login.

Only a SHA-256 of the secret is stored: the secret is shown once, at creation, and a copy of
the database gives nobody a usable token. A plain hash is enough (no slow KDF) because the
secret is 32 random bytes, not a password a person chose: there is nothing to guess.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class TokenScope(models.TextChoices):
    READ = "read", "read"
    WRITE = "write", "read and write"


class ApiToken(models.Model):
    name = models.CharField(max_length=100, unique=True)
    # The secret's first characters, shown in lists so a user can tell tokens apart.
    prefix = models.CharField(max_length=16, editable=False)
    secret_hash = models.CharField(max_length=64, unique=True, editable=False)
    scope = models.CharField(max_length=8, choices=TokenScope.choices, default=TokenScope.READ)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.name} ({self.scope}, {self.prefix}…)"

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    def allows(self, scope: str) -> bool:
        """A write token may also read; a read token only reads."""
        return self.active and (scope == TokenScope.READ or self.scope == TokenScope.WRITE)
