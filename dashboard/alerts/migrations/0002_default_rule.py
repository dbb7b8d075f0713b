"""The default rule (SPEC §7): any STALL, STOP or ERR lasting two evaluations. Editable."""

from django.db import migrations


def create_default_rule(apps, schema_editor):
    Rule = apps.get_model("alerts", "Rule")
    Rule.objects.get_or_create(
        name="Stuck partition (default)",
        defaults={
            "statuses": ["STALL", "STOP", "ERR"],
            "diagnoses": [],
            "level": "partition",
            "min_evaluations": 2,
            "min_duration_s": 0,
            "severity": "warning",
        },
    )


def remove_default_rule(apps, schema_editor):
    apps.get_model("alerts", "Rule").objects.filter(name="Stuck partition (default)").delete()


class Migration(migrations.Migration):
    dependencies = [("alerts", "0001_initial")]
    operations = [migrations.RunPython(create_default_rule, remove_default_rule)]
