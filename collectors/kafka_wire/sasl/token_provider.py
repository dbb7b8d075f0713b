"""OAUTHBEARER tokens from an OIDC issuer's token endpoint: a client-credentials grant.

What librdkafka's ``sasl.oauthbearer.method=oidc`` does, with its settings, so that one
cluster configuration serves both clients: ``sasl.oauthbearer.token.endpoint.url``,
``sasl.oauthbearer.client.id``, ``sasl.oauthbearer.client.secret`` (HTTP Basic, as
librdkafka sends them), ``sasl.oauthbearer.scope`` (optional) and ``https.ca.location`` for
an issuer behind a private CA. The token is kept and reused by every connection of the client
until 80% of its lifetime has passed (librdkafka's refresh point), then fetched again, so a
re-authentication (KIP-368) before the broker's session ends carries a fresh one. Its expiry
is the JWT's ``exp`` claim, else the answer's ``expires_in``.

The secret goes in the Authorization header only, never in a URL, a log line or an error.
"""

from __future__ import annotations

import base64
import json
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable

from collectors.kafka_wire.sasl.errors import TokenUnavailable
from collectors.kafka_wire.sasl.oauthbearer import BearerToken, jwt_claims

__all__ = ["REFRESH_FRACTION", "OidcTokenProvider"]

REFRESH_FRACTION = 0.8  # of the token's lifetime, as librdkafka
_MAX_ANSWER_BYTES = 1 << 20

# (url, body, headers, timeout_s) -> (status, body): the HTTP call, replaceable in pure tests.
Post = Callable[[str, bytes, dict[str, str], float], tuple[int, bytes]]


class OidcTokenProvider:
    """Client-credentials tokens, cached until their refresh point; thread-safe."""

    def __init__(
        self,
        endpoint_url: str,
        client_id: str,
        client_secret: str,
        scope: str | None = None,
        *,
        ca_location: str | None = None,
        clock: Callable[[], float] = time.time,
        post: Post | None = None,
    ) -> None:
        parsed = urllib.parse.urlsplit(endpoint_url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError("sasl.oauthbearer.token.endpoint.url must be an http(s) URL")
        if not client_id or not client_secret:
            raise ValueError(
                "sasl.oauthbearer.client.id and sasl.oauthbearer.client.secret are required"
            )
        self.endpoint_url = endpoint_url
        # Named in errors without its query string or any user:password@.
        port = f":{parsed.port}" if parsed.port else ""
        self._where = f"{parsed.scheme}://{parsed.hostname}{port}{parsed.path}"
        self._client_id = client_id
        self._client_secret = client_secret
        self.scope = scope or None
        self._clock = clock
        self._post = post or _https_post(ca_location)
        self._lock = threading.Lock()
        self._token: BearerToken | None = None
        self._refresh_at = 0.0
        self.fetches = 0  # how many tokens were fetched (for the operator's log and tests)

    def token(self, timeout_s: float) -> BearerToken:
        with self._lock:
            now = self._clock()
            if self._token is None or now >= self._refresh_at:
                self._token = self._fetch(timeout_s, now)
                lifetime = max(0.0, self._token.expires_at - now)
                self._refresh_at = now + REFRESH_FRACTION * lifetime
            return self._token

    def _fetch(self, timeout_s: float, now: float) -> BearerToken:
        form = {"grant_type": "client_credentials"}
        if self.scope:
            form["scope"] = self.scope
        credentials = f"{self._client_id}:{self._client_secret}".encode()
        headers = {
            "Authorization": "Basic " + base64.b64encode(credentials).decode(),
            "Content-Type": "application/x-www-form-urlencoded",
            "Accept": "application/json",
        }
        body = urllib.parse.urlencode(form).encode()
        try:
            status, answer = self._post(self.endpoint_url, body, headers, timeout_s)
        except OSError as exc:
            raise TokenUnavailable(f"token endpoint {self._where}: {exc}") from None
        if status != 200:
            raise TokenUnavailable(
                f"token endpoint {self._where} answered HTTP {status}: {_oauth_error(answer)}"
            )
        try:
            document = json.loads(answer)
            value = document["access_token"]
        except (ValueError, KeyError, TypeError):
            raise TokenUnavailable(f"token endpoint {self._where}: no access_token") from None
        if not isinstance(value, str) or not value:
            raise TokenUnavailable(f"token endpoint {self._where}: an empty access_token")
        claims = jwt_claims(value)
        expires = claims.get("exp")
        if not isinstance(expires, int | float):
            expires_in = document.get("expires_in")
            if not isinstance(expires_in, int | float):
                raise TokenUnavailable(
                    f"token endpoint {self._where}: the token has no exp claim nor expires_in"
                )
            expires = now + expires_in
        principal = claims.get("sub")
        self.fetches += 1
        return BearerToken(value, float(expires), principal if isinstance(principal, str) else None)


def _oauth_error(answer: bytes) -> str:
    """RFC 6749 §5.2's ``error`` (and description), never the whole body."""
    try:
        document = json.loads(answer)
        text = str(document.get("error", "?"))
        if document.get("error_description"):
            text += f" ({document['error_description']})"
        return text[:300]
    except (ValueError, AttributeError):
        return "no OAuth error in the answer"


def _https_post(ca_location: str | None) -> Post:
    context = ssl.create_default_context(cafile=ca_location or None)

    def post(url: str, body: bytes, headers: dict[str, str], timeout_s: float) -> tuple[int, bytes]:
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=timeout_s, context=context) as answer:
                return answer.status, answer.read(_MAX_ANSWER_BYTES)
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read(_MAX_ANSWER_BYTES)

    return post
