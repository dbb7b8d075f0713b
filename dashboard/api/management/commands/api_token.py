"""``manage.py api_token create NAME [--scope read|operate|write | --write]`` / ``list`` /
``revoke NAME``. A scope is a role: read → viewer, operate → operator, write → admin.

``create`` prints the secret once, alone on its line (``--quiet``: only the secret), so a
script can capture it; it is not stored and cannot be shown again. Bad input exits with 2.
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.api.models import ApiToken, TokenScope
from dashboard.api.serializers import iso
from dashboard.api.tokens import TokenError, create_token, revoke_token


class Command(BaseCommand):
    help = "Create, list or revoke API tokens (docs/API.md)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create a token and print its secret once")
        create.add_argument("name")
        create.add_argument(
            "--scope",
            choices=TokenScope.values,
            default=None,
            help="read (viewer, the default), operate (operator), write (admin)",
        )
        create.add_argument("--write", action="store_true", help="the same as --scope write")
        create.add_argument("--quiet", action="store_true", help="print only the secret")
        listing = sub.add_parser("list", help="list tokens (never their secrets)")
        listing.add_argument("--json", action="store_true")
        revoke = sub.add_parser("revoke", help="revoke a token by name")
        revoke.add_argument("name")

    def handle(self, *args, **options) -> None:
        try:
            getattr(self, f"_{options['action']}")(options)
        except TokenError as exc:
            raise CommandError(f"api_token: {exc}", returncode=2) from exc

    def _create(self, options: dict) -> None:
        if options["write"] and options["scope"] not in (None, TokenScope.WRITE):
            raise TokenError("give --write or --scope, not both")
        scope = TokenScope.WRITE if options["write"] else options["scope"] or TokenScope.READ
        token, secret = create_token(options["name"], scope)
        if options["quiet"]:
            self.stdout.write(secret)
            return
        self.stdout.write(f"created {scope} token {token.name!r}; its secret (shown once):")
        self.stdout.write(secret)

    def _list(self, options: dict) -> None:
        rows = [
            {
                "name": t.name,
                "scope": t.scope,
                "prefix": t.prefix,
                "created_at": iso(t.created_at),
                "last_used_at": iso(t.last_used_at),
                "revoked_at": iso(t.revoked_at),
            }  # fmt: skip
            for t in ApiToken.objects.order_by("name")
        ]
        if options["json"]:
            self.stdout.write(json.dumps(rows, indent=2))
            return
        for r in rows:
            state = f"revoked {r['revoked_at']}" if r["revoked_at"] else "active"
            used = r["last_used_at"] or "never"
            self.stdout.write(
                f"{r['name']!r}  {r['scope']}  {r['prefix']}…  {state}  last used {used}"
            )

    def _revoke(self, options: dict) -> None:
        token = revoke_token(options["name"])
        self.stdout.write(f"revoked token {token.name!r} at {iso(token.revoked_at)}")
