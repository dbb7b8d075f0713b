"""Which configuration values are secrets, and how they are shown, exported and redacted.

Pure (no Django). Secrets are: librdkafka settings whose key names a password, a secret or a
private key (``sasl.password``, ``ssl.key.password``, ``ssl.keystore.password``,
``sasl.oauthbearer.client.secret``, ``ssl.key.pem``, ``sasl.jaas.config``…), alert channel
URLs (Slack's carry their token in the path, a Teams workflow's its signature, an
Alertmanager's maybe credentials), channel keys (PagerDuty's routing key, Opsgenie's API key)
and the SMTP password (``EMAIL_HOST_PASSWORD``, an environment variable only). They are never
shown in full: pages, the admin and the API show :data:`MASK`; exports write a reference to an
environment variable (``{env: NAME}``) or leave the value out; error reports and logs redact
them (dashboard/logging.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

MASK = "********"
# A key is secret when it says so (password, secret, private) or holds a private key or a
# JAAS/OAUTHBEARER configuration line (which embeds credentials).
_SECRET_KEY = re.compile(
    r"password|passwd|secret|private|credential|^ssl\.key\.pem$|^ssl_key$|jaas\.config"
    r"|^sasl\.oauthbearer\.config$",
    re.IGNORECASE,
)
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,254}$")
# Shorter values are not redacted from free text: "1" or "yes" would blank out half a log line.
MIN_REDACT = 4


def is_secret_key(key: str) -> bool:
    return bool(_SECRET_KEY.search(key))


def mask_config(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """``config`` with every secret value replaced by :data:`MASK` (empty ones stay empty)."""
    return {
        k: (MASK if is_secret_key(k) and v not in (None, "") else v)
        for k, v in (config or {}).items()
    }


def secret_values(config: Mapping[str, Any] | None) -> list[str]:
    """The secret values of ``config`` as text, to redact from free text."""
    return [str(v) for k, v in (config or {}).items() if is_secret_key(k) and v not in (None, "")]


def env_var_name(*parts: str) -> str:
    """``LAGWATCH_KAFKA_PROD_EU_SASL_PASSWORD`` from ("kafka", "prod-eu", "sasl.password")."""
    words = [re.sub(r"[^A-Za-z0-9]+", "_", p).strip("_").upper() for p in parts]
    return "_".join(["LAGWATCH", *[w for w in words if w]])


def env_ref(name: str) -> dict[str, str]:
    return {"env": name}


def is_env_ref(value: Any) -> bool:
    """``{env: NAME}``: a value to read from the environment at import."""
    return (
        isinstance(value, dict)
        and set(value) == {"env"}
        and isinstance(value["env"], str)
        and bool(ENV_NAME.match(value["env"]))
    )


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every occurrence of each secret replaced by :data:`MASK`, longest first
    (a secret inside another is not left half shown)."""
    for secret in sorted({s for s in secrets if len(s) >= MIN_REDACT}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


# ``sasl.password=x``, ``'ssl.key.password': 'x'``, ``"password": "x"``: a secret-looking key
# followed by its value, as dict reprs, JSON and query strings write them.
_KEY_VALUE = re.compile(
    r"""(?P<key>['"]?[\w.\-]*(?:password|passwd|secret|jaas\.config|ssl\.key\.pem)[\w.\-]*"""
    r"""['"]?\s*[:=]\s*)(?:(?P<q>['"])(?:\\.|(?!(?P=q)).)*(?P=q)|[^,\s}&'"]+)""",
    re.IGNORECASE,
)


def redact_key_values(text: str) -> str:
    """Free text with the values of secret-looking ``key=value`` / ``'key': 'value'`` pairs
    masked: a last line of defence for a config dict or a query string that reached a log."""

    def mask(m: re.Match[str]) -> str:
        quote = m.group("q") or ""
        return f"{m.group('key')}{quote}{MASK}{quote}"

    return _KEY_VALUE.sub(mask, text)
