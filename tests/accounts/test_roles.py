"""The role table, every role × every action, against the table docs/DASHBOARD.md states
("Roles"; written out here, not read from the code), and how users and token scopes get their
roles."""

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
# docs/DASHBOARD.md, "Roles": viewer reads everything; operator acknowledges, silences,
# builds reports; admin also changes rules, channels, clusters, tokens, users (and anything
# else).
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
    Action.VIEW_AUDIT: {AD},
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


# --- giving roles: manage.py lagwatch_user, demo_user ------------------------------------------


@pytest.mark.django_db
def test_lagwatch_user_gives_one_role() -> None:
    import io

    from django.contrib.auth import get_user_model
    from django.core.management import CommandError, call_command

    from dashboard.accounts.access import user_role

    out = io.StringIO()
    call_command("lagwatch_user", "--create", "--role", "viewer", "kim", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0] == "kim: viewer" and len(lines[1]) >= 12  # the new password, once
    call_command("lagwatch_user", "--role", "operator", "kim", stdout=io.StringIO())
    kim = get_user_model().objects.get(username="kim")
    assert sorted(kim.groups.values_list("name", flat=True)) == ["operator"] and kim.is_staff
    assert user_role(kim) == OP
    with pytest.raises(CommandError, match="no user named 'nobody'"):
        call_command("lagwatch_user", "--role", "admin", "nobody")
    get_user_model().objects.create_superuser("root", "r@example.com")
    with pytest.raises(CommandError, match="superuser"):
        call_command("lagwatch_user", "--role", "viewer", "root")


@pytest.mark.django_db
def test_demo_user_is_an_admin() -> None:
    import io

    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from dashboard.accounts.access import user_role

    call_command("demo_user", "demo", stdout=io.StringIO())
    demo = get_user_model().objects.get(username="demo")
    assert user_role(demo) == AD and demo.groups.filter(name="admin").exists()


@pytest.mark.django_db
def test_class_based_views_adopt_the_check_with_the_mixin(rf) -> None:
    from django.http import HttpResponse
    from django.views import View

    from dashboard.accounts.access import UNSAFE, RoleRequiredMixin
    from tests.roles import user_with_role

    class Silencer(RoleRequiredMixin, View):
        required_action = Action.SILENCE
        required_methods = UNSAFE

        def get(self, request):  # noqa: ANN001, ANN202
            return HttpResponse("list")

        def post(self, request):  # noqa: ANN001, ANN202
            return HttpResponse("done")

    view = Silencer.as_view()
    viewer, operator = user_with_role("v", VW), user_with_role("o", OP)
    for user, get_code, post_code in ((viewer, 200, 403), (operator, 200, 200)):
        get, post = rf.get("/x"), rf.post("/x")
        get.user = post.user = user
        assert (view(get).status_code, view(post).status_code) == (get_code, post_code)
