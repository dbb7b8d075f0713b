"""A database that does not answer is a 503 saying so (dashboard/errors.py), not Django's
anonymous 500: the error table, and requests whose session read fails as it does when
PostgreSQL is stopped (the lab's production run stops a real server: tests/lab/
test_production_run.py)."""

from __future__ import annotations

from html import escape

import pytest
from django.db import DatabaseError, IntegrityError, InterfaceError, OperationalError
from django.test import Client

from dashboard.accounts.roles import Role
from dashboard.errors import MESSAGE, RETRY_AFTER_S, database_unavailable
from tests.roles import user_with_role


def caused_by(outer: BaseException, cause: BaseException) -> BaseException:
    outer.__cause__ = cause
    return outer


@pytest.mark.parametrize(
    ("exc", "unavailable"),
    [
        (OperationalError("connection refused"), True),
        (OperationalError("server closed the connection unexpectedly"), True),
        (InterfaceError("connection already closed"), True),
        (IntegrityError("duplicate key"), False),
        (DatabaseError("syntax error"), False),
        (ValueError("bad input"), False),
        (KeyError("x"), False),
        (None, False),
        (caused_by(RuntimeError("render"), OperationalError("refused")), True),
        (caused_by(RuntimeError("render"), ValueError("x")), False),
        (caused_by(IntegrityError("dup"), OperationalError("refused")), False),
    ],
)
def test_which_errors_are_the_database_not_answering(exc, unavailable) -> None:
    assert database_unavailable(exc) is unavailable


@pytest.fixture
def database_down(monkeypatch: pytest.MonkeyPatch, db):
    """A logged-in client whose every session read fails as a stopped PostgreSQL's does."""
    client = Client(raise_request_exception=False)
    client.force_login(user_with_role("sre", Role.VIEWER))

    def refused(self):
        raise OperationalError('connection to server at "127.0.0.1", port 5432 failed')

    monkeypatch.setattr("django.contrib.sessions.backends.db.SessionStore.load", refused)
    return client


@pytest.mark.parametrize("path", ["/", "/groups/", "/sources/", "/alerts/"])
def test_a_page_says_the_database_does_not_answer(database_down, path) -> None:
    response = database_down.get(path)
    assert response.status_code == 503
    assert response["Retry-After"] == str(RETRY_AFTER_S)
    page = response.content.decode()
    assert "Database unavailable" in page and escape(MESSAGE) in page
    assert "5432" not in page  # the error itself is logged, not shown


@pytest.mark.parametrize("path", ["/api/v1/groups/", "/v3/kafka"])
def test_the_api_answers_json(database_down, path) -> None:
    response = database_down.get(path)
    assert response.status_code == 503
    assert response.json() == {"error": "database_unavailable", "detail": MESSAGE}


def test_other_errors_stay_500(monkeypatch, db) -> None:
    def broken(self):
        raise ValueError("a bug, not an outage")

    client = Client(raise_request_exception=False)
    client.force_login(user_with_role("sre", Role.VIEWER))
    monkeypatch.setattr("django.contrib.sessions.backends.db.SessionStore.load", broken)
    response = client.get("/groups/")
    assert response.status_code == 500
    assert "Retry-After" not in response


def test_a_token_request_says_so_too(monkeypatch, db) -> None:
    """An API client with a token (no session): the token's lookup is what fails."""

    def refused(secret):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr("dashboard.api.auth.authenticate", refused)
    client = Client(raise_request_exception=False)
    response = client.get("/api/v1/groups/", headers={"Authorization": "Bearer lw_x"})
    assert response.status_code == 503
    assert response.json()["error"] == "database_unavailable"
