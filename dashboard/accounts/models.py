"""Who came in through single sign-on, and the audit log of every change.

``SsoIdentity`` ties a user to the issuer and subject (``sub``) that identify them there, so
a person is found again by what the issuer guarantees unique and stable, never by a user
name or an email address a local account might share.

``AuditEntry`` is one change: who (the user, or the API token, or the command that ran), when,
what (the kind of object, which one, the action and the fields it changed, secrets masked)
and from where (the client address, ``dashboard.accounts.clients``). Entries are written by
``dashboard.accounts.audit`` only, and never changed afterwards: the admin shows them read-only.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class SsoIdentity(models.Model):
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sso_identity"
    )
    issuer = models.CharField(max_length=500)
    subject = models.CharField(max_length=255)
    last_login_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="sso_identity_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"


class AuditEntry(models.Model):
    at = models.DateTimeField(default=timezone.now, db_index=True)
    # The user who acted (kept as a name too: the entry outlives the account).
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    actor_name = models.CharField(max_length=200)
    # How: "page", "admin", "api" (a token or a session on /api/v1), "sso" (a login),
    # "command" (manage.py), "system" (anything else).
    via = models.CharField(max_length=16)
    action = models.CharField(max_length=32)
    object_type = models.CharField(max_length=40, db_index=True)
    object_id = models.CharField(max_length=64, blank=True)
    object_repr = models.CharField(max_length=300, blank=True)
    # field → [before, after], secrets masked; empty for a deletion.
    changes = models.JSONField(default=dict, blank=True)
    client_address = models.GenericIPAddressField(null=True, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor_name} {self.action} {self.object_type}"
