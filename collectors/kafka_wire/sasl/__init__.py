"""SASL for the wire client: PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER, over TLS or not.

``codec`` holds the two Kafka messages (SaslHandshake, SaslAuthenticate), ``scram`` and
``oauthbearer`` the mechanisms' own messages, ``token_provider`` OAUTHBEARER tokens from an
OIDC issuer, ``settings`` which mechanism a cluster's librdkafka-style settings ask for,
``authenticate`` the steps over one connection. All pure but the token endpoint's HTTP call;
``collectors.kafka_wire.connection`` runs them after ApiVersions and again before the session
the broker granted runs out (KIP-368).
"""

from collectors.kafka_wire.sasl.authenticate import authenticate
from collectors.kafka_wire.sasl.errors import (
    SaslAuthenticationFailed,
    TokenUnavailable,
    UnsupportedSecurity,
)
from collectors.kafka_wire.sasl.settings import Mechanism, librdkafka_config, sasl_mechanism

__all__ = [
    "Mechanism",
    "SaslAuthenticationFailed",
    "TokenUnavailable",
    "UnsupportedSecurity",
    "authenticate",
    "librdkafka_config",
    "sasl_mechanism",
]
