"""The client package as a user gets it: built and installed by pip from ``clients/python``
(offline: no index, the venv's setuptools and wheel), imported from where pip put it by a
process of its own, pushing to the real ingest endpoint of a live Django server. A real
librdkafka producer whose broker never answers has its records expire: its statistics
arrive with the delivery-report counts, and a spout report arrives beside them."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.utils import timezone

from dashboard.ingest.store import recent_reports
from dashboard.monitoring.models import Cluster
from tests.clients.ingest_server import free_port

REPO = Path(__file__).resolve().parents[2]
TOKEN = "s3cret-ingest-token"

# Run by the installed package's own interpreter process: argv = target, url, token, port.
USER_PROGRAM = r"""
import json, sys

import lagwatch_client
from confluent_kafka import Producer
from lagwatch_client import (DeliveryCounts, IngestSender, SpoutPartition, SpoutPusher,
                             SpoutReport, StatsForwarder)

target, url, token, port = sys.argv[1:5]
sender = IngestSender(url, token, flush_interval_s=0.2)
stats = StatsForwarder(sender, deliveries=DeliveryCounts())
handed = []

def stats_cb(doc):
    handed.append(1)
    stats(doc)

producer = Producer({
    "bootstrap.servers": f"127.0.0.1:{port}", "client.id": "installed-client",
    "message.timeout.ms": 1000, "statistics.interval.ms": 200,
    "on_delivery": stats.deliveries.on_delivery, "stats_cb": stats_cb,
})
for i in range(5):
    producer.produce("orders", value=str(i).encode(), partition=i % 2)
assert producer.flush(60) == 0, "every record has its delivery report"
after = len(handed)
while len(handed) < after + 1:  # a statistics document after the last report
    producer.poll(0.2)
SpoutPusher(sender).push(SpoutReport(
    "orders-topology-3-1700000000", "orders-spout", 1000, pending=4,
    partitions=[SpoutPartition("orders", 0, pending=4, failed=1, acked=90,
                               smallest_failed_offset=17)],
))
delivered = sender.close(30)
print(json.dumps({"delivered": delivered, "status": sender.status(),
                  "module": lagwatch_client.__file__, "version": lagwatch_client.__version__}))
"""


def test_pip_installs_the_package_offline(tmp_path: Path) -> None:
    target = install(tmp_path)
    assert (target / "lagwatch_client" / "__init__.py").is_file()
    assert (target / "lagwatch_client" / "py.typed").is_file()
    (dist,) = target.glob("lagwatch_client-*.dist-info")
    metadata = (dist / "METADATA").read_text()
    assert "Name: lagwatch-client" in metadata
    required = [
        line for line in metadata.splitlines()
        if line.startswith("Requires-Dist:") and "extra ==" not in line
    ]  # fmt: skip
    assert required == [], "no dependency, Django least"
    assert not any(target.glob("django*")), "nothing of Django installed with it"


def test_the_installed_package_pushes_to_the_ingest_endpoint(
    tmp_path: Path, live_server: Any, settings: Any
) -> None:
    settings.LAGWATCH_INGEST_TOKEN = TOKEN
    settings.LAGWATCH_INGEST_MAX_BYTES = 1024 * 1024
    cluster = Cluster.objects.create(name="installed")
    target = install(tmp_path)
    url = f"{live_server.url}/api/v1/ingest/{cluster.name}"
    env = {**os.environ, "PYTHONPATH": str(target)}
    run = subprocess.run(
        [sys.executable, "-c", USER_PROGRAM, str(target), url, TOKEN, str(free_port())],
        capture_output=True, text=True, timeout=180, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert Path(out["module"]).is_relative_to(target), "imported from where pip installed it"
    assert out["delivered"] is True
    assert out["status"]["posted_by_endpoint"]["spout"] == 1
    assert out["status"]["refused"] == 0

    doc = lagwatch_status()
    rows = sorted(
        (r["client_id"], r["partition"] if "partition" in r else r["topic"], r["expired"])
        for r in doc["producers"]
    )
    assert rows == [("installed-client", "orders", 5)], doc["producers"]
    (row,) = doc["producers"]
    assert (row["delivered"], row["failed"]) == (0, 0)

    reports, figures = recent_reports(cluster, timezone.now(), 60)
    assert [r.client_id for r in reports] == ["installed-client"]
    assert [(f.spout_id, f.partition, f.acked, f.smallest_failed_offset) for f in figures] == [
        ("orders-spout", 0, 90, 17)]  # fmt: skip


def install(tmp_path: Path) -> Path:
    """``pip install --target`` from the checkout's folder, with nothing from the network."""
    target = tmp_path / "site"
    run = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-build-isolation", "--no-index",
         "--disable-pip-version-check", "--target", str(target), str(REPO / "clients/python")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    return target


def lagwatch_status() -> dict:
    out = io.StringIO()
    call_command("lagwatch_status", "--json", stdout=out)
    return json.loads(out.getvalue())


pytestmark = pytest.mark.django_db(transaction=True)
