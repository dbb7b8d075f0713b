"""Fuzzed inputs, the long run: the properties of ``tests/fuzz/`` over many more
inputs than the suite's bounded profile, counting instead of stopping at the first failure.

Targets: the spout-znode parser, the ``__consumer_offsets`` decoder and its command, the
``evaluate_window`` documents (``evaluate_document`` and the command), the ingest endpoint
(spout and librdkafka pushes, through Django's test client with the ingest token), the YAML
imports (``lagwatch_config`` and ``alerts_config``) and the query strings of ``/api/v1/``.
Each gets valid and spoiled inputs from ``tests/fuzz/strategies.py``, ``--examples`` of them
(10,000 by default) or until ``--budget`` seconds have gone, in chunks of 500 with a fixed
seed each (two runs try nearly the same inputs: a few draws depend on string hashing).

Per target: inputs tried, accepted, refused, property violations (a refusal without a useful
message, a refused write that changed the database, a valid input not read back as sent),
crashes (an exception other than the parser's own error type) and 500s (an HTTP target whose
view raised). The database is an in-memory SQLite test database, each chunk rolled back.

    .venv/bin/python -m benchmarks.bench_fuzz [--examples 10000] [--budget 600]
        [--only TARGET ...] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CHUNK = 500


@dataclass
class Tally:
    name: str
    http: bool
    tried: int = 0
    outcomes: Counter = field(default_factory=Counter)
    violations: int = 0
    crashes: int = 0
    server_errors: int = 0
    seconds: float = 0.0
    samples: list[str] = field(default_factory=list)
    # "crash: OverflowError at evaluator.py:1031" -> how many
    kinds: Counter = field(default_factory=Counter)

    def record_failure(self, kind: str, exc: BaseException, value: Any) -> None:
        where = traceback.extract_tb(exc.__traceback__)[-1]
        self.kinds[
            f"{kind}: {type(exc).__name__} at {Path(where.filename).name}:{where.lineno}"
        ] += 1
        if len(self.samples) < 5:
            self.samples.append(
                f"{kind}: {type(exc).__name__}: {str(exc)[:200]} "
                f"(at {Path(where.filename).name}:{where.lineno}) input {repr(value)[:300]}"
            )


@dataclass
class Target:
    name: str
    strategy: Any
    check: Callable[[Any], Any]
    http: bool = False
    db: bool = False
    setup: Callable[[], None] | None = None


def _django() -> None:
    data = Path(tempfile.mkdtemp(prefix="lagwatch-fuzz-"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings.base")
    os.environ["LAGWATCH_DATA_DIR"] = str(data)
    os.environ.setdefault("LAGWATCH_LOG_LEVEL", "CRITICAL")
    os.environ.setdefault("DJANGO_DEBUG", "0")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    import logging

    logging.disable(logging.CRITICAL)  # refused requests log a warning each
    from django.conf import settings
    from django.db import connection
    from django.test.utils import setup_test_environment

    setup_test_environment()
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    settings.LAGWATCH_SAMPLE_LOG_URL = str(data / "samples")
    settings.LAGWATCH_REPORTS_DIR = str(data / "reports")


def targets() -> list[Target]:
    from django.conf import settings
    from django.test import Client
    from hypothesis import strategies as st

    from dashboard.alerts.models import Channel, Rule, Silence
    from dashboard.api.models import TokenScope
    from dashboard.api.tokens import create_token
    from dashboard.monitoring.models import Cluster
    from tests.api.world import build_world
    from tests.fuzz import strategies as fs
    from tests.fuzz import test_api_params as api_params
    from tests.fuzz import test_config_import as imports
    from tests.fuzz import test_decoders as decoders
    from tests.fuzz import test_evaluate_window as windows
    from tests.fuzz import test_ingest as ingest

    client = Client()  # raises what a view raises: counted as a 500
    api: dict[str, Any] = {}

    def ingest_setup() -> None:
        settings.LAGWATCH_INGEST_TOKEN = ingest.TOKEN
        settings.LAGWATCH_INGEST_MAX_BYTES = 64 * 1024
        ingest.ingest_cluster()

    def api_setup() -> None:
        world = build_world()
        api.update(
            client=client,
            ids={"cluster": "prod", "group": str(world.groups["billing"].pk),
                 "partition": str(world.partitions["billing", "invoices", 1].pk), "id": "1"},
            headers={"Authorization": f"Bearer {create_token('fuzz', TokenScope.READ)[1]}"},
        )  # fmt: skip

    def spout(value: Any) -> str:
        kind, doc = value
        if kind == "valid":
            ingest.check_spout_round_trip(client, doc)
            return "accepted"
        return ingest.check_push(client, "spout", ingest.encode(doc))

    def librdkafka(value: Any) -> str:
        kind, doc, group = value
        if kind == "valid":
            ingest.check_librdkafka_round_trip(client, doc, group)
            return "accepted"
        return ingest.check_push(client, "librdkafka", ingest.encode(doc), {"group": group})

    def bodies(value: Any) -> str:
        return ingest.check_push(client, value[0], value[1])

    def offsets(value: Any) -> str:
        result = decoders.check_offsets_record(*value)
        return "refused" if isinstance(result, Exception) else "accepted"

    def znode(value: Any) -> str:
        result = decoders.check_spout_znode(*value)
        return "refused" if isinstance(result, Exception) else "accepted"

    def offsets_command(value: Any) -> str:
        code, _, _ = decoders.run_decode_command(*value)
        return "accepted" if code == 0 else "refused"

    def window_command(doc: Any) -> str:
        code, _ = windows.run_command(fs.dumps(doc) if not isinstance(doc, str) else doc)
        assert code in (0, 2), code
        return "accepted" if code == 0 else "refused"

    def clusters(value: Any) -> str:
        if Cluster.objects.count() > 20:  # each check exports every cluster: keep it small
            Cluster.objects.all().delete()
        text = value if isinstance(value, str) else _yaml(value)
        return imports.check_clusters_import(text).split(":")[0]

    def alerts(value: Any) -> str:
        if Silence.objects.count() > 50:  # each check compares every row before and after
            Silence.objects.all().delete()
            Rule.objects.all().delete()
            Channel.objects.all().delete()
        text = value if isinstance(value, str) else _yaml(value)
        return imports.check_alerts_import(text).split(":")[0]

    def api_get(value: Any) -> str:
        route, query = value
        status = api_params.check_get(api, route.format(**api["ids"]), query)
        return str(status)

    return [
        Target(
            "spout znode",
            (fs.spout_znodes().map(lambda n: (n["path"], n["data"])) | fs.bad_spout_znodes()),
            znode,
        ),
        Target(
            "__consumer_offsets record",
            fs.offsets_records.map(lambda r: r[:2])
            | fs.corrupted_offsets_records()
            | st.tuples(st.binary(max_size=80), st.none() | st.binary(max_size=200)),
            offsets,
        ),
        Target(
            "decode_offsets_record command",
            fs.corrupted_offsets_records().map(lambda r: (r[0].hex(), r[1] and r[1].hex()))
            | st.tuples(fs.hostile_text, st.none() | fs.hostile_text),
            offsets_command,
        ),
        Target(
            "evaluate_document",
            fs.window_documents()
            | fs.spoiled(fs.window_documents())
            | fs.edge_numbered(fs.window_documents())
            | fs.json_values,
            windows.check_document,
        ),
        Target(
            "evaluate_window command",
            fs.window_documents()
            | fs.spoiled(fs.window_documents())
            | fs.edge_numbered(fs.window_documents())
            | fs.json_values
            | st.text(max_size=60),
            window_command,
        ),
        Target(
            "ingest: spout push",
            st.tuples(st.just("valid"), fs.spout_pushes())
            | st.tuples(
                st.just("spoiled"),
                fs.spoiled(fs.spout_pushes())
                | fs.edge_numbered(fs.spout_pushes())
                | fs.json_values,
            ),
            spout,
            http=True,
            db=True,
            setup=ingest_setup,
        ),
        Target(
            "ingest: librdkafka push",
            st.tuples(st.just("valid"), fs.librdkafka_stats(), fs.long_names)
            | st.tuples(
                st.just("spoiled"),
                fs.spoiled(fs.librdkafka_stats())
                | fs.edge_numbered(fs.librdkafka_stats())
                | fs.json_values,
                st.text(max_size=300),
            ),
            librdkafka,
            http=True,
            db=True,
            setup=ingest_setup,
        ),
        Target(
            "ingest: raw bodies",
            st.tuples(st.sampled_from(["spout", "librdkafka"]), st.binary(max_size=300)),
            bodies,
            http=True,
            db=True,
            setup=ingest_setup,
        ),
        Target(
            "lagwatch_config import",
            fs.cluster_files()
            | fs.spoiled(fs.cluster_files())
            | fs.edge_numbered(fs.cluster_files())
            | fs.json_values
            | imports.yaml_text,
            clusters,
            db=True,
        ),
        Target(
            "alerts_config import",
            fs.alerts_files()
            | fs.spoiled(fs.alerts_files())
            | fs.edge_numbered(fs.alerts_files())
            | fs.json_values
            | imports.yaml_text,
            alerts,
            db=True,
        ),
        Target(
            "/api/v1 query strings",
            api_params.requests(),
            api_get,
            http=True,
            db=True,
            setup=api_setup,
        ),
    ]


def _yaml(doc: Any) -> str:
    import yaml

    try:
        return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
    except (yaml.YAMLError, UnicodeEncodeError):
        return json.dumps(doc, allow_nan=True)  # JSON is YAML too


def run_target(target: Target, examples: int, budget_s: float) -> Tally:
    from django.db import transaction
    from hypothesis import HealthCheck, Phase, given, seed, settings

    tally = Tally(target.name, target.http)
    started = time.perf_counter()
    chunk_index = 0
    while tally.tried < examples and time.perf_counter() - started < budget_s:
        size = min(CHUNK, examples - tally.tried)

        @seed(chunk_index)
        @settings(max_examples=size, deadline=None, database=None, derandomize=False,
                  phases=[Phase.generate], suppress_health_check=list(HealthCheck))  # fmt: skip
        @given(value=target.strategy)
        def run(value: Any) -> None:
            if time.perf_counter() - started >= budget_s:
                return
            tally.tried += 1
            try:
                tally.outcomes[target.check(value)] += 1
            except AssertionError as exc:
                tally.violations += 1
                tally.record_failure("property violated", exc, value)
            except Exception as exc:
                if target.http:
                    tally.server_errors += 1
                    tally.record_failure("500", exc, value)
                else:
                    tally.crashes += 1
                    tally.record_failure("crash", exc, value)

        before = tally.tried
        if target.db:
            with transaction.atomic():
                if target.setup:
                    target.setup()
                run()
                transaction.set_rollback(True)
        else:
            run()
        chunk_index += 1
        if tally.tried == before:  # the strategy is exhausted (or the budget is spent)
            break
    tally.seconds = time.perf_counter() - started
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=10_000, help="inputs per target")
    parser.add_argument("--budget", type=float, default=600.0, help="seconds per target at most")
    parser.add_argument("--only", nargs="*", help="targets whose name contains one of these")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args(argv)

    _django()
    chosen = [t for t in targets() if not args.only or any(o in t.name for o in args.only)]
    load = os.getloadavg()
    print(f"bench_fuzz: {platform.node()} {platform.python_version()} "
          f"{os.cpu_count()} cores, load {load[0]:.2f}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; "
          f"{args.examples} inputs per target, at most {args.budget:.0f} s each")  # fmt: skip
    tallies = []
    header = (f"{'target':32} {'tried':>7} {'accepted':>9} {'refused':>8} {'violations':>10} "
              f"{'crashes':>7} {'500s':>5} {'s':>7}")  # fmt: skip
    print(header)
    for target in chosen:
        tally = run_target(target, args.examples, args.budget)
        tallies.append(tally)
        accepted = sum(n for k, n in tally.outcomes.items() if k in ("accepted", "200", "202"))
        refused = tally.tried - accepted - tally.violations - tally.crashes - tally.server_errors
        server_errors = str(tally.server_errors) if tally.http else "-"
        print(f"{tally.name:32} {tally.tried:>7} {accepted:>9} {refused:>8} "
              f"{tally.violations:>10} {tally.crashes:>7} {server_errors:>5} "
              f"{tally.seconds:>7.1f}", flush=True)  # fmt: skip
        for kind, n in tally.kinds.most_common():
            print(f"    {n} x {kind}")
        for sample in tally.samples:
            print(f"    e.g. {sample}")
    total = sum(t.tried for t in tallies)
    failures = sum(t.violations + t.crashes + t.server_errors for t in tallies)
    print(f"total: {total} inputs, {failures} failures; load {os.getloadavg()[0]:.2f}")
    if args.json:
        args.json.write_text(json.dumps([
            {"target": t.name, "tried": t.tried, "outcomes": dict(t.outcomes),
             "violations": t.violations, "crashes": t.crashes, "server_errors": t.server_errors,
             "seconds": round(t.seconds, 1), "kinds": dict(t.kinds), "samples": t.samples}
            for t in tallies
        ], indent=2))  # fmt: skip
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
