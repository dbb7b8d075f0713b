"""Fuzzed pushes to the ingest endpoint (docs/INGEST.md), through Django's test client with the
ingest token: librdkafka statistics and spout figures, valid, spoiled, or not JSON at all.

Properties: a valid push is stored (202) and read back by the collection cycle as sent; any
other body is a 4xx whose ``error`` names the field at fault, never a 500; a refused push
leaves every stored report as it was.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from dashboard.ingest.store import recent_reports
from dashboard.monitoring.models import ClientReportRow, Cluster
from tests.fuzz import strategies as fs

TOKEN = "fuzz-ingest-token"
CLUSTER = "fuzz"
# An error message starts with the path of the field at fault ("partitions.0.pending: ...",
# "type: ...", "document: ...") or says what is wrong with the body as a whole.
_PATH_MESSAGE = re.compile(r".+?: \S", re.DOTALL)  # names may hold newlines
_BODY_MESSAGES = ("empty body", "body is not valid JSON", "body exceeds", "body of ")


def ingest_cluster() -> Cluster:
    return Cluster.objects.get_or_create(name=CLUSTER)[0]


def _stored() -> list[dict[str, Any]]:
    return list(ClientReportRow.objects.order_by("pk").values())


def push(client: Client, kind: str, body: bytes, query: dict[str, str] | None = None):
    return client.post(
        f"/api/v1/ingest/{CLUSTER}/{kind}",
        body,
        content_type="application/json",
        query_params=query or {},
        headers={"Authorization": f"Bearer {TOKEN}"},
    )


def encode(doc: Any) -> bytes:
    return fs.dumps(doc).encode("utf-8", "surrogatepass")


def check_push(client: Client, kind: str, body: bytes, query: dict | None = None) -> str:
    """One push and its properties: "accepted" or "refused" (AssertionError if broken; an
    exception raised in the view escapes, as the test client re-raises it)."""
    before = _stored()
    response = push(client, kind, body, query)
    assert response.status_code < 500, (response.status_code, response.content[:300])
    data = response.json()
    if response.status_code == 202:
        assert isinstance(data["accepted"], int) and data["accepted"] >= 0
        return "accepted"
    assert response.status_code in (400, 413), (response.status_code, data)
    message = data["error"]
    assert isinstance(message, str) and message
    assert message.startswith(_BODY_MESSAGES) or _PATH_MESSAGE.match(message), message
    assert _stored() == before, "a refused push changed the stored reports"
    return "refused"


def check_spout_round_trip(client: Client, doc: dict) -> None:
    assert check_push(client, "spout", encode(doc)) == "accepted"
    _, figures = recent_reports(ingest_cluster(), timezone.now(), 3600)
    mine = [f for f in figures if (f.topology_id, f.spout_id) == (doc["topology_id"],
                                                                  doc["spout_id"])]  # fmt: skip
    assert len(mine) == len(doc["partitions"])
    by_key = {(f.topic, f.partition): f for f in mine}
    for p in doc["partitions"]:
        f = by_key[p["topic"], p["partition"]]
        assert (f.pending, f.failed, f.acked) == (p["pending"], p["failed"], p["acked"])
        assert f.emitted == p.get("emitted")
        assert f.smallest_failed_offset == p["smallest_failed_offset"]
        behind = p.get("max_offset_behind")
        assert f.max_offset_behind == (behind if behind is not None
                                       else doc.get("max_offset_behind"))  # fmt: skip
        assert f.max_spout_pending == doc["max_spout_pending"]
        assert f.spout_pending == doc.get("pending")
        if doc.get("time_ms"):
            assert f.time_ms == doc["time_ms"]


def check_librdkafka_round_trip(client: Client, doc: dict, group: str) -> None:
    host = "fuzz-host"
    query = {"group": group, "host": host}
    assert check_push(client, "librdkafka", encode(doc), query) == "accepted"
    clients, _ = recent_reports(ingest_cluster(), timezone.now(), 3600)
    declared = group.strip() or None  # what the endpoint keeps of a declared group
    report = next(r for r in reversed(clients)
                  if (r.name, r.group, r.host) == (doc["name"], declared, host))  # fmt: skip
    assert (report.kind, report.client_id) == (doc["type"], doc["client_id"])
    sent = {
        (topic, int(key)): p
        for topic, t in doc["topics"].items()
        for key, p in t["partitions"].items()
        if int(key) != -1
    }
    if doc["type"] == "consumer":
        desired = sorted(k for k, p in sent.items() if p["desired"])
        assert list(report.assignment) == desired
        assert [(p.topic, p.partition) for p in report.partitions] == desired
    else:
        assert sorted((p.topic, p.partition) for p in report.partitions) == sorted(sent)
    for p in report.partitions:
        committed = sent[p.topic, p.partition].get("committed_offset")
        assert p.committed == (committed if committed is not None and committed >= 0 else None)


@pytest.fixture
def ingest(db: None, settings: Any, client: Client) -> Client:
    settings.LAGWATCH_INGEST_TOKEN = TOKEN
    settings.LAGWATCH_INGEST_MAX_BYTES = 64 * 1024
    ingest_cluster()
    return client


@given(doc=fs.spout_pushes())
def test_valid_spout_push_is_stored_as_sent(ingest: Client, doc: dict) -> None:
    check_spout_round_trip(ingest, doc)


@given(doc=fs.librdkafka_stats(), group=fs.long_names)
def test_valid_librdkafka_push_is_stored_as_sent(ingest: Client, doc: dict, group: str) -> None:
    check_librdkafka_round_trip(ingest, doc, group)


@given(doc=fs.spoiled(fs.spout_pushes()) | fs.edge_numbered(fs.spout_pushes()) | fs.json_values)
def test_spoiled_spout_push_is_a_400_naming_the_field(ingest: Client, doc: Any) -> None:
    check_push(ingest, "spout", encode(doc))


@given(
    doc=fs.spoiled(fs.librdkafka_stats())
    | fs.edge_numbered(fs.librdkafka_stats())
    | fs.json_values,
    # (Query strings are UTF-8: no surrogates there.)
    query=st.fixed_dictionaries({}, optional={"group": st.text(max_size=300),
                                              "host": st.text(max_size=300)}),
)  # fmt: skip
def test_spoiled_librdkafka_push_is_a_400_naming_the_field(
    ingest: Client, doc: Any, query: dict
) -> None:
    check_push(ingest, "librdkafka", encode(doc), query)


@given(
    kind=st.sampled_from(("spout", "librdkafka")),
    body=st.binary(max_size=200)
    | st.sampled_from([b"", b"[" * 100_000, b"1" * 5000, b"\xff\xfe{\x00}\x00", b"{" * 10]),
)
def test_body_that_is_not_json_is_a_400(ingest: Client, kind: str, body: bytes) -> None:
    check_push(ingest, kind, body)


# Found by the fuzzing, fixed in dashboard/ingest/views.py: JSON may escape a lone
# surrogate ("\ud800"), which no database takes; the push was a 500 once it reached the store.
@pytest.mark.parametrize(
    ("kind", "body", "query"),
    [
        ("spout", {"topology_id": "\ud800", "spout_id": "s", "max_spout_pending": None,
                   "partitions": []}, {}),
        ("spout", {"topology_id": "t", "spout_id": "s", "max_spout_pending": None,
                   "partitions": [{"topic": "a\udfffb", "partition": 0, "pending": 0,
                                   "failed": 0, "acked": 0, "smallest_failed_offset": None}]},
         {}),
        ("librdkafka", {"type": "producer", "name": "p\ud800", "client_id": "c"}, {}),
    ],
    ids=["topology_id", "topic", "name"],
)  # fmt: skip
def test_lone_surrogates_are_refused_naming_the_field(
    ingest: Client, kind: str, body: dict, query: dict
) -> None:
    response = push(ingest, kind, json.dumps(body).encode(), query)
    assert response.status_code == 400
    assert "not valid Unicode" in response.json()["error"]
