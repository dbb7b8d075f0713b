"""API tokens (SPEC §9): what scripts and scrapers present instead of a login.

Only a SHA-256 of the secret is stored: the secret is shown once, at creation, and a copy of
the database gives nobody a usable token. A plain hash is enough (no slow KDF) because the
secret is 32 random bytes, not a password a person chose: there is nothing to guess.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.db import models

if TYPE_CHECKING:
    from dashboard.accounts.roles import Action, Role


class TokenScope(models.TextChoices):
    """Each scope is a role (``dashboard.accounts.roles.SCOPE_ROLES``): read → viewer,
    operate → operator, write → admin. "read" and "write" predate roles and keep their
    meaning: a write token could already acknowledge and build reports."""

    READ = "read", "read (viewer)"
    OPERATE = "operate", "operate (operator)"
    WRITE = "write", "write (admin)"


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

    @property
    def role(self) -> Role | None:
        from dashboard.accounts.roles import role_for_scope

        return role_for_scope(self.scope) if self.active else None

    def allows(self, action: Action) -> bool:
        """May this token do ``action``? Its scope's role decides (a revoked token: nothing)."""
        from dashboard.accounts.roles import allows

        return allows(self.role, action)
