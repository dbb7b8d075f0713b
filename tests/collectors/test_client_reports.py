"""The stored form of pushed reports: what the ingest store keeps survives its JSON column."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from collectors.client_reports import (
    client_report_from_dict,
    client_report_to_dict,
    spout_figures_from_dict,
    spout_figures_to_dict,
)
from collectors.ingest_parsing import parse_librdkafka_stats, parse_spout_report
from tests.collectors.ingest_documents import RECEIVED_MS, consumer_doc, producer_doc, spout_doc


@pytest.mark.parametrize("make", [consumer_doc, producer_doc])
def test_reports_survive_the_json_round_trip_of_the_store(make: Callable[[], Any]) -> None:
    report = parse_librdkafka_stats(make(), "billing", RECEIVED_MS, host="10.0.0.21")
    stored = json.loads(json.dumps(client_report_to_dict(report)))
    assert client_report_from_dict(stored) == report


def test_stored_reports_tolerate_fields_from_a_newer_writer() -> None:
    report = parse_librdkafka_stats(consumer_doc(), None, RECEIVED_MS)
    stored = client_report_to_dict(report) | {"new_field": 1}
    stored["partitions"][0]["new_partition_field"] = 2
    assert client_report_from_dict(stored) == report


def test_spout_figures_survive_the_json_round_trip() -> None:
    for fig in parse_spout_report(spout_doc(), RECEIVED_MS):
        stored = json.loads(json.dumps(spout_figures_to_dict(fig)))
        assert spout_figures_from_dict(stored | {"later": 1}) == fig
