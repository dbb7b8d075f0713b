"""/metrics served from the published exposition: the same series and values as a scrape that
builds everything itself, over hand-made and random worlds, in both formats, gzipped or not."""

from __future__ import annotations

import gzip
import json
import random
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as om_families,
)
from prometheus_client.parser import text_string_to_metric_families

from dashboard.api.metrics import exposition
from dashboard.monitoring.models import Cluster, ConsumerGroup, PartitionState
from tests.api.world import HOSTILE, World

pytestmark = pytest.mark.django_db

OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"
# Read at each scrape: differ between two scrapes by the time between them.
PER_SCRAPE = {"lagwatch_metrics_collect_seconds", "lagwatch_metrics_exposition_age_seconds"}


@pytest.fixture
def published(settings, tmp_path: Path) -> Path:
    settings.LAGWATCH_METRICS_PREBUILT = True
    settings.LAGWATCH_METRICS_DIR = str(tmp_path / "metrics")
    return tmp_path / "metrics"


def scrape(client: Client, query: str = "", accept: str = "", gzipped: bool = False):
    headers = {"Accept": accept} if accept else {}
    if gzipped:
        headers["Accept-Encoding"] = "gzip, deflate"
    response = client.get(f"/metrics{query}", headers=headers)
    assert response.status_code == 200
    body = response.content
    if gzipped:
        assert response["Content-Encoding"] == "gzip"
        body = gzip.decompress(body)  # every member, as Go's and Python's readers do
    else:
        assert not response.has_header("Content-Encoding")
    return response, body.decode()


def samples(text: str, openmetrics: bool = False) -> tuple[dict, dict]:
    """(name, labels) -> value, and family name -> (type, help), with the per-scrape
    families out and ages rounded (they run with the clock between the two scrapes)."""
    values, families = {}, {}
    parse = om_families if openmetrics else text_string_to_metric_families
    for family in parse(text):
        if family.name in PER_SCRAPE:
            continue
        families[family.name] = (family.type, family.documentation)
        for s in family.samples:
            value = s.value
            if s.name.endswith("_age_seconds"):
                value = round(value / 60)
            values[(s.name, tuple(sorted(s.labels.items())))] = value
    return values, families


def series_value(text: str, name: str) -> float:
    (line,) = [line for line in text.splitlines() if line.startswith(name + " ")]
    return float(line.split()[1])


def random_world(seed: int) -> None:
    rng = random.Random(seed)
    now = timezone.now()
    names = ["a", "b.c", HOSTILE, "ü-group", 'q"uote', "x" * 200]
    for c in range(rng.randint(1, 3)):
        cluster = Cluster.objects.create(
            name=f"c{c}-{seed}", retention_risk_s=rng.choice([60, 3600])
        )
        for g in range(rng.randint(0, 5)):
            status = rng.choice(["OK", "WARN", "ERR", "STOP", "STALL", "REWIND", "UNKNOWN"])
            group = ConsumerGroup.objects.create(
                cluster=cluster, source=rng.choice(["kafka", "zookeeper", "storm"]),
                name=f"{rng.choice(names)}-{g}", status=status,
                complete=rng.choice([None, 0.5, 1.0]), stale=rng.random() < 0.2,
                members=[{"member_id": "m"}] * rng.randint(0, 3),
                generation=rng.choice([None, 1, 7]), first_seen_at=now - timedelta(days=1),
                last_seen_at=now,
            )  # fmt: skip
            for p in range(rng.randint(0, 8)):
                committed = rng.choice([None, rng.randint(0, 10**6)])
                latest = rng.randint(0, 2 * 10**6)
                PartitionState.objects.create(
                    group=group, topic=rng.choice(["t1", 'to"pic\\', "t-ü"]), partition=p,
                    committed=committed, latest=latest, earliest=0,
                    lag=None if committed is None else latest - committed,
                    time_lag_s=rng.choice([None, rng.random() * 1000]),
                    retention_left_s=rng.choice([None, rng.randint(0, 10**5)]),
                    status=rng.choice(["OK", "ERR", "STALL", "UNKNOWN"]), sampled_at=now,
                    last_commit_at=rng.choice([None, now - timedelta(seconds=rng.randint(1, 99))]),
                )  # fmt: skip


VARIANTS = [
    (query, accept, gzipped)
    for query in ("", "?partitions=false")
    for accept in ("", OPENMETRICS)
    for gzipped in (False, True)
]


def assert_same_as_inline(client: Client, settings) -> None:
    for query, accept, gzipped in VARIANTS:
        openmetrics = bool(accept)
        response, text = scrape(client, query, accept, gzipped)
        assert series_value(text, "lagwatch_metrics_exposition_age_seconds") > 0, "not published"
        settings.LAGWATCH_METRICS_PREBUILT = False
        inline_response, inline = scrape(client, query, accept)
        settings.LAGWATCH_METRICS_PREBUILT = True
        assert response["Content-Type"] == inline_response["Content-Type"]
        assert samples(text, openmetrics) == samples(inline, openmetrics), (query, accept)
        if openmetrics:
            assert text.endswith("# EOF\n") and text.count("# EOF") == 1


