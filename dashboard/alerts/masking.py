"""Webhook URLs often carry their secret in the path or query (Slack's do): show only enough
to recognise the endpoint."""

from urllib.parse import urlsplit


def mask_url(url: str) -> str:
    """``https://hooks.example.com/…1a2b`` : scheme and host, then the last 4 characters."""
    if not url:
        return ""
    parts = urlsplit(url)
    tail = url[-4:] if len(url) > 12 else ""
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return f"{parts.scheme}://{host}/…{tail}" if parts.scheme else f"…{tail}"


def scrub_url(text: str, url: str) -> str:
    """``text`` (an error message) with ``url``, and its path and query alone, replaced by
    :func:`mask_url`: urllib quotes the URL in some errors ("unknown url type: '…'")."""
    if not url:
        return text
    from dashboard.secrecy import redact

    parts = urlsplit(url)
    tail = parts.path + (f"?{parts.query}" if parts.query else "")
    masked = mask_url(url)
    text = text.replace(url, masked)
    return redact(text, [tail] if len(tail) > 1 else [])
