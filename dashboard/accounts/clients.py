"""The address a request came from, as the audit log and the login limits see it.

Behind a TLS-terminating proxy every request's ``REMOTE_ADDR`` is the proxy's. A deployment
that has ``LAGWATCH_TRUSTED_PROXY_HOPS`` proxies in front (each appending the address it got
the request from to ``X-Forwarded-For``) takes the address that many entries from the right
of that header: the one its own first proxy saw, which a client cannot forge (entries further
left can be anything the client sent). With 0 (the default) the header is ignored.
"""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.http import HttpRequest


def _address(text: str) -> str | None:
    text = text.strip()
    if text.startswith("[") and "]" in text:  # [v6]:port
        text = text[1 : text.index("]")]
    elif text.count(":") == 1:  # v4:port
        text = text.split(":", 1)[0]
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None


def client_address(request: HttpRequest) -> str | None:
    """The client's IP address, or None when it cannot be told."""
    hops = getattr(settings, "LAGWATCH_TRUSTED_PROXY_HOPS", 0)
    if hops > 0:
        chain = [p for p in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if p.strip()]
        if len(chain) >= hops:
            return _address(chain[-hops])
        # Fewer entries than proxies: the request did not come through them all, so the
        # peer is the client (or the nearest hop that added nothing).
    return _address(request.META.get("REMOTE_ADDR", ""))


def axes_client_address(request: HttpRequest) -> str:
    """django-axes's ``AXES_CLIENT_IP_CALLABLE``: the same address, "" when unknown."""
    return client_address(request) or ""
