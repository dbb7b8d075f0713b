"""``manage.py lagwatch_user --role viewer|operator|admin NAME [--create]``: give a user a role.

The role is the Django group of that name (the user leaves the other role groups); ``--show``
prints the role only. A new user (``--create``) gets a random password, printed once; they
are staff so the admin shows them what their role may read or change. A superuser is an admin
whatever their groups say, so giving one a lower role is refused rather than silently ignored.
"""

from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from dashboard.accounts.access import user_role
from dashboard.accounts.roles import ROLE_ORDER, Role


def assign_role(user, role: Role) -> None:  # noqa: ANN001 - the project's user model
    """``user`` in the ``role`` group and no other role group; staff, so the admin opens."""
    with transaction.atomic():
        groups = {g.name: g for g in Group.objects.filter(name__in=[r.value for r in ROLE_ORDER])}
        missing = [r.value for r in ROLE_ORDER if r.value not in groups]
        if missing:
            raise CommandError(f"role groups missing ({', '.join(missing)}): run migrate")
        user.groups.remove(*[g for name, g in groups.items() if name != role.value])
        user.groups.add(groups[role.value])
        if not user.is_staff:
            user.is_staff = True
            user.save(update_fields=["is_staff"])


class Command(BaseCommand):
    help = "Give a user a role: viewer, operator or admin (docs/DASHBOARD.md, Roles)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--role", choices=[r.value for r in ROLE_ORDER])
        parser.add_argument("--create", action="store_true", help="create the user if missing")
        parser.add_argument("--show", action="store_true", help="print the user's role")

    def handle(self, *args, username: str, role: str | None, create: bool, show: bool,
               **options) -> None:  # fmt: skip
        model = get_user_model()
        user = model.objects.filter(username=username).first()
        password = None
        if user is None:
            if not create:
                raise CommandError(f"no user named {username!r} (add --create)", returncode=2)
            if role is None:
                raise CommandError("a new user needs --role", returncode=2)
            password = secrets.token_urlsafe(12)
            user = model.objects.create_user(username, password=password)
        if role is not None:
            if user.is_superuser and role != Role.ADMIN:
                raise CommandError(
                    f"{username} is a superuser, an admin whatever the groups; "
                    "take superuser away first (the admin's user page)",
                    returncode=2,
                )
            assign_role(user, Role(role))
            user = model.objects.get(pk=user.pk)
        elif not show:
            raise CommandError("give --role ROLE or --show", returncode=2)
        self.stdout.write(f"{username}: {user_role(user)}")
        if password is not None:
            self.stdout.write(password)
