"""``/metrics`` served from an exposition built once per stored cycle or Spark run.

Encoding every per-partition series at each scrape cost 0.85 CPU-s at 10,000 partitions, and
32 scrapers queued to a p99 of ~28 s, for figures that change only when a cycle is stored or
a status or rollups run is applied. So those writers signal ``figures_stored``; a debounced
Celery task (``build_metrics_exposition``) collects the bulk families once
(``LagwatchCollector.bulk``), encodes them in both formats, gzips them, and publishes the set
atomically under ``LAGWATCH_METRICS_DIR``. A scrape then reads the published bytes (kept in
process memory until the next set) and adds the small live families (ages, sources, jobs,
spouts, producers), read at most once a second per process. Same series and values as
building everything per scrape.

A stored cycle asks for its own cluster (``request_build(cluster)``): the build then reads and
encodes that cluster's groups and partitions only, and takes every other cluster's encoded
series from the set before (``pieces.py``); a Spark run, which may change any cluster, or a set
without those pieces asks for everything.

The file, not process memory, is what gunicorn's workers and the Celery worker share. A scrape
builds inline, as before, when no set younger than ``LAGWATCH_METRICS_MAX_AGE_S`` exists (no
worker running, the first scrape after start) or when the feature is off. Direct database
edits (the admin deleting a group) show from the next cycle's build.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from django.conf import settings
from django.utils import timezone
from prometheus_client import exposition as text_format
from prometheus_client.core import Metric
from prometheus_client.openmetrics import exposition as om_format

from dashboard.api.metrics import pieces
from dashboard.api.metrics.collector import LagwatchCollector

log = logging.getLogger(__name__)

KINDS = ("text", "openmetrics")
_PARTITION_PREFIX = "lagwatch_partition_"
_EOF = b"# EOF\n"
_MANIFEST = "manifest.json"
_KEEP_SETS = 3  # a reader that listed the previous set still finds its files
_REQUESTED_KEY = "lagwatch:metrics:build-requested"
_DIRTY_KEY = "lagwatch:metrics:dirty"  # the clusters the next build must read again
_EVERY_CLUSTER = "*"
_PIECES = "clusters"


class _Families:
    """What prometheus_client's encoders take: anything with ``collect()``."""

    def __init__(self, families: Iterable[Metric]) -> None:
        self.families = list(families)

    def collect(self) -> list[Metric]:
        return self.families


def encode(kind: str, families: Iterable[Metric]) -> bytes:
    """The families in one format, without OpenMetrics' ``# EOF`` (added once per body)."""
    if kind == "openmetrics":
        body = om_format.generate_latest(_Families(families))
        return body[: -len(_EOF)] if body.endswith(_EOF) else body
    return text_format.generate_latest(_Families(families))


def finish(kind: str, body: bytes) -> bytes:
    return body + _EOF if kind == "openmetrics" else body


def kind_of(content_type: str) -> str:
    return "openmetrics" if content_type.startswith("application/openmetrics-text") else "text"


def build(directory: Path | None = None, clusters: Collection[str] | None = None) -> Path:
    """Collects the bulk families and publishes them: per format, the group families and
    the partition families as separate bodies (``?partitions=false`` serves the first only),
    plain and gzipped. ``clusters``: only these are read again, every other cluster's series
    come from the set before (all are read when it has none of a cluster's). Returns the
    published set's folder."""
    directory = Path(directory or settings.LAGWATCH_METRICS_DIR)
    directory.mkdir(parents=True, exist_ok=True)
    built_at = time.time()
    from dashboard.monitoring.models import Cluster

    known = sorted(Cluster.objects.values_list("name", flat=True))
    current = _read_manifest(directory)
    before = directory / current["set"] / _PIECES if current else None
    if clusters is None or before is None or not before.is_dir():
        fresh = set(known)
    else:
        missing = {c for c in known if not (before / pieces.file_name(c)).exists()}
        fresh = (set(clusters) & set(known)) | missing
    families = list(LagwatchCollector(partitions=True, clusters=fresh).bulk(timezone.now()))
    mains = {kind: pieces.headers(families, partial(encode, kind)) for kind in KINDS}
    shares = pieces.by_cluster(families)
    name = f"set-{time.time_ns()}-{os.getpid()}"
    staging = directory / f".{name}"
    (staging / _PIECES).mkdir(parents=True)
    per_cluster = []
    for cluster in known:
        file = staging / _PIECES / pieces.file_name(cluster)
        if cluster in fresh:
            kinds = {
                kind: pieces.sections(
                    shares.get(cluster, []), partial(encode, kind), {m for m, _ in mains[kind]}
                )
                for kind in KINDS
            }
            pieces.write(file, cluster, kinds)
        else:
            assert before is not None
            _, kinds = pieces.read(before / pieces.file_name(cluster))
            shutil.copyfile(before / pieces.file_name(cluster), file)
        per_cluster.append(kinds)
    for kind in KINDS:
        for part in ("groups", "partitions"):
            chosen = [
                (main, header)
                for main, header in mains[kind]
                if main.startswith(_PARTITION_PREFIX) == (part == "partitions")
            ]
            body = pieces.assemble(chosen, [c.get(kind, {}) for c in per_cluster])
            (staging / f"{kind}.{part}").write_bytes(body)
            (staging / f"{kind}.{part}.gz").write_bytes(gzip.compress(body, compresslevel=5))
    os.replace(staging, directory / name)
    manifest = directory / f".{_MANIFEST}.{os.getpid()}"
    manifest.write_text(json.dumps({"set": name, "built_at": built_at, "read": sorted(fresh)}))
    newest = _read_manifest(directory)
    if newest is not None and newest["built_at"] > built_at:
        manifest.unlink()  # a build that started later published already
    else:
        os.replace(manifest, directory / _MANIFEST)
    _prune(directory)
    return directory / name


