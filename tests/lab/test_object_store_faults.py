"""The sample log's object store failing, for real (SeaweedFS, ``lab/object_store.py``): down for
a minute, slow, or refusing the credentials.

- **Down for 60 s** (the lab stops the store's process): each cycle's batch goes to the
  collector's local spool at once, the cycle's sources say the log's store is unreachable
  (and so do the sources page and ``/health/``), and once the store is back the next write
  sends the spool first: every sample of the outage is in the store, none twice.
- **Slow** (a relay holding each reply back): a store slower than usual still takes every
  batch; one slower than ``LAGWATCH_S3_REQUEST_TIMEOUT_S`` is an outage like the above.
- **Wrong credentials**: refused at once with an error naming ``AWS_ACCESS_KEY_ID`` and
  ``AWS_SECRET_ACCESS_KEY`` (never the secret), and not spooled: waiting would not fix them.

Run by ``scripts/test-object-store`` (marker ``object_store``).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow.compute as pc
import pytest
from django.test import Client
from django.urls import reverse

from collectors.outcome import CycleOutcome
from collectors.sample_log import SampleLog
from collectors.sample_log.object_store import ObjectStoreRefused, S3Options
from collectors.sample_log.spool import SpooledLog
from dashboard.monitoring.models import Cluster
from dashboard.store.rows import store_cycle
from lab.stack import Stack
from tests.spark_jobs.samples import SEC, T0, sample
from tests.waiting import wait_for

pytestmark = pytest.mark.object_store

OUTAGE_S = 60.0
POLL_S = 5.0


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    stack = Stack(tmp_path_factory.mktemp("object-store-faults"))
    try:
        stack.up(["object-store"])
        yield stack
    finally:
        stack.down()


@pytest.fixture
def store(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    env = stack.django_env()
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, env[name])
    return env


def cycle(i: int, group: str) -> list[dict]:
    return [sample(T0 + i * 5 * SEC, 100 * i + p, cluster="lab", group=group, partition=p,
                   latest=100 * i + p + 7) for p in range(3)]  # fmt: skip


def stored(log: SampleLog, group: str) -> list[tuple[int, int]]:
    table = log.read("lab")
    table = table.filter(pc.equal(table["group"], group))
    return sorted(zip(table["ts_ms"].to_pylist(), table["partition"].to_pylist(), strict=True))


def test_a_minute_without_the_store_loses_nothing(
    stack: Stack,
    store: dict[str, str],
    tmp_path: Path,
    db: None,
    client: Client,
    django_user_model: type,
) -> None:
    options = S3Options.from_environ(store)
    log = SampleLog.from_url(store["LAGWATCH_SAMPLE_LOG_URL"], options)
    spooled = SpooledLog(log, tmp_path / "spool", retry_after_s=2 * POLL_S)
    assert spooled.write_batch("lab", "outage@0", cycle(0, "outage"))
    assert spooled.source_outcome(T0).reachable

    stack.stop_service("object-store")
    try:
        started, i, took = time.monotonic(), 0, []
        while time.monotonic() - started < OUTAGE_S:
            i += 1
            t = time.monotonic()
            written = spooled.write_batch("lab", f"outage@{i}", cycle(i, "outage"))
            took.append(time.monotonic() - t)
            assert written and all(w.startswith(str(tmp_path / "spool")) for w in written)
            time.sleep(POLL_S)
        outage = spooled.source_outcome(T0 + i * 5 * SEC)
        assert not outage.reachable and outage.source == "sample_log"
        assert "does not answer" in outage.error and "LAGWATCH_S3_ENDPOINT" in outage.error
        assert f"{i} batch file(s) held locally" in outage.error
        assert max(took) < options.connect_timeout_s * options.retries + 2, took

        # What the collector records with its cycle: the sources page and /health/ say so.
        cluster = Cluster.objects.create(name="lab")
        store_cycle(cluster, CycleOutcome("lab", T0 + i * 5 * SEC, sources=[outage]))
        health = client.get("/health/").json()
        assert health["ok"] and health["sample_log"]["status"] == "unreachable"
        assert "LAGWATCH_S3_ENDPOINT" in health["sample_log"]["error"]
        client.force_login(django_user_model.objects.create_user("sre", password="x-123-y"))
        page = client.get(reverse("ui:sources")).content.decode()
        assert "Sample log store" in page and "does not answer" in page

    finally:
        stack.start_service("object-store")
    i += 1
    wait_for(lambda: _written(spooled, i), timeout=60, what="a write once the store is back")
    assert spooled.pending() == 0 and spooled.source_outcome(T0).reachable
    assert stored(log, "outage") == [(T0 + k * 5 * SEC, p) for k in range(i + 1) for p in range(3)]
    spooled.write_batch("lab", "outage@1", cycle(1, "outage"))  # a retried cycle: replaced
    assert len(stored(log, "outage")) == 3 * (i + 1)


def _written(spooled: SpooledLog, i: int) -> bool:
    written = spooled.write_batch("lab", f"outage@{i}", cycle(i, "outage"))
    return bool(written) and not written[0].startswith(str(spooled.spool.base))


class SlowRelay:
    """A TCP relay in front of the store that holds each reply back ``delay_s``."""

    def __init__(self, target: str) -> None:
        host, port = target.rsplit(":", 1)
        self._target = (host, int(port))
        self._server = socket.create_server(("127.0.0.1", 0))
        self.endpoint = f"http://127.0.0.1:{self._server.getsockname()[1]}"
        self.delay_s = 0.0
        self._socks: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                down, _ = self._server.accept()
            except OSError:
                return
            up = socket.create_connection(self._target)
            self._socks += [down, up]
            threading.Thread(target=self._pump, args=(down, up, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(up, down, True), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, replies: bool) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                if replies and self.delay_s:
                    time.sleep(self.delay_s)
                dst.sendall(data)
        for sock in (src, dst):
            with contextlib.suppress(OSError):
                sock.close()

    def close(self) -> None:
        self._server.close()
        for sock in self._socks:
            with contextlib.suppress(OSError):
                sock.close()


def test_a_slow_store_takes_every_batch_and_a_too_slow_one_is_an_outage(
    store: dict[str, str], tmp_path: Path
) -> None:
    relay = SlowRelay(store["LAGWATCH_S3_ENDPOINT"].removeprefix("http://"))
    try:
        options = S3Options.from_environ({**store, "LAGWATCH_S3_ENDPOINT": relay.endpoint,
                                          "LAGWATCH_S3_REQUEST_TIMEOUT_S": "10",
                                          "LAGWATCH_S3_RETRIES": "1"})  # fmt: skip
        log = SampleLog.from_url(store["LAGWATCH_SAMPLE_LOG_URL"], options)
        spooled = SpooledLog(log, tmp_path / "spool", retry_after_s=0)
        # Slow, well within the request timeout (each reply held back; wide: the machine may
        # be loaded, and a write is several requests).
        relay.delay_s = 0.3
        t = time.monotonic()
        written = spooled.write_batch("lab", "slow@0", cycle(0, "slow"))
        slow_s = time.monotonic() - t
        assert written and not written[0].startswith(str(tmp_path)) and slow_s >= 0.3
        relay.delay_s = 30.0  # beyond it: the batch waits in the spool
        written = spooled.write_batch("lab", "slow@1", cycle(1, "slow"))
        assert written[0].startswith(str(tmp_path / "spool"))
        assert not spooled.source_outcome(T0).reachable
        relay.delay_s = 0.0
        spooled.write_batch("lab", "slow@2", cycle(2, "slow"))
        assert spooled.pending() == 0
        assert stored(log, "slow") == [(T0 + k * 5 * SEC, p) for k in range(3) for p in range(3)]
    finally:
        relay.close()


def test_wrong_credentials_are_refused_by_name_and_not_spooled(
    store: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrong = "not-the-secret-" + store["AWS_SECRET_ACCESS_KEY"][::-1]
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", wrong)
    log = SampleLog.from_url(store["LAGWATCH_SAMPLE_LOG_URL"], S3Options.from_environ(store))
    spooled = SpooledLog(log, tmp_path / "spool")
    with pytest.raises(ObjectStoreRefused) as refused:
        spooled.write_batch("lab", "refused@0", cycle(0, "refused"))
    text = str(refused.value)
    assert "AWS_ACCESS_KEY_ID" in text and "AWS_SECRET_ACCESS_KEY" in text
    assert wrong not in text and store["AWS_SECRET_ACCESS_KEY"] not in text
    assert spooled.pending() == 0
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "NOSUCHKEY")
    with pytest.raises(ObjectStoreRefused, match="AWS_ACCESS_KEY_ID"):
        SampleLog.from_url(store["LAGWATCH_SAMPLE_LOG_URL"], S3Options.from_environ(store)).read()
