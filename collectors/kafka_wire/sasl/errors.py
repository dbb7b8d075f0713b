"""The SASL failures, shaped as the wire client's others: a connection-level failure is an
``OSError`` (the broker, its token endpoint or the credentials), a setting the client cannot
honour is a ``ValueError`` (``UnsupportedSecurity``, raised before any connection)."""

from __future__ import annotations

__all__ = ["SaslAuthenticationFailed", "TokenUnavailable", "UnsupportedSecurity"]


class UnsupportedSecurity(ValueError):
    """A security setting this client does not implement (GSSAPI, keystores, an unknown
    mechanism): the message names it."""


class SaslAuthenticationFailed(ConnectionError):
    """The broker refused the credentials, or its SASL answers were wrong (a bad SCRAM
    signature or nonce): the connection is dropped."""


class TokenUnavailable(ConnectionError):
    """No OAUTHBEARER token could be had from the token endpoint."""