def test_the_published_exposition_serves_what_inline_builds(
    client: Client, world: World, published: Path, settings
) -> None:
    exposition.build()
    time.sleep(0.01)  # an age above zero tells the published path from the inline one
    assert_same_as_inline(client, settings)
    _, text = scrape(client)
    assert 'group="billing",partition="1",source="kafka",topic="invoices"} 400.0' in text


@pytest.mark.parametrize("seed", range(8))
def test_random_worlds_give_the_same_figures(
    client: Client, published: Path, settings, seed: int
) -> None:
    random_world(seed)
    exposition.build()
    time.sleep(0.01)
    assert_same_as_inline(client, settings)


def test_a_stale_or_missing_exposition_is_built_by_the_scrape(
    client: Client, world: World, published: Path, settings
) -> None:
    _, text = scrape(client)  # nothing published yet
    assert series_value(text, "lagwatch_metrics_exposition_age_seconds") == 0
    exposition.build()
    PartitionState.objects.filter(group__name="billing", partition=1).update(lag=777)
    _, text = scrape(client)  # published, older than the change: served as built
    assert series_value(text, "lagwatch_metrics_exposition_age_seconds") > 0
    assert 'partition="1",source="kafka",topic="invoices"} 400.0' in text
    manifest = published / "manifest.json"
    doc = json.loads(manifest.read_text())
    doc["built_at"] -= settings.LAGWATCH_METRICS_MAX_AGE_S + 1
    manifest.write_text(json.dumps(doc))
    _, text = scrape(client)  # too old: the scrape builds, and sees the change
    assert series_value(text, "lagwatch_metrics_exposition_age_seconds") == 0
    assert 'partition="1",source="kafka",topic="invoices"} 777.0' in text


def test_builds_replace_the_set_atomically_and_prune_old_ones(
    world: World, published: Path
) -> None:
    sets = [exposition.build() for _ in range(5)]
    assert json.loads((published / "manifest.json").read_text())["set"] == sets[-1].name
    kept = sorted(p.name for p in published.glob("set-*"))
    assert kept == sorted(s.name for s in sets[-3:])
    assert not list(published.glob(".*")), "no staging left behind"
    files = sorted(p.name for p in sets[-1].iterdir())
    assert files == sorted(
        ["clusters"]
        + [
            f"{kind}.{part}{gz}"
            for kind in ("openmetrics", "text")
            for part in ("groups", "partitions")
            for gz in ("", ".gz")
        ]
    )
    assert len(list((sets[-1] / "clusters").iterdir())) == 2  # prod and staging


def test_an_older_build_finishing_last_does_not_replace_a_newer_one(
    world: World, published: Path
) -> None:
    newer = exposition.build()
    doc = json.loads((published / "manifest.json").read_text())
    doc["built_at"] += 3600  # as if a build that started later had published first
    (published / "manifest.json").write_text(json.dumps(doc))
    exposition.build()
    assert json.loads((published / "manifest.json").read_text())["set"] == newer.name


@pytest.mark.parametrize(
    ("header", "gzipped"),
    [
        ("", False), ("gzip", True), ("deflate, gzip;q=1.0", True), ("gzip;q=0", False),
        ("GZIP", True), ("identity", False), ("x-gzip", True), ("br", False),
    ],
)  # fmt: skip
def test_gzip_only_when_accepted(header: str, gzipped: bool) -> None:
    from dashboard.api.metrics.views import _accepts_gzip

    assert _accepts_gzip(header) is gzipped


def test_the_live_families_are_read_at_most_once_a_second(
    client: Client, world: World, published: Path, monkeypatch
) -> None:
    from dashboard.monitoring.models import SourceHealth

    monkeypatch.setattr(exposition, "LIVE_REFRESH_S", 3600.0)  # "within the second", however slow
    exposition.build()
    first = scrape(client)[1]
    SourceHealth.objects.update(consecutive_failures=41)
    assert scrape(client)[1] == first  # within the refresh: the same body
    monkeypatch.setattr(exposition, "LIVE_REFRESH_S", 0.0)
    exposition.served_body(("flush",), lambda: b"")  # a refresh of 0 s: every scrape reads
    again = scrape(client)[1]
    assert "lagwatch_source_consecutive_failures" in again and " 41.0" in again


