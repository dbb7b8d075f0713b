"""The background sender every pusher of this package hands its documents to.

A client library calls its statistics callback from inside ``poll()``: whatever runs there
delays the application's records. So ``submit`` only puts the document in a dictionary under
a lock that the sender's own thread never holds during I/O, and returns. The thread wakes once
per flush interval and POSTs what is pending, one document per request (the ingest endpoint
takes one document a request):

- **latest wins**: documents are keyed per client (a librdkafka instance's ``name``, a spout's
  topology and spout id, with the endpoint and query); a newer document of the same client
  replaces the pending one, since Lagwatch keeps only each client's latest anyway;
- **bounded**: at most ``max_pending`` clients' documents wait; a document of one more client
  is dropped (counted, logged once), never queued without limit;
- **retried with back-off** on a 5xx answer, a 429, a timeout or a connection error: the
  unsent documents stay pending (newer ones still replace them) and the next attempt waits
  ``backoff_s``, doubled at each failure up to ``max_backoff_s`` (or the answer's
  ``Retry-After``), jittered;
- **given up** on any other answer (a 4xx but 429, a redirect): that document is dropped, and
  the first refusal of each kind is logged with the endpoint's error, which names the field
  at fault; the documents after it are still sent;
- ``flush()`` sends at once and waits; ``close()`` flushes, within a deadline, and stops.
"""

from __future__ import annotations

import http.client
import logging
import random
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from lagwatch_client._version import __version__

log = logging.getLogger("lagwatch_client")

LIBRDKAFKA = "librdkafka"
SPOUT = "spout"
ENDPOINTS = (LIBRDKAFKA, SPOUT)

# What a refused push's log line quotes of the endpoint's answer.
_ERROR_CHARS = 500


@dataclass(frozen=True)
class _Doc:
    endpoint: str
    body: str
    query: tuple[tuple[str, str], ...]
    # Run in the sender's thread just before the POST (the producer's delivery counts are
    # attached there, so the poll thread never parses a document).
    prepare: Callable[[str], str] | None


@dataclass(frozen=True)
class _Outcome:
    kind: str  # "ok", "retry" or "refused"
    status: int | None = None
    detail: str = ""
    retry_after_s: float | None = None


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirected POST would arrive as a GET without its body (an HTTPS redirect in front
    of Lagwatch does that): report the redirect instead of following it."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001, ANN201
        return None


