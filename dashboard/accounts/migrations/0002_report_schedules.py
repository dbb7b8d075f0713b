"""The role groups again, now that reports have schedules: viewers read them, operators also
create, change and delete them (``dashboard.accounts.roles``); the same function as 0001, which
sets each group's permissions to what the table says."""

from importlib import import_module

from django.db import migrations

create_roles = import_module("dashboard.accounts.migrations.0001_roles").create_roles


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_roles"),
        ("reports", "0002_report_schedules"),
    ]
    operations = [migrations.RunPython(create_roles, migrations.RunPython.noop)]