def test_concurrent_scrapes_make_the_body_once(monkeypatch) -> None:
    import threading

    monkeypatch.setattr(exposition, "LIVE_REFRESH_S", 3600.0)  # no expiry while threads start

    made = []
    started = threading.Barrier(8)

    def make() -> bytes:
        made.append(1)
        time.sleep(0.2)
        return b"body"

    def scrape_once(out: list) -> None:
        started.wait()
        out.append(exposition.served_body(("set-x", "text", True, False), make))

    out: list = []
    threads = [threading.Thread(target=scrape_once, args=(out,)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == [b"body"] * 8 and len(made) == 1


# --- the build requests, on a real Redis ---------------------------------------------------


@pytest.fixture
def queued(redis_url: str, settings, published: Path, monkeypatch) -> list:
    """The build tasks sent to the Celery broker (recorded here: the test has no worker)."""
    from dashboard import locks
    from dashboard.api.metrics.tasks import build_metrics_exposition

    settings.REDIS_URL = redis_url
    locks._client = None
    locks.client().flushdb()
    sent: list = []
    monkeypatch.setattr(build_metrics_exposition, "apply_async", lambda **kw: sent.append(kw))
    yield sent
    locks._client = None


def test_requests_while_one_is_queued_fold_into_it(queued: list, world: World) -> None:
    from dashboard.signals import announce_figures

    for _ in range(5):  # five clusters' cycles stored together
        announce_figures(cluster="prod")
    assert queued == [{}]
    assert exposition.build_once() is not None  # the task: clears the request, builds
    announce_figures(cluster="prod")  # a write after the build started asks for the next
    assert len(queued) == 2


def test_a_build_running_elsewhere_is_followed_not_doubled(
    queued: list, world: World, published: Path
) -> None:
    from dashboard.locks import exclusive

    with exclusive("lagwatch:metrics:building", 60) as mine:  # another worker's build
        assert mine
        assert exposition.build_once() is None
    assert not list(published.glob("set-*")) and len(queued) == 1  # asked for the next one
    assert exposition.build_once() is not None


def test_no_redis_means_scrapes_build_inline(client: Client, world: World, published: Path,
                                             settings) -> None:  # fmt: skip
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    from dashboard import locks

    locks._client = None
    try:
        _, text = scrape(client)  # asks for a build, which fails: logged, the scrape answers
    finally:
        locks._client = None
    assert series_value(text, "lagwatch_metrics_exposition_age_seconds") == 0


def lag_of(client: Client, cluster: str, group: str) -> float:
    _, text = scrape(client)
    (line,) = [
        line for line in text.splitlines()
        if line.startswith("lagwatch_partition_lag{") and f'cluster="{cluster}"' in line
        and f'group="{group}"' in line and 'partition="1"' in line
    ]  # fmt: skip
    return float(line.split()[-1])


def test_a_cycle_s_build_reads_its_own_cluster_only(
    client: Client, world: World, published: Path, settings
) -> None:
    east = Cluster.objects.create(name="east")
    orders = ConsumerGroup.objects.create(cluster=east, source="kafka", name="orders",
                                          status="OK", first_seen_at=world.now, last_seen_at=world.now)  # fmt: skip
    PartitionState.objects.create(group=orders, topic="o", partition=1, committed=0, latest=5,
                                  lag=5, status="OK", sampled_at=world.now)  # fmt: skip
    exposition.build()
    PartitionState.objects.filter(group__name="billing", partition=1).update(lag=401)
    PartitionState.objects.filter(group=orders).update(lag=6)

    exposition.build(clusters={"prod"})
    time.sleep(0.01)
    assert json.loads((published / "manifest.json").read_text())["read"] == ["prod"]
    assert lag_of(client, "prod", "billing") == 401  # read again
    assert lag_of(client, "east", "orders") == 5  # east's series taken from the set before
    exposition.build(clusters={"east"})
    time.sleep(0.01)
    assert (lag_of(client, "prod", "billing"), lag_of(client, "east", "orders")) == (401, 6)
    assert_same_as_inline(client, settings)

    west = Cluster.objects.create(name="west")  # no pieces yet: read whatever was asked for
    ConsumerGroup.objects.create(cluster=west, source="kafka", name="w", status="OK",
                                 first_seen_at=world.now, last_seen_at=world.now)  # fmt: skip
    east.delete()  # gone: its pieces are not carried over
    exposition.build(clusters={"prod"})
    time.sleep(0.01)
    assert json.loads((published / "manifest.json").read_text())["read"] == ["prod", "west"]
    _, text = scrape(client)
    assert 'cluster="east"' not in text and 'cluster="west"' in text
    assert_same_as_inline(client, settings)


def test_cycles_ask_for_their_cluster_and_runs_for_every_one(queued: list, world: World) -> None:
    from dashboard.signals import announce_figures

    assert exposition.take_requested() is None  # nothing asked: a whole build
    announce_figures(cluster="prod")
    announce_figures(cluster="staging")
    announce_figures(cluster="prod")
    assert len(queued) == 1  # folded into one build
    assert exposition.take_requested() == {"prod", "staging"}
    assert exposition.take_requested() is None  # taken: emptied
    announce_figures(cluster="prod")
    announce_figures(run=object())  # a Spark run may change any cluster
    assert exposition.take_requested() is None
