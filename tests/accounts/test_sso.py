"""Single sign-on's own logic (dashboard/accounts/sso.py, dashboard/settings/people.py): the
group map read from the environment, the role a person's claims give, who a person is (the
issuer's subject, never an email address or a local account's name) and the role set at every
login. The flow against a real issuer in a browser: tests/ui/test_sso_browser.py."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured

from dashboard.accounts.access import user_role
from dashboard.accounts.models import SsoIdentity
from dashboard.accounts.roles import Role
from dashboard.accounts.sso import Backend, role_from_claims
from dashboard.settings.people import _group_roles

MAP = {"ops": "operator", "admins": "admin", "readers": "viewer"}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("", {}),
        ("ops=operator", {"ops": "operator"}),
        (" ops = operator , admins=admin,", {"ops": "operator", "admins": "admin"}),
        ("cn=ops,ou=groups=operator", None),  # a comma splits: refused below
        ("team=a=admin", {"team=a": "admin"}),  # the last "=" separates the role
    ],
)
def test_group_roles_parse(raw: str, expected: dict[str, str] | None) -> None:
    if expected is None:
        with pytest.raises(ImproperlyConfigured):
            _group_roles(raw)
    else:
        assert _group_roles(raw) == expected


@pytest.mark.parametrize("raw", ["ops", "ops=root", "=admin", "ops=Operator"])
def test_group_roles_refused(raw: str) -> None:
    with pytest.raises(ImproperlyConfigured, match="LAGWATCH_OIDC_GROUP_ROLES"):
        _group_roles(raw)


@pytest.mark.parametrize(
    ("groups", "role"),
    [
        (["ops"], Role.OPERATOR),
        (["readers", "admins"], Role.ADMIN),
        (["admins", "ops"], Role.ADMIN),
        (["readers"], Role.VIEWER),
        ([], None),
        (None, None),
        (["Ops"], None),  # names are compared exactly
        ("ops", Role.OPERATOR),  # a single group as a string
        (["unknown", "ops"], Role.OPERATOR),
    ],
)
def test_role_from_claims(settings, groups, role) -> None:  # noqa: ANN001
    settings.LAGWATCH_OIDC_GROUP_ROLES = MAP
    settings.LAGWATCH_OIDC_GROUPS_CLAIM = "roles"
    assert role_from_claims({"sub": "x", "roles": groups}) == role
    assert role_from_claims({"sub": "x", "groups": ["admins"]}) is None  # another claim


@pytest.fixture
def backend(settings) -> Backend:  # noqa: ANN001
    settings.LAGWATCH_OIDC_ISSUER = "https://id.example"
    settings.LAGWATCH_OIDC_GROUP_ROLES = MAP
    settings.LAGWATCH_OIDC_GROUPS_CLAIM = "groups"
    settings.LAGWATCH_OIDC_USERNAME_CLAIM = "preferred_username"
    settings.LAGWATCH_OIDC_REQUIRE_GROUP = False
    for name in ("AUTHORIZATION", "TOKEN", "USER", "JWKS"):
        setattr(settings, f"OIDC_OP_{name}_ENDPOINT", f"https://id.example/{name.lower()}")
    settings.OIDC_RP_CLIENT_ID, settings.OIDC_RP_CLIENT_SECRET = "lagwatch", "s"
    return Backend()


def claims(sub: str, name: str, *groups: str, email: str = "") -> dict:
    return {"sub": sub, "preferred_username": name, "groups": list(groups), "email": email}


def log_in(backend: Backend, given: dict):  # noqa: ANN201 - the user model
    """What mozilla-django-oidc does with verified claims."""
    assert backend.verify_claims(given)
    found = backend.filter_users_by_claims(given)
    return backend.update_user(found[0], given) if found else backend.create_user(given)


@pytest.mark.django_db
def test_a_person_gets_the_role_of_their_groups_at_every_login(backend: Backend) -> None:
    user = log_in(backend, claims("s-1", "ann", "ops", email="ann@example.com"))
    assert (user.username, user.email, user_role(user)) == ("ann", "ann@example.com", "operator")
    assert not user.has_usable_password()
    assert SsoIdentity.objects.get(user=user).subject == "s-1"
    again = log_in(backend, claims("s-1", "ann", "admins"))
    assert again.pk == user.pk and user_role(again) == Role.ADMIN
    dropped = log_in(backend, claims("s-1", "ann"))  # the group taken away at the issuer
    assert dropped.pk == user.pk and user_role(dropped) == Role.VIEWER


@pytest.mark.django_db
def test_a_person_is_their_subject_not_a_name_or_an_address(backend: Backend) -> None:
    local = get_user_model().objects.create_user("ann", email="ann@example.com", password="pw")
    user = log_in(backend, claims("s-1", "ann", "admins", email="ann@example.com"))
    assert user.pk != local.pk and user.username == "ann-sso"
    other = log_in(backend, claims("s-2", "ann", email="ann@example.com"))
    assert other.pk not in (local.pk, user.pk) and other.username == "ann-sso3"
    assert user_role(get_user_model().objects.get(pk=local.pk)) == Role.VIEWER  # untouched


@pytest.mark.django_db
def test_without_a_mapped_group_a_person_is_refused_when_required(
    backend: Backend, settings
) -> None:  # noqa: ANN001
    assert backend.verify_claims(claims("s-1", "ann", "unknown"))
    settings.LAGWATCH_OIDC_REQUIRE_GROUP = True
    assert not backend.verify_claims(claims("s-1", "ann", "unknown"))
    assert backend.verify_claims(claims("s-1", "ann", "readers"))
    assert not backend.verify_claims({"preferred_username": "no-subject"})
