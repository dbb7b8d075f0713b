"""Brokers' delayed operations (purgatory, DOMAIN §5) from their Prometheus JMX exporter.

A cluster may name its brokers' metrics URLs (``broker_metrics_urls``): each one is the
Prometheus JMX exporter agent's ``/metrics`` on a broker, configured with the rules in
``lab/kafka/jmx-exporter.yaml``. Each cycle scrapes them all in parallel (short timeout, size
cap) and reads exactly these series, ignoring every other line:

- ``kafka_server_purgatory_delayed_operations{operation="Fetch"|"Produce"}``: Kafka's
  ``NumDelayedOperations``, the operations parked now: what "purgatory size" means here;
- ``kafka_server_purgatory_size{operation=…}``: Kafka's ``PurgatorySize``, the watcher
  entries, which keep completed operations until the next purge (seen on Kafka 4.1.1: 27
  after the three waiting consumers had gone), kept as ``*_watched``;
- ``kafka_server_delayed_fetch_expires_total{fetcher_type="consumer"|"follower"}`` and
  ``kafka_server_delayed_produce_expires_total``: the expiration meters' cumulative counts.

Expirations per second are taken from the counts between two scrapes of the same endpoint,
not from the meter's ``OneMinuteRate``: the count is exact over the cycle's own interval, while
the Yammer rate is an exponentially weighted average that lags a change by minutes and keeps
decaying after the last expiry. So the adapter keeps each endpoint's previous counts between
cycles (it is kept warm, like the others), and the first scrape has no rate yet.

Each request asks for just these four series (``?name[]=…``): Prometheus' Java client, which
the JMX exporter agent 1.x serves with, then skips collecting everything else (the JVM's
threads, memory pools, GC: ~11 KB and most of the agent's work per scrape, against ~1 KB),
which keeps the scrape's cost on the broker and in the cycle small; an exporter that does not
know the parameter ignores it, and the parser skips what it does not need.

A scrape that fails (down, timeout, too large, not the exposition format, none of the series)
is the broker's ``error`` and a source error: the cycle goes on, and no consumer's figures
depend on it (``collectors.cycle.stale``). No Django here.
"""

from __future__ import annotations

import math
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from collectors.records import BrokerFigures, CollectionResult, Source, SourceError

__all__ = [
    "MAX_RESPONSE_BYTES",
    "BrokerMetricsSource",
    "ExpositionError",
    "PurgatoryReading",
    "broker_name",
    "parse_exposition",
    "rate_per_s",
    "scrape_url",
]

# The exporter configured as documented serves ~12 KB (JVM lines included); a broker whose
# exporter exports everything serves a few MB. Past this the endpoint is misconfigured.
MAX_RESPONSE_BYTES = 4 * 1024 * 1024
# A scrape never holds a cycle longer than this, whatever the cluster's timeout.
MAX_SCRAPE_TIMEOUT_S = 3.0

DELAYED = "kafka_server_purgatory_delayed_operations"
WATCHED = "kafka_server_purgatory_size"
FETCH_EXPIRES = "kafka_server_delayed_fetch_expires_total"
PRODUCE_EXPIRES = "kafka_server_delayed_produce_expires_total"
_WANTED = {DELAYED, WATCHED, FETCH_EXPIRES, PRODUCE_EXPIRES}

# One sample line of the text exposition format: name, optional labels, value, optional
# timestamp (https://prometheus.io/docs/instrumenting/exposition_formats/).
_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*\s*=\s*"(?:[^"\\]|\\.)*"'
_SAMPLE = re.compile(
    rf"^({_NAME})\s*(?:\{{\s*((?:{_LABEL}\s*,\s*)*(?:{_LABEL})?\s*)\}})?\s+(\S+)(?:\s+-?\d+)?\s*$"
)
_LABEL_PAIR = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"')
_UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


class ExpositionError(ValueError):
    """The body is not Prometheus text, or holds none of the purgatory series."""


@dataclass(frozen=True, slots=True)
class PurgatoryReading:
    """What one scrape read; None where the series was absent (Kafka creates the expiration
    meters on first use: a broker that never delayed a produce has no produce meter)."""

    fetch_delayed: int | None = None
    produce_delayed: int | None = None
    fetch_watched: int | None = None
    produce_watched: int | None = None
    fetch_expired: float | None = None  # consumer + follower, cumulative
    produce_expired: float | None = None


def _labels(text: str | None) -> dict[str, str]:
    if not text:
        return {}
    return {
        k: re.sub(r'\\[\\"n]', lambda m: _UNESCAPE[m.group(0)], v)
        for k, v in _LABEL_PAIR.findall(text)
    }


def _value(text: str, line_no: int) -> float:
    try:
        return float(text)  # also "NaN", "+Inf", "-Inf", as the format allows
    except ValueError:
        raise ExpositionError(f"line {line_no}: value {text[:40]!r} is not a number") from None


def _count(value: float, what: str, line_no: int) -> int:
    if not math.isfinite(value) or value < 0 or value != int(value):
        raise ExpositionError(f"line {line_no}: {what} {value!r} is not a count")
    return int(value)


