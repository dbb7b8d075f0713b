"""The role table, every role × every action, against the table the issue states (written out
here, not read from the code), and how users and token scopes get their roles."""

from __future__ import annotations

import pytest

from dashboard.accounts.roles import (
    ROLE_ACTIONS,
    SCOPE_ROLES,
    Action,
    Role,
    allows,
    role_for_scope,
    role_from_groups,
    scopes_for,
)

VW, OP, AD = Role.VIEWER, Role.OPERATOR, Role.ADMIN
# Issue 15: viewer reads everything; operator acknowledges, silences, builds reports; admin
# also changes rules, channels, clusters, tokens, users (and anything else).
EXPECTED: dict[Action, set[Role]] = {
    Action.VIEW: {VW, OP, AD},
    Action.ACKNOWLEDGE: {OP, AD},
    Action.SILENCE: {OP, AD},
    Action.BUILD_REPORT: {OP, AD},
    Action.EDIT_RULES: {AD},
    Action.EDIT_CHANNELS: {AD},
    Action.EDIT_CLUSTERS: {AD},
    Action.MANAGE_TOKENS: {AD},
    Action.MANAGE_USERS: {AD},
    Action.CHANGE: {AD},
}


def test_every_action_is_in_the_expected_table() -> None:
    assert set(EXPECTED) == set(Action)


@pytest.mark.parametrize("role", list(Role))
@pytest.mark.parametrize("action", list(Action))
def test_role_action_table(role: Role, action: Action) -> None:
    assert allows(role, action) is (role in EXPECTED[action])


@pytest.mark.parametrize("action", list(Action))
def test_no_role_may_do_nothing(action: Action) -> None:
    assert allows(None, action) is False


def test_each_role_includes_the_one_below() -> None:
    assert ROLE_ACTIONS[VW] < ROLE_ACTIONS[OP] < ROLE_ACTIONS[AD]


@pytest.mark.parametrize(
    ("groups", "superuser", "authenticated", "expected"),
    [
        ([], False, False, None),  # anonymous
        ([], False, True, VW),  # logged in, in no role group: reads only
        (["viewer"], False, True, VW),
        (["operator"], False, True, OP),
        (["admin"], False, True, AD),
        (["viewer", "admin"], False, True, AD),  # the highest wins
        (["operator", "viewer", "unrelated"], False, True, OP),
        ([], True, True, AD),  # a superuser is an admin
        (["viewer"], True, True, AD),
    ],
)
def test_role_from_groups(groups, superuser, authenticated, expected) -> None:
    role = role_from_groups(groups, is_superuser=superuser, authenticated=authenticated)
    assert role == expected


@pytest.mark.parametrize(
    ("scope", "role"), [("read", VW), ("operate", OP), ("write", AD), ("admin", None), ("", None)]
)
def test_token_scopes_map_to_roles(scope: str, role: Role | None) -> None:
    assert role_for_scope(scope) == role


def test_scope_names_are_the_token_model_choices() -> None:
    from dashboard.api.models import TokenScope

    assert set(SCOPE_ROLES) == set(TokenScope.values)


def test_scopes_that_allow_an_action() -> None:
    assert scopes_for(Action.VIEW) == ["read", "operate", "write"]
    assert scopes_for(Action.ACKNOWLEDGE) == ["operate", "write"]
    assert scopes_for(Action.EDIT_RULES) == ["write"]


@pytest.mark.django_db
def test_migration_made_the_groups_with_the_permissions_of_their_actions() -> None:
    from django.contrib.auth.models import Group

    from dashboard.accounts.roles import group_permissions

    for role in Role:
        group = Group.objects.get(name=role.value)
        held = {f"{p.content_type.app_label}.{p.codename}" for p in group.permissions.all()}
        assert held == group_permissions(role)
    viewer = {p.codename for p in Group.objects.get(name="viewer").permissions.all()}
    assert "view_cluster" in viewer and "change_rule" not in viewer
    assert "change_user" not in viewer and "view_apitoken" not in viewer


@pytest.mark.django_db
def test_group_permissions_are_what_has_perm_answers() -> None:
    from tests.roles import user_with_role

    operator = user_with_role("op", OP)
    assert operator.has_perm("alerts.add_silence") and operator.has_perm("alerts.view_rule")
    assert not operator.has_perm("alerts.change_rule")
    admin = user_with_role("ad", AD)
    assert admin.has_perm("monitoring.change_cluster") and admin.has_perm("auth.add_user")
