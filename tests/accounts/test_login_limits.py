"""Login attempts limited (django-axes, dashboard/settings/people.py): after
LAGWATCH_LOGIN_FAILURE_LIMIT failures of one user name from one address, that pair is locked
out with a page saying so, even with the right password; another user from the same address,
or the same user from another address, is not; a success before the limit starts the count
again; an admin lifts a lock with manage.py axes_reset_username."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

pytestmark = pytest.mark.django_db
PASSWORD = "right-pass-4-limits"
LIMIT = 3


@pytest.fixture(autouse=True)
def _limits(settings) -> None:  # noqa: ANN001
    settings.AXES_FAILURE_LIMIT = LIMIT
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    for name in ("ann", "bob"):
        get_user_model().objects.create_user(name, password=PASSWORD)


def attempt(user: str, password: str, address: str = "192.0.2.10"):  # noqa: ANN201
    return Client(REMOTE_ADDR=address).post(
        "/accounts/login/", {"username": user, "password": password}
    )


def test_locked_out_after_the_limit_with_a_clear_page() -> None:
    for _ in range(LIMIT - 1):
        answer = attempt("ann", "wrong")
        assert answer.status_code == 200 and "didn" in answer.content.decode()
    locked = attempt("ann", "wrong")
    assert locked.status_code == 429
    text = locked.content.decode()
    assert "Too many failed logins" in text and f"failed to log in {LIMIT} times" in text
    # The right password does not get past the lock.
    assert attempt("ann", PASSWORD).status_code == 429
    # Another user from the same address, the same user from another address: not locked.
    assert attempt("bob", PASSWORD).status_code == 302
    assert attempt("ann", PASSWORD, address="198.51.100.3").status_code == 302
    call_command("axes_reset_username", "ann")
    assert attempt("ann", PASSWORD).status_code == 302


def test_a_success_before_the_limit_starts_the_count_again() -> None:
    for _ in range(LIMIT - 1):
        attempt("ann", "wrong")
    assert attempt("ann", PASSWORD).status_code == 302
    for _ in range(LIMIT - 1):
        assert attempt("ann", "wrong").status_code == 200
    assert attempt("ann", PASSWORD).status_code == 302


def test_behind_a_proxy_the_forwarded_address_is_counted(settings) -> None:  # noqa: ANN001
    settings.LAGWATCH_TRUSTED_PROXY_HOPS = 1

    def via_proxy(client_ip: str, password: str):  # noqa: ANN202
        return Client(REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR=client_ip).post(
            "/accounts/login/", {"username": "ann", "password": password}
        )

    for _ in range(LIMIT):
        via_proxy("203.0.113.5", "wrong")
    assert via_proxy("203.0.113.5", PASSWORD).status_code == 429
    assert via_proxy("203.0.113.6", PASSWORD).status_code == 302  # not the proxy's lock