def _read_manifest(directory: Path) -> dict | None:
    try:
        return json.loads((directory / _MANIFEST).read_text())
    except (OSError, ValueError):
        return None


def _prune(directory: Path) -> None:
    sets = sorted(p for p in directory.glob("set-*") if p.is_dir())
    current = (_read_manifest(directory) or {}).get("set")
    for old in sets[:-_KEEP_SETS]:
        if old.name != current:
            shutil.rmtree(old, ignore_errors=True)


@dataclass
class _Published:
    name: str
    built_at: float
    bodies: dict[str, bytes]


_published: _Published | None = None


def published_bulk(
    kind: str, partitions: bool, gzipped: bool
) -> tuple[list[bytes], float, str] | None:
    """The published bodies a scrape needs (group then partition families), their age in
    seconds and the set's name; None when the scrape must build inline (off, none
    published, too old)."""
    global _published
    if not settings.LAGWATCH_METRICS_PREBUILT:
        return None
    directory = Path(settings.LAGWATCH_METRICS_DIR)
    manifest = _read_manifest(directory)
    if manifest is None:
        return None
    age = time.time() - float(manifest["built_at"])
    if age > settings.LAGWATCH_METRICS_MAX_AGE_S:
        return None
    if _published is None or _published.name != manifest["set"]:
        _published = _Published(manifest["set"], float(manifest["built_at"]), {})
    parts = ["groups", "partitions"] if partitions else ["groups"]
    bodies = []
    for part in parts:
        file = f"{kind}.{part}" + (".gz" if gzipped else "")
        if file not in _published.bodies:
            try:
                _published.bodies[file] = (directory / _published.name / file).read_bytes()
            except OSError:
                return None  # pruned under us: a newer set exists, build inline this once
        bodies.append(_published.bodies[file])
    return bodies, max(age, 0.0), _published.name


LIVE_REFRESH_S = 1.0
_bodies: dict[tuple, tuple[float, bytes]] = {}
_bodies_lock = threading.Lock()


def served_body(key: tuple, make: Callable[[], bytes]) -> bytes:
    """The whole response body for ``key`` (the published set, format, variant, encoding),
    made at most once per ``LIVE_REFRESH_S`` per process: concurrent scrapes wait for the one
    making it instead of each reading the live families (a stampede of 32 scrapers read them
    32 times). The live figures served are thus up to a second old, as if scraped then."""
    now = time.monotonic()
    cached = _bodies.get(key)
    if cached is not None and cached[0] > now:
        return cached[1]
    with _bodies_lock:
        cached = _bodies.get(key)
        if cached is not None and cached[0] > time.monotonic():
            return cached[1]
        body = make()
        for old in [k for k in _bodies if k[0] != key[0]]:
            del _bodies[old]  # another set's bodies: never served again
        _bodies[key] = (time.monotonic() + LIVE_REFRESH_S, body)
        return body


_BUILDING_KEY = "lagwatch:metrics:building"


def request_build(cluster: str | None = None) -> None:
    """Asks for one build of ``cluster``'s figures (None: every cluster's): requests made while
    one is queued are folded into it, their clusters together (the task clears the flag when
    it starts, so a write during a build asks for the next). Sent without a countdown: a
    worker holding an ETA message when Redis went away died in kombu's restore of unacked
    messages (tests/lab/test_production_run.py, Redis stopped under beat)."""
    if not settings.LAGWATCH_METRICS_PREBUILT:
        return
    from dashboard.locks import client

    try:
        client().sadd(_DIRTY_KEY, cluster or _EVERY_CLUSTER)
    except Exception as exc:  # noqa: BLE001 - Redis or the broker down: scrapes build inline
        log.warning("metrics exposition build not requested: %s", exc)
        return
    _ask_for_build()


def _ask_for_build() -> None:
    from dashboard.api.metrics.tasks import build_metrics_exposition
    from dashboard.locks import claim_once

    try:
        if claim_once(_REQUESTED_KEY, ttl_s=max(30, settings.LAGWATCH_METRICS_MAX_AGE_S)):
            build_metrics_exposition.apply_async()
    except Exception as exc:  # noqa: BLE001 - Redis or the broker down: scrapes build inline
        log.warning("metrics exposition build not requested: %s", exc)


def build_once() -> Path | None:
    """One build at a time across workers (a build reads every partition: two at once
    would only double the cost). A request finding one running asks for the next, which
    then reads what was written meanwhile; returns None then."""
    from dashboard.locks import exclusive

    clear_request()
    with exclusive(_BUILDING_KEY, ttl_s=max(60, settings.LAGWATCH_METRICS_MAX_AGE_S)) as mine:
        if not mine:
            _ask_for_build()  # the clusters asked for stay listed for that build
            return None
        return build(clusters=take_requested())


def take_requested() -> set[str] | None:
    """The clusters asked for since the last build, emptied as they are taken; None for every
    cluster (one request was for all, or Redis cannot say)."""
    from dashboard.locks import client

    try:
        with client().pipeline(transaction=True) as pipe:
            asked, _ = pipe.smembers(_DIRTY_KEY).delete(_DIRTY_KEY).execute()
    except Exception as exc:  # noqa: BLE001 - read everything rather than miss a change
        log.warning("metrics exposition: the clusters asked for are unknown: %s", exc)
        return None
    names = {a.decode() if isinstance(a, bytes) else a for a in asked}
    return None if not names or _EVERY_CLUSTER in names else names


def clear_request() -> None:
    from dashboard.locks import client

    try:
        client().delete(_REQUESTED_KEY)
    except Exception as exc:  # noqa: BLE001 - the flag expires by itself
        log.warning("metrics exposition request flag not cleared: %s", exc)