def parse_exposition(text: str) -> PurgatoryReading:
    """The purgatory figures of one exporter body (pure).

    Tolerant of everything it does not need (comments, other metrics, labels it does not
    know); strict about the format itself, so that an HTML error page or a truncated body
    is an error naming its line, never a figure. A body with none of the series is an error
    too: the exporter answers but lacks Lagwatch's rules.
    """
    delayed: dict[str, int] = {}
    watched: dict[str, int] = {}
    fetch_expired: float | None = None
    produce_expired: float | None = None
    for line_no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        if match is None:
            raise ExpositionError(f"line {line_no}: not a Prometheus sample: {line[:80]!r}")
        name, label_text, value_text = match.groups()
        value = _value(value_text, line_no)
        if name not in _WANTED:
            continue
        labels = _labels(label_text)
        if name in (DELAYED, WATCHED):
            operation = labels.get("operation", "").lower()
            if operation in ("fetch", "produce"):
                target = delayed if name == DELAYED else watched
                target[operation] = _count(value, f"{name}{{{operation}}}", line_no)
        elif not math.isfinite(value) or value < 0:
            raise ExpositionError(f"line {line_no}: {name} {value!r} is not a count")
        elif name == FETCH_EXPIRES:
            fetch_expired = (fetch_expired or 0.0) + value
        else:
            produce_expired = (produce_expired or 0.0) + value
    if not delayed and not watched:
        raise ExpositionError(
            f"none of the purgatory series ({DELAYED}, {WATCHED}): is the exporter "
            "configured with Lagwatch's rules (lab/kafka/jmx-exporter.yaml)?"
        )
    return PurgatoryReading(
        fetch_delayed=delayed.get("fetch"),
        produce_delayed=delayed.get("produce"),
        fetch_watched=watched.get("fetch"),
        produce_watched=watched.get("produce"),
        fetch_expired=fetch_expired,
        produce_expired=produce_expired,
    )


def rate_per_s(
    previous: float | None, previous_ms: int | None, current: float | None, current_ms: int
) -> float | None:
    """Per-second rate of a cumulative count between two scrapes (pure); None when there is
    no earlier count, no time between them, or the count went down (the broker restarted)."""
    if previous is None or previous_ms is None or current is None:
        return None
    elapsed_s = (current_ms - previous_ms) / 1000
    if elapsed_s <= 0 or current < previous:
        return None
    return (current - previous) / elapsed_s


def scrape_url(url: str) -> str:
    """``url`` asking for the four series only (``name[]``, kept after any query it has)."""
    split = urllib.parse.urlsplit(url)
    names = urllib.parse.urlencode([("name[]", n) for n in (DELAYED, WATCHED, FETCH_EXPIRES,
                                                             PRODUCE_EXPIRES)])  # fmt: skip
    query = f"{split.query}&{names}" if split.query else names
    return urllib.parse.urlunsplit(split._replace(query=query))


def broker_name(url: str) -> str:
    """How a broker is named on the pages: its metrics endpoint's ``host:port``."""
    return urllib.parse.urlsplit(url).netloc or url


class BrokerMetricsSource:
    """Scrapes every configured endpoint once per cycle, in parallel; kept warm between
    cycles for the previous counts behind the rates."""

    def __init__(self, urls: Iterable[str], timeout_s: float = 10.0) -> None:
        self.urls = list(dict.fromkeys(urls))
        self.timeout_s = min(timeout_s, MAX_SCRAPE_TIMEOUT_S)
        self._previous: dict[str, tuple[int, PurgatoryReading]] = {}
        self._pool = ThreadPoolExecutor(
            max_workers=max(1, min(8, len(self.urls))), thread_name_prefix="broker-metrics"
        )

    def close(self) -> None:
        self._pool.shutdown(wait=False)

    def _get(self, url: str) -> str:
        request = urllib.request.Request(scrape_url(url), headers={"Accept": "text/plain"})
        with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
            body = response.read(MAX_RESPONSE_BYTES + 1)
        if len(body) > MAX_RESPONSE_BYTES:
            raise ExpositionError(f"response larger than {MAX_RESPONSE_BYTES} bytes")
        try:
            return body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ExpositionError(f"not UTF-8 text: {exc}") from None

    def _scrape(self, url: str) -> tuple[int, PurgatoryReading | str]:
        try:
            reading: PurgatoryReading | str = parse_exposition(self._get(url))
        except (OSError, urllib.error.URLError, ValueError) as exc:  # ExpositionError too
            reading = f"{type(exc).__name__}: {exc}" if not str(exc) else str(exc)
        return int(time.time() * 1000), reading

    def collect(self, now_ms: int) -> CollectionResult:
        result = CollectionResult(source=Source.BROKER_METRICS, started_ms=now_ms)
        scraped = list(self._pool.map(self._scrape, self.urls))
        for url, (at_ms, reading) in zip(self.urls, scraped, strict=True):
            name = broker_name(url)
            if isinstance(reading, str):
                self._previous.pop(url, None)  # a rate across a gap would hide the gap
                result.errors.append(SourceError(Source.BROKER_METRICS, url, reading))
                result.brokers.append(BrokerFigures(broker=name, url=url, as_of_ms=at_ms,
                                                    error=reading))  # fmt: skip
                continue
            before_ms, before = self._previous.get(url, (None, PurgatoryReading()))
            self._previous[url] = (at_ms, reading)
            result.brokers.append(
                BrokerFigures(
                    broker=name,
                    url=url,
                    as_of_ms=at_ms,
                    fetch_purgatory=reading.fetch_delayed,
                    produce_purgatory=reading.produce_delayed,
                    fetch_watched=reading.fetch_watched,
                    produce_watched=reading.produce_watched,
                    fetch_expires_per_s=rate_per_s(
                        before.fetch_expired, before_ms, reading.fetch_expired, at_ms
                    ),
                    produce_expires_per_s=rate_per_s(
                        before.produce_expired, before_ms, reading.produce_expired, at_ms
                    ),
                )
            )
        # Reachable only if every broker answered: one broker's endpoint down is a warning
        # on the sources page, and it hides nothing (collectors.cycle.stale).
        result.reachable = not result.errors
        result.finished_ms = int(time.time() * 1000)
        return result
