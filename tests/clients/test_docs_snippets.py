"""The Python snippets of docs/INGEST.md and the package's README are its real API: each runs
as written (the Lagwatch URL pointed at a local server, confluent-kafka replaced by a stand-in
that calls the callbacks as librdkafka would) and its documents arrive as docs/INGEST.md
says."""

from __future__ import annotations

import json
import re
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lagwatch_client import IngestSender

from tests.clients.ingest_server import IngestServer

REPO = Path(__file__).resolve().parents[2]
DOC_URL = "https://lagwatch.example.com/api/v1/ingest/prod"


def snippets(path: Path) -> list[str]:
    text = path.read_text()
    return [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "lagwatch_client" in b]


class _Msg:
    def __init__(self, topic: str, partition: int) -> None:
        self._topic, self._partition = topic, partition

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition


class _Client:
    """What the snippets call of confluent-kafka's clients; the callbacks are called as
    librdkafka calls them from ``poll()``."""

    kind = ""

    def __init__(self, conf: dict[str, Any]) -> None:
        self.conf = conf
        self.produced: list[tuple[str, int]] = []

    def _statistics(self) -> None:
        doc = {"name": f"{self.conf['client.id']}#{self.kind}-1",
               "client_id": self.conf["client.id"], "type": self.kind, "time": 1700000000}  # fmt: skip
        self.conf["stats_cb"](json.dumps(doc))

    def poll(self, _timeout: float = 0) -> None:
        for topic, partition in self.produced:
            self.conf["on_delivery"](None, _Msg(topic, partition))
        self.produced.clear()
        self._statistics()


class _Consumer(_Client):
    kind = "consumer"

    def subscribe(self, topics: list[str]) -> None:
        self.topics = topics

    def close(self) -> None:
        self.poll()


class _Producer(_Client):
    kind = "producer"

    def produce(self, topic: str, value: bytes, partition: int = 0) -> None:
        self.produced.append((topic, partition))

    def flush(self, _timeout: float = 0) -> int:
        self.poll()
        return 0


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[IngestServer]:
    fake = types.ModuleType("confluent_kafka")
    fake.Consumer, fake.Producer = _Consumer, _Producer
    monkeypatch.setitem(sys.modules, "confluent_kafka", fake)
    monkeypatch.setenv("LAGWATCH_INGEST_TOKEN", "doc-token")
    s = IngestServer()
    try:
        yield s
    finally:
        s.close()


def run(snippet: str, server: IngestServer) -> dict[str, Any]:
    """Run one snippet; a snippet using the ``sender`` of an earlier one gets one."""
    code = snippet.replace(DOC_URL, server.url)
    sender = IngestSender(server.url, "doc-token", flush_interval_s=0.1)
    namespace: dict[str, Any] = {"__name__": "snippet", "sender": sender}
    exec(compile(code, "<snippet>", "exec"), namespace)  # noqa: S102 - our own docs
    for s in {id(namespace["sender"]): namespace["sender"], id(sender): sender}.values():
        assert s.close(10)
    return namespace


def test_the_ingest_docs_snippets_run_and_push_what_the_docs_say(server: IngestServer) -> None:
    consumer, producer, spout = snippets(REPO / "docs/INGEST.md")

    run(consumer, server)
    (got,) = server.received
    assert got.path == "/api/v1/ingest/lab/librdkafka?group=billing"
    assert got.headers["Authorization"] == "Bearer doc-token"
    assert got.body["name"] == "billing-1#consumer-1"

    server.received.clear()
    ns = run(producer, server)
    (got,) = server.received
    assert got.path == "/api/v1/ingest/lab/librdkafka"
    assert got.body["lagwatch_deliveries"] == {
        "instance": ns["stats"].deliveries.instance,
        "counts": [{"topic": "orders", "partition": 0, "delivered": 1, "failed": {}}],
    }

    server.received.clear()
    run(spout, server)
    (got,) = server.received
    assert got.path == "/api/v1/ingest/lab/spout"
    documented = json.loads(
        re.search(r"```json\n(\{\n  \"topology_id\".*?)```", (REPO / "docs/INGEST.md").read_text(),
                  re.S).group(1)  # fmt: skip
    )
    assert got.body["time_ms"] > documented["time_ms"]
    for doc in (got.body, documented):
        doc.pop("time_ms")
        doc.pop("max_offset_behind", None)
    assert got.body == documented, "the snippet pushes the documented example"


def test_the_package_readme_snippet_runs(server: IngestServer) -> None:
    (snippet,) = snippets(REPO / "clients/python/README.md")
    run(snippet, server)
    assert [r.path for r in server.received] == ["/api/v1/ingest/lab/librdkafka?group=billing"]
