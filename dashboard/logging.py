"""One-line JSON log records, so collectors' and jobs' logs can be searched by field."""

import contextlib
import json
import logging
import sys
from datetime import UTC, datetime

_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """Formats a record and its ``extra=`` fields as one JSON object per line."""

    def format(self, record: logging.LogRecord) -> str:
        payload = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        payload.update({k: v for k, v in vars(record).items() if k not in _STANDARD})
        if record.exc_text:  # set (and redacted) by RedactSecretsFilter
            payload["exc"] = record.exc_text
        elif record.exc_info:
            payload["exc"] = self.formatException(record.exc_info)
        return json.dumps(payload, default=str)


class StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is when a record is emitted, not the stream of the
    moment logging was configured: a process that swaps its stderr (pytest's capture, a
    daemonising wrapper) would otherwise leave the handler writing to a closed file."""

    def __init__(self, level: int = logging.NOTSET) -> None:
        logging.Handler.__init__(self, level)

    @property
    def stream(self):  # type: ignore[override]
        return sys.stderr

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's name
        """One line naming the failure, instead of logging's report: that prints the record's
        message and arguments unredacted, and the traceback of the error being logged (its
        message may quote a secret) as the context of its own."""
        if not logging.raiseExceptions:
            return
        exc = sys.exc_info()[1]
        with contextlib.suppress(Exception):  # nowhere left to say it
            sys.stderr.write(
                f"--- logging error: a record of {record.name} could not be written "
                f"({type(exc).__name__ if exc is not None else 'unknown error'}) ---\n"
            )


class RedactSecretsFilter(logging.Filter):
    """Masks secret-looking ``key=value`` pairs (``sasl.password=…``, ``'password': '…'``) in
    a record's message, its exception text and its string ``extra=`` fields, and secret keys of
    its dict fields. The last line of defence: code logs masked values to begin with (a failed
    delivery logs the channel's masked URL, dashboard/alerts/delivery.py)."""

    def filter(self, record: logging.LogRecord) -> bool:
        from dashboard.secrecy import mask_config, redact, redact_key_values

        # A record with a traceback (an error: rare) may quote any secret in an exception's
        # message, so the stored ones are looked up and redacted too.
        known = known_secrets() if record.exc_info or record.exc_text else []
        message = record.getMessage()
        redacted = redact(redact_key_values(message), known)
        if redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(redact_key_values(record.exc_text), known)
        for key, value in list(vars(record).items()):
            if key in _STANDARD:
                continue
            if isinstance(value, str):
                setattr(record, key, redact_key_values(value))
            elif isinstance(value, dict):
                setattr(record, key, mask_config(value))
        return True


def known_secrets() -> list[str]:
    """Every secret this deployment holds, as text: clusters' secret librdkafka values, alert
    channel URLs (and their path and query alone) and keys, the secret settings. For error
    reports, which are rare enough to afford the queries; empty when the database cannot
    answer."""
    from urllib.parse import urlsplit

    from django.conf import settings

    from dashboard.secrecy import secret_values

    found = [
        str(getattr(settings, name, "") or "")
        for name in ("SECRET_KEY", "EMAIL_HOST_PASSWORD", "LAGWATCH_INGEST_TOKEN",
                     "LAGWATCH_OPEN_ENDPOINTS_PASSWORD")
    ]  # fmt: skip
    try:
        from dashboard.alerts.models import Channel
        from dashboard.monitoring.models import Cluster

        for config in Cluster.objects.values_list("kafka_config", flat=True):
            found.extend(secret_values(config if isinstance(config, dict) else {}))
        for url in Channel.objects.exclude(url="").values_list("url", flat=True):
            parts = urlsplit(url)
            found.extend([url, parts.path + (f"?{parts.query}" if parts.query else "")])
        found.extend(Channel.objects.exclude(secret="").values_list("secret", flat=True))
    except Exception:  # noqa: BLE001 - the report of an error must not fail on another
        pass
    return [s for s in found if s]


def _exception_reporter_classes():  # imported lazily: settings import this module's path
    import re

    from django.views.debug import ExceptionReporter, SafeExceptionReporterFilter

    from dashboard.secrecy import redact, redact_key_values

    class SecretsExceptionReporterFilter(SafeExceptionReporterFilter):
        """Django's filter hides settings named like API, AUTH, TOKEN, KEY, SECRET, PASS; this
        one also hides URL (REDIS_URL, DATABASE_URL and webhook URLs carry credentials), DSN
        and CONFIG (kafka_config), and applies the same names to every local variable and
        POST field of the report, not only those marked ``@sensitive_variables``."""

        hidden_settings = re.compile(
            "API|AUTH|TOKEN|KEY|SECRET|PASS|SIGNATURE|HTTP_COOKIE|URL|DSN|CONFIG|RECIPIENT",
            flags=re.IGNORECASE,
        )

        def get_traceback_frame_variables(self, request, tb_frame):  # noqa: ANN001, ANN201
            variables = super().get_traceback_frame_variables(request, tb_frame)
            return [(name, self.cleanse_setting(name, value)) for name, value in variables]

        def get_post_parameters(self, request):  # noqa: ANN001, ANN201
            params = super().get_post_parameters(request)
            if request is None or not params:
                return params
            cleansed = params.copy()
            for name in params:
                if self.hidden_settings.search(name):
                    cleansed[name] = self.cleansed_substitute
            return cleansed

    class SecretsExceptionReporter(ExceptionReporter):
        """Error reports (DEBUG page, mails to ADMINS) with every known secret redacted from
        the finished text: an exception's message may quote one (urllib's "unknown url type:
        'https://hooks…'")."""

        def _clean(self, text: str) -> str:
            return redact(redact_key_values(text), known_secrets())

        def get_traceback_html(self):  # noqa: ANN201
            return self._clean(str(super().get_traceback_html()))

        def get_traceback_text(self):  # noqa: ANN201
            return self._clean(str(super().get_traceback_text()))

    return SecretsExceptionReporterFilter, SecretsExceptionReporter


def __getattr__(name: str):  # noqa: ANN202 - module attributes built on first use
    if name in ("SecretsExceptionReporterFilter", "SecretsExceptionReporter"):
        reporter_filter, reporter = _exception_reporter_classes()
        globals().update(
            SecretsExceptionReporterFilter=reporter_filter, SecretsExceptionReporter=reporter
        )
        return globals()[name]
    raise AttributeError(name)
