"""OAUTHBEARER tokens for Amazon MSK's IAM access control, from AWS's own signer library.

MSK accepts IAM credentials over SASL/OAUTHBEARER: the "token" is a SigV4-presigned URL for
the action ``kafka-cluster:Connect`` (base64url, no padding), valid 15 minutes, which
``aws-msk-iam-sasl-signer-python`` (``MSKAuthTokenProvider``) makes from the usual AWS
credential chain (environment variables, a profile, an instance or task role) or a named
profile. Settings, Lagwatch's own (librdkafka has no such method, so ``librdkafka_config``
replaces them with an ``oauth_cb`` for the librdkafka clients)::

    sasl.mechanism: OAUTHBEARER
    sasl.oauthbearer.method: aws_msk_iam
    sasl.oauthbearer.aws.region: eu-west-1
    sasl.oauthbearer.aws.profile: monitoring     # optional; the default chain otherwise

The token is reused by every connection, and by librdkafka, until 80% of its life (as the
OIDC tokens are), so a re-authentication (MSK ends sessions as tokens expire) carries a fresh
one. The signer (and boto3) is imported on first use: a deployment without MSK never loads it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from collectors.kafka_wire.sasl.errors import TokenUnavailable
from collectors.kafka_wire.sasl.oauthbearer import BearerToken

__all__ = ["MskIamTokenProvider"]

REFRESH_FRACTION = 0.8
# (region, profile) -> (token, expiry in ms since the epoch): the signer's call.
Sign = Callable[[str, str | None], tuple[str, int]]


def _signer(region: str, profile: str | None) -> tuple[str, int]:
    from aws_msk_iam_sasl_signer import MSKAuthTokenProvider

    if profile:
        return MSKAuthTokenProvider.generate_auth_token_from_profile(region, profile)
    return MSKAuthTokenProvider.generate_auth_token(region)


class MskIamTokenProvider:
    """MSK IAM tokens, cached until their refresh point; thread-safe."""

    def __init__(
        self,
        region: str,
        profile: str | None = None,
        *,
        clock: Callable[[], float] = time.time,
        sign: Sign = _signer,
    ) -> None:
        if not region:
            raise ValueError("sasl.oauthbearer.aws.region is required (the cluster's region)")
        self.region = region
        self.profile = profile or None
        self._clock = clock
        self._sign = sign
        self._lock = threading.Lock()
        self._token: BearerToken | None = None
        self._refresh_at = 0.0
        self.fetches = 0

    def token(self, timeout_s: float) -> BearerToken:
        with self._lock:
            now = self._clock()
            if self._token is None or now >= self._refresh_at:
                try:
                    value, expiry_ms = self._sign(self.region, self.profile)
                except Exception as exc:  # botocore's credential errors are many and plain
                    raise TokenUnavailable(
                        f"AWS MSK IAM token for {self.region}: {type(exc).__name__}: {exc}"
                    ) from None
                self._token = BearerToken(value, expiry_ms / 1000)
                self._refresh_at = now + REFRESH_FRACTION * max(0.0, expiry_ms / 1000 - now)
                self.fetches += 1
            return self._token

    def oauth_cb(self, _config: Any) -> tuple[str, float]:
        """confluent-kafka's ``oauth_cb``: the token and its expiry (seconds since the epoch)."""
        token = self.token(10.0)
        return token.value, token.expires_at
