"""``manage.py demo_user USERNAME``: an admin login for the local demo, with a fresh password
(a superuser, in the ``admin`` role group too so the admin's user list says so).

The lab's demo needs someone to log in as; the password is random per run and printed once,
so no fixed credential exists to leak into a real deployment.
"""

import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser

from dashboard.accounts.management.commands.lagwatch_user import assign_role
from dashboard.accounts.roles import Role


class Command(BaseCommand):
    help = "Create or reset a staff user for the local demo and print its new password."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username", nargs="?", default="demo")

    def handle(self, *args, username: str, **options) -> None:
        password = secrets.token_urlsafe(12)
        user, _ = get_user_model().objects.get_or_create(username=username)
        user.is_staff = user.is_superuser = True
        user.set_password(password)
        user.save()
        assign_role(user, Role.ADMIN)
        self.stdout.write(password)
