"""``manage.py demo_user USERNAME``: a staff login for the local demo, with a fresh password.

The lab's demo needs someone to log in as; the password is random per run and printed once,
so no fixed credential exists to leak into a real deployment.
"""

import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser


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
        self.stdout.write(password)
