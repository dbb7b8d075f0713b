"""Users with a role, as ``manage.py lagwatch_user --role`` makes them."""

from __future__ import annotations

from django.contrib.auth import get_user_model

from dashboard.accounts.management.commands.lagwatch_user import assign_role
from dashboard.accounts.roles import Role


def user_with_role(username: str, role: Role | str | None):  # noqa: ANN201 - the user model
    """A user (no password: tests log in with ``force_login``) in ``role``'s group; None: in
    no role group (a viewer by default)."""
    user = get_user_model().objects.create_user(username)
    if role is not None:
        assign_role(user, Role(role))
    return get_user_model().objects.get(pk=user.pk)
