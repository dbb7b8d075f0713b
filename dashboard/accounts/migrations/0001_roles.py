"""The role groups viewer, operator and admin with the Django permissions of their actions
(``dashboard.accounts.roles``). Permissions are created here when missing: Django makes them
only after all migrations have run (post_migrate), and this one runs before that on a fresh
database."""

from django.db import migrations

from dashboard.accounts.roles import ROLE_ORDER, group_permissions


def _verbose(codename: str) -> str:
    verb, _, model = codename.partition("_")
    return f"Can {verb} {model}"


def create_roles(apps, schema_editor) -> None:
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    ContentType = apps.get_model("contenttypes", "ContentType")
    for role in ROLE_ORDER:
        group, _ = Group.objects.get_or_create(name=role.value)
        perms = []
        for dotted in sorted(group_permissions(role)):
            app_label, codename = dotted.split(".")
            model = codename.partition("_")[2]
            ct, _ = ContentType.objects.get_or_create(app_label=app_label, model=model)
            perm, _ = Permission.objects.get_or_create(
                content_type=ct, codename=codename, defaults={"name": _verbose(codename)}
            )
            perms.append(perm)
        group.permissions.set(perms)


def remove_roles(apps, schema_editor) -> None:
    apps.get_model("auth", "Group").objects.filter(name__in=[r.value for r in ROLE_ORDER]).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("monitoring", "0008_read_offsets_topic_by_default"),
        ("alerts", "0002_default_rule"),
        ("reports", "0001_initial"),
        ("api", "0002_token_operate_scope"),
    ]
    operations = [migrations.RunPython(create_roles, remove_roles)]
