"""Login on every page and live endpoint; the health check stays open."""

import pytest
from django.test import Client
from django.urls import reverse

from tests.ui import world

pytestmark = pytest.mark.django_db


def _urls() -> list[str]:
    c = world.cluster()
    g = world.group(c, "billing")
    (p,) = world.partitions(g, 1)
    pages = [
        reverse("ui:overview"), reverse("ui:groups"), reverse("ui:group", args=[g.pk]),
        reverse("ui:partition", args=[p.pk]), reverse("ui:sources"), reverse("ui:jobs"),
    ]  # fmt: skip
    return [u + extra for u in pages for extra in ("", "?live=1", "?live=charts")]


def test_every_page_and_live_endpoint_redirects_anonymous_users_to_login(client: Client) -> None:
    for url in _urls():
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("login")), url


def test_every_page_answers_a_logged_in_user(web: Client) -> None:
    for url in _urls():
        response = web.get(url)
        assert response.status_code == 200, url
        if "live=" in url:
            assert response["Content-Type"] == "application/json", url


def test_health_stays_open(client: Client) -> None:
    assert client.get(reverse("health")).status_code == 200


def test_login_lands_on_the_overview(client: Client, user) -> None:
    response = client.post(
        reverse("login"), {"username": "sre", "password": "s3cret-pass-123"}, follow=True
    )
    assert response.redirect_chain[-1][0] == reverse("ui:overview")
    assert b"Groups by status" in response.content


def test_nav_links_every_section_and_admin_only_for_staff(web: Client, user) -> None:
    body = web.get(reverse("ui:overview")).content.decode()
    for url in (reverse("ui:groups"), reverse("alerts:index"), reverse("reports:index"),
                reverse("ui:sources"), reverse("ui:jobs")):  # fmt: skip
        assert f'href="{url}"' in body
    assert 'href="/admin/"' not in body
    user.is_staff = True
    user.save()
    assert 'href="/admin/"' in web.get(reverse("ui:overview")).content.decode()


def test_page_views_refuse_post(web: Client) -> None:
    assert web.post(reverse("ui:groups")).status_code == 405


def test_an_unknown_live_mode_is_a_400_naming_the_field(web: Client) -> None:
    response = web.get(reverse("ui:overview") + "?live=sometimes")
    assert response.status_code == 400
    assert b"'live'" in response.content
