"""The client address behind proxies (dashboard/accounts/clients.py), case by case."""

from __future__ import annotations

import pytest
from django.test import RequestFactory

from dashboard.accounts.clients import client_address


@pytest.mark.parametrize(
    ("hops", "remote", "forwarded", "expected"),
    [
        (0, "192.0.2.1", None, "192.0.2.1"),
        (0, "192.0.2.1", "203.0.113.9", "192.0.2.1"),  # not trusted: ignored
        (1, "10.0.0.2", "203.0.113.9", "203.0.113.9"),
        (1, "10.0.0.2", "6.6.6.6, 203.0.113.9", "203.0.113.9"),  # a forged left entry
        (2, "10.0.0.3", "6.6.6.6, 203.0.113.9, 10.0.0.2", "203.0.113.9"),
        (1, "10.0.0.2", None, "10.0.0.2"),  # not through the proxy: the peer
        (2, "10.0.0.2", "203.0.113.9", "10.0.0.2"),  # fewer entries than proxies
        (1, "10.0.0.2", "2001:db8::1", "2001:db8::1"),
        (1, "10.0.0.2", "[2001:db8::1]:443", "2001:db8::1"),
        (1, "10.0.0.2", "203.0.113.9:5123", "203.0.113.9"),
        (1, "10.0.0.2", "unknown", None),
        (0, "", None, None),
    ],
)
def test_client_address(settings, hops, remote, forwarded, expected) -> None:  # noqa: ANN001
    settings.LAGWATCH_TRUSTED_PROXY_HOPS = hops
    extra = {"REMOTE_ADDR": remote}
    if forwarded is not None:
        extra["HTTP_X_FORWARDED_FOR"] = forwarded
    assert client_address(RequestFactory().get("/", **extra)) == expected
