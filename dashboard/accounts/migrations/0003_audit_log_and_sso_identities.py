"""The audit log (``AuditEntry``) and the single sign-on identities (``SsoIdentity``); the
admin role's group gains the audit log's view permission (the function of 0001)."""

from importlib import import_module

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

create_roles = import_module("dashboard.accounts.migrations.0001_roles").create_roles


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0002_report_schedules"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="AuditEntry",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("at", models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
                ("actor_name", models.CharField(max_length=200)),
                ("via", models.CharField(max_length=16)),
                ("action", models.CharField(max_length=32)),
                ("object_type", models.CharField(db_index=True, max_length=40)),
                ("object_id", models.CharField(blank=True, max_length=64)),
                ("object_repr", models.CharField(blank=True, max_length=300)),
                ("changes", models.JSONField(blank=True, default=dict)),
                ("client_address", models.GenericIPAddressField(blank=True, null=True)),
                (
                    "actor",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "verbose_name_plural": "audit entries",
                "ordering": ["-at", "-id"],
            },
        ),
        migrations.CreateModel(
            name="SsoIdentity",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("issuer", models.CharField(max_length=500)),
                ("subject", models.CharField(max_length=255)),
                ("last_login_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "user",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="sso_identity",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("issuer", "subject"), name="sso_identity_unique"
                    )
                ],
            },
        ),
        migrations.RunPython(create_roles, migrations.RunPython.noop),
    ]