class IngestSender:
    """POSTs documents to ``<ingest_url>/librdkafka`` and ``<ingest_url>/spout`` from its own
    thread; ``ingest_url`` is ``https://<lagwatch>/api/v1/ingest/<cluster>``.

    One sender serves every client of a process. The thread starts with the sender; use it
    as a context manager or call ``close()`` at shutdown (it flushes first).
    """

    def __init__(
        self,
        ingest_url: str,
        token: str | None,
        *,
        flush_interval_s: float = 2.0,
        max_pending: int = 1000,
        timeout_s: float = 10.0,
        backoff_s: float = 1.0,
        max_backoff_s: float = 60.0,
        headers: Mapping[str, str] | None = None,
        name: str = "lagwatch-ingest",
    ) -> None:
        scheme = urllib.parse.urlsplit(ingest_url).scheme
        if scheme not in ("http", "https"):
            raise ValueError(f"ingest_url must be an http(s) URL, got {ingest_url!r}")
        if flush_interval_s < 0 or max_pending < 1 or timeout_s <= 0 or backoff_s <= 0:
            raise ValueError("flush_interval_s >= 0, max_pending >= 1, timeout_s and backoff_s > 0")
        self.url = ingest_url.rstrip("/")
        self._headers = {
            # What a proxy on the way may need (X-Forwarded-Proto...); then ours.
            **dict(headers or {}),
            "Content-Type": "application/json",
            "User-Agent": f"lagwatch-client/{__version__}",
        }
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        for header, value in self._headers.items():
            try:  # what HTTP carries in a header: found now, not at every push
                value.encode("latin-1")
            except UnicodeEncodeError:
                raise ValueError(f"header {header}: not sendable in HTTP ({value!r})") from None
        self._flush_interval_s = flush_interval_s
        self._max_pending = max_pending
        self._timeout_s = timeout_s
        self._backoff_initial_s = backoff_s
        self._max_backoff_s = max(max_backoff_s, backoff_s)
        self._opener = urllib.request.build_opener(_NoRedirects())

        self._cond = threading.Condition()
        self._pending: dict[tuple, _Doc] = {}
        self._next_flush = time.monotonic() + flush_interval_s
        self._retry_at = 0.0
        self._backoff_s = backoff_s
        self._urgent = False  # flush() or close(): send now, whatever the interval
        self._sending = False
        self._closed = False
        self._stopping = False
        self._unsent_at_close = 0
        self._failing_since: float | None = None
        self._last_error: str | None = None
        self._logged: set[tuple] = set()
        self._counts = {"retries": 0, "refused": 0, "dropped": 0, "superseded": 0}
        self._posted = dict.fromkeys(ENDPOINTS, 0)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    # --- the client's side: never waits on the network ------------------------------------

    def submit(
        self,
        endpoint: str,
        body: str,
        *,
        key: str,
        query: Mapping[str, str] | None = None,
        prepare: Callable[[str], str] | None = None,
    ) -> bool:
        """Queue ``body`` for ``<ingest_url>/<endpoint>?<query>`` as the latest document of
        client ``key``. Returns False when it was dropped (queue full, sender closed)."""
        if endpoint not in ENDPOINTS:
            raise ValueError(f"endpoint must be one of {ENDPOINTS}, got {endpoint!r}")
        q = tuple(sorted((query or {}).items()))
        slot = (endpoint, key, q)
        with self._cond:
            if self._closed:
                self._counts["dropped"] += 1
                return False
            if slot in self._pending:
                self._counts["superseded"] += 1
                self._pending[slot] = _Doc(endpoint, body, q, prepare)
                return True
            if len(self._pending) >= self._max_pending:
                self._counts["dropped"] += 1
                first = self._first(("full",))
            else:
                self._pending[slot] = _Doc(endpoint, body, q, prepare)
                if len(self._pending) == 1:
                    self._cond.notify_all()
                return True
        if first:
            log.warning(
                "lagwatch-client: %d clients' documents already wait for %s; documents "
                "of more clients are dropped (logged once)",
                self._max_pending,
                self.url,
            )
        return False

    # --- the owner's side -----------------------------------------------------------------

    def flush(self, timeout_s: float | None = 10.0) -> bool:
        """Send what is pending now and wait until it is sent or given up (True), or until
        ``timeout_s`` passed with documents still pending (False: the endpoint is failing and
        they wait for their retry)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._cond:
            self._urgent = True
            self._cond.notify_all()
            while self._pending or self._sending:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def close(self, timeout_s: float = 10.0) -> bool:
        """Flush within ``timeout_s``, then stop the thread; what is still pending then is
        dropped and counted. Returns True when everything submitted was sent or given up.
        Later submits are dropped."""
        with self._cond:
            self._closed = True
        done = self.flush(timeout_s)
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        # A request under way ends within the request timeout; the thread is a daemon, so
        # a process exiting does not wait for it.
        self._thread.join(timeout=1.0 if done else min(self._timeout_s, 1.0))
        return done

    def __enter__(self) -> IngestSender:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def status(self) -> dict[str, object]:
        """Counters since the sender started: documents posted (per endpoint), retries, given
        up (``refused``), ``dropped`` (queue full, or closed), ``superseded`` (replaced by a
        newer document of the same client before being sent), pending now, and whether the
        endpoint is failing (since when, the last error)."""
        with self._cond:
            return {
                "url": self.url,
                "posted": sum(self._posted.values()),
                "posted_by_endpoint": dict(self._posted),
                **self._counts,
                "pending": len(self._pending),
                "failing": self._failing_since is not None,
                "last_error": self._last_error,
            }

    # --- the sender's thread --------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._cond:
                batch = self._next_batch()
                if batch is None:
                    self._cond.notify_all()
                    unsent = self._unsent_at_close
                    break
                self._sending = True
            try:
                self._send(batch)
            except Exception:  # a bug here must not end the pushes for good
                log.exception("lagwatch-client: sending failed")
            finally:
                with self._cond:
                    self._sending = False
                    self._cond.notify_all()
        if unsent:
            log.warning("lagwatch-client: closed with %d documents unsent to %s", unsent, self.url)

    def _next_batch(self) -> list[tuple[tuple, _Doc]] | None:
        """Under the lock: wait until documents are due, take them; None to stop."""
        while True:
            if self._stopping:
                self._unsent_at_close = len(self._pending)
                self._counts["dropped"] += len(self._pending)
                self._pending.clear()
                return None
            now = time.monotonic()
            if self._pending:
                due = now if self._urgent else max(self._next_flush, self._retry_at)
                if now >= due:
                    batch = list(self._pending.items())
                    self._pending.clear()
                    self._urgent = False
                    self._next_flush = now + self._flush_interval_s
                    return batch
                self._cond.wait(due - now)
            else:
                self._urgent = False
                self._cond.wait()

    def _send(self, batch: list[tuple[tuple, _Doc]]) -> None:
        for i, (_slot, doc) in enumerate(batch):
            with self._cond:
                if self._stopping:
                    self._requeue(batch[i:])
                    return
            outcome = self._post(doc)
            if outcome.kind == "ok":
                self._sent(doc)
            elif outcome.kind == "refused":
                self._refused(doc, outcome)
            else:
                self._failed(batch[i:], outcome)
                return

    def _post(self, doc: _Doc) -> _Outcome:
        try:
            body = doc.prepare(doc.body) if doc.prepare else doc.body
        except Exception as exc:  # the caller's transformation: this document is lost
            return _Outcome("refused", None, f"preparing the document failed: {exc!r}")
        url = f"{self.url}/{doc.endpoint}"
        if doc.query:
            url += "?" + urllib.parse.urlencode(doc.query)
        request = urllib.request.Request(
            url, data=body.encode("utf-8"), headers=self._headers, method="POST"
        )
        try:
            with self._opener.open(request, timeout=self._timeout_s) as response:
                response.read()
            return _Outcome("ok", response.status)
        except urllib.error.HTTPError as exc:
            status = exc.code
            detail = _answer_text(exc)
            if status == 429 or status >= 500:
                return _Outcome("retry", status, detail, _retry_after(exc.headers))
            if 300 <= status < 400:
                detail = f"redirected to {exc.headers.get('Location')}: push to that URL"
            return _Outcome("refused", status, detail)
        except (OSError, http.client.HTTPException) as exc:  # timeouts, refused, reset
            return _Outcome("retry", None, repr(exc))
        except (ValueError, UnicodeError) as exc:  # this document cannot be sent as it is
            return _Outcome("refused", None, repr(exc))

    def _sent(self, doc: _Doc) -> None:
        with self._cond:
            self._posted[doc.endpoint] += 1
            recovered = self._failing_since is not None
            self._failing_since = None
            self._backoff_s = self._backoff_initial_s
            self._retry_at = 0.0
        if recovered:
            log.info("lagwatch-client: pushing to %s works again", self.url)

    def _refused(self, doc: _Doc, outcome: _Outcome) -> None:
        with self._cond:
            self._counts["refused"] += 1
            self._last_error = f"HTTP {outcome.status}: {outcome.detail}"
            first = self._first(("refused", doc.endpoint, outcome.status))
        if first:
            log.error("lagwatch-client: %s/%s refused a document (HTTP %s): %s; such documents "
                      "are dropped, not retried (logged once)",
                      self.url, doc.endpoint, outcome.status, outcome.detail)  # fmt: skip

    def _failed(self, unsent: list[tuple[tuple, _Doc]], outcome: _Outcome) -> None:
        with self._cond:
            self._counts["retries"] += 1
            self._requeue(unsent)
            delay = outcome.retry_after_s
            if delay is None:
                delay = self._backoff_s * random.uniform(0.8, 1.2)
                self._backoff_s = min(self._backoff_s * 2, self._max_backoff_s)
            delay = min(delay, self._max_backoff_s)
            self._retry_at = time.monotonic() + delay
            what = f"HTTP {outcome.status}" if outcome.status else "no answer"
            self._last_error = f"{what}: {outcome.detail}"
            started = self._failing_since is None
            if started:
                self._failing_since = time.time()
        if started:
            log.warning("lagwatch-client: pushing to %s failed (%s); retrying with back-off, "
                        "the latest document of each client kept", self.url,
                        self._last_error)  # fmt: skip

    def _requeue(self, unsent: list[tuple[tuple, _Doc]]) -> None:
        """Under the lock: put unsent documents back unless a newer one of the same client
        arrived meanwhile, within the bound."""
        for slot, doc in unsent:
            if slot in self._pending:
                self._counts["superseded"] += 1
            elif len(self._pending) < self._max_pending:
                self._pending[slot] = doc
            else:
                self._counts["dropped"] += 1

    def _first(self, what: tuple) -> bool:
        """Under the lock: whether this is the first time ``what`` happened (log it then,
        after releasing the lock: a client's thread may be waiting for it)."""
        if what in self._logged:
            return False
        self._logged.add(what)
        return True


def _answer_text(exc: urllib.error.HTTPError) -> str:
    try:
        return exc.read(_ERROR_CHARS).decode("utf-8", "replace").strip()
    except (OSError, http.client.HTTPException):
        return exc.reason if isinstance(exc.reason, str) else ""


def _retry_after(headers: Mapping[str, str] | None) -> float | None:
    """A ``Retry-After`` in seconds (the date form is not used by Lagwatch)."""
    value = (headers or {}).get("Retry-After")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None
