"""The product's Kafka source over every secured listener of a real Apache Kafka 4.4 broker
(lab/secured_kafka.py): SASL_SSL with SCRAM-SHA-512, SCRAM-SHA-256 and PLAIN, SASL_PLAINTEXT,
mTLS, and OAUTHBEARER with the lab OIDC issuer's tokens, each read as the least-privileged ``lagwatch`` principal, must give the very figures
the PLAINTEXT listener gives a super user: members, generations and KIP-848 epochs, committed
offsets with their commit times, log offsets, lag. Sessions re-authenticate (KIP-368) under a
running source. Other modules' groups may be denied to the principal
(tests/lab/test_secured_acls.py): only this module's groups and topic must be free of errors.
Marked ``secured``: run by ``scripts/test-secured``.
"""

from __future__ import annotations

import pytest

from lab.secured_kafka import REAUTH_MS, admin_bootstrap
from lab.services import Context
from tests.collectors.test_kafka_source import errors_about
from tests.lab.secured_world import (
    Groups,
    figures,
    monitor_source,
    now,
)
from tests.waiting import wait_for

pytestmark = [pytest.mark.lab, pytest.mark.secured]

LISTENERS = [
    ("SASL_SSL", "SCRAM-SHA-512"),
    ("SASL_SSL", "SCRAM-SHA-256"),
    ("SASL_SSL", "PLAIN"),
    ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
    ("SASL_PLAINTEXT", "PLAIN"),
    ("MTLS", None),
    ("OAUTH", None),  # OAUTHBEARER, client-credentials tokens of the lab's OIDC issuer
]


@pytest.fixture(scope="module")
def ctx(secured_ctx: Context) -> Context:
    return secured_ctx


@pytest.fixture(scope="module")
def groups(secured_groups: Groups) -> Groups:
    return secured_groups


@pytest.fixture(scope="module")
def plaintext_figures(ctx: Context, groups: Groups) -> dict:
    from collectors.kafka import KafkaSource

    with KafkaSource(admin_bootstrap(ctx), timeout_s=10) as source:
        return figures(source.collect(now()), groups)


def test_the_plaintext_figures_are_whole(plaintext_figures: dict, groups: Groups) -> None:
    """The reference itself: both live groups and the held one, every figure present."""
    classic, kip848, held = (plaintext_figures[g] for g in groups.names)
    assert classic["type"] == "classic" and classic["generation"] >= 1
    assert kip848["type"] == "consumer" and kip848["assignment_epoch"] == kip848["generation"]
    assert len(kip848["members"]) == 2 and all(m[1] is not None for m in kip848["members"])
    assert held["commits"] == {0: 2, 1: 3, 3: 1} and held["lag"] == {0: 3, 1: 0, 3: 6}
    assert all(plaintext_figures[g]["commit_times_known"] for g in groups.names)


@pytest.mark.parametrize(("listener", "mechanism"), LISTENERS)
def test_every_listener_gives_the_plaintext_figures(
    ctx: Context, groups: Groups, plaintext_figures: dict, listener: str, mechanism: str | None
) -> None:
    with monitor_source(ctx, listener, mechanism) as source:
        assert source.unsupported is None
        result = source.collect(now())
    assert result.reachable
    assert errors_about(result, groups.topic, *groups.names) == []
    assert figures(result, groups) == plaintext_figures
    # DescribeConfigs on the topic: its retention settings, for the retention forecast.
    assert groups.topic in {t.topic for t in result.topic_configs}


def test_sessions_re_authenticate_under_a_running_source(ctx: Context, groups: Groups) -> None:
    """The broker ends a session after ``connections.max.reauth.ms``: the wire client
    authenticates again on the same connection before that, and librdkafka too, so a source
    kept for longer than a session keeps every figure, on the same connections."""
    with monitor_source(ctx, "SASL_SSL", "SCRAM-SHA-512") as source:
        first = source.collect(now())
        assert first.reachable and errors_about(first, groups.topic, *groups.names) == []
        connections = dict(source._groups._brokers.open)
        deadline_of = {a: c.reauth_at for a, c in connections.items()}
        assert all(at is not None for at in deadline_of.values())

        def renewed() -> bool:
            result = source.collect(now())
            assert result.reachable
            assert errors_about(result, groups.topic, *groups.names) == []
            assert figures(result, groups) == figures(first, groups)
            now_open = source._groups._brokers.open
            return all(
                now_open.get(a) is c and c.reauth_at > deadline_of[a]
                for a, c in connections.items()
            )

        wait_for(renewed, 3 * REAUTH_MS / 1000, "every connection re-authenticated", every=2)
