"""OAUTHBEARER against a real OIDC issuer (lab/oidc_issuer.py, the npm ``oidc-provider``):
the secured broker validates the tokens against the issuer's JWKS; the product's wire client
and librdkafka (``sasl.oauthbearer.method=oidc``) fetch client-credentials tokens for it.
The issuer's tokens live 30 s here (tests/lab/conftest.py), the broker's sessions 15 s: a
source kept for longer than a token must fetch a new one and go on re-authenticating its
connections with it, every figure read throughout. Marked ``secured``:
``scripts/test-secured``.
"""

from __future__ import annotations

import time

import pytest

from lab.secured_kafka import OAUTH_MONITOR
from lab.services import Context
from tests.collectors.test_kafka_source import errors_about
from tests.lab.conftest import TOKEN_TTL_S
from tests.lab.secured_world import Groups, figures, monitor_source, now
from tests.waiting import wait_for

pytestmark = [pytest.mark.lab, pytest.mark.secured]


def test_tokens_are_refreshed_under_a_running_source(
    secured_ctx: Context, secured_groups: Groups
) -> None:
    with monitor_source(secured_ctx, "OAUTH") as source:
        first = source.collect(now())
        assert first.reachable
        assert errors_about(first, secured_groups.topic, *secured_groups.names) == []
        reference = figures(first, secured_groups)
        tokens = source._groups.mechanism.tokens
        first_token = tokens.token(5)  # the one the connections authenticated with
        assert first_token.principal == OAUTH_MONITOR
        assert first_token.expires_at - time.time() <= TOKEN_TTL_S
        connections = dict(source._groups._brokers.open)

        def refreshed() -> bool:
            result = source.collect(now())
            assert result.reachable
            assert errors_about(result, secured_groups.topic, *secured_groups.names) == []
            assert figures(result, secured_groups) == reference
            kept = source._groups._brokers.open
            # Past the first token's end: a new token, and the same connections, renewed.
            return (
                time.time() > first_token.expires_at + 2
                and tokens.fetches >= 2
                and all(kept.get(a) is c for a, c in connections.items())
            )

        wait_for(refreshed, 3 * TOKEN_TTL_S, "a refreshed token on the same connections", every=2)
        assert tokens.token(5).value != first_token.value
