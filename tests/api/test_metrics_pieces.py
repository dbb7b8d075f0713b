"""The per-cluster pieces of the /metrics exposition (dashboard/api/metrics/pieces.py): cut
into sections and assembled again, the bytes are the encoder's own for every family of every
cluster, in both formats; a table of bodies and random families."""

from __future__ import annotations

import random
from functools import partial
from pathlib import Path

import pytest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from dashboard.api.metrics import pieces
from dashboard.api.metrics.exposition import KINDS, encode

HOSTILE = ['a"b', "c\\d", "new\nline", "ü", "# HELP x", "x" * 300]


def gauge(name: str, samples: list[tuple[str, str, float]], doc: str = "doc") -> Metric:
    g = GaugeMetricFamily(name, doc, labels=["cluster", "group"])
    for cluster, group, value in samples:
        g.add_metric([cluster, group], value)
    return g


def counter(name: str, samples: list[tuple[str, str, float]]) -> Metric:
    c = CounterMetricFamily(name, "a counter", labels=["cluster", "group"])
    for cluster, group, value in samples:
        c.add_metric([cluster, group], value, created=1700000000.0)
    return c


@pytest.mark.parametrize(
    ("body", "names"),
    [
        (b"", []),
        (b"# HELP a x\n# TYPE a gauge\n", ["a"]),
        (b"# HELP a x\n# TYPE a gauge\na 1.0\n# HELP b y\n# TYPE b gauge\n", ["a", "b"]),
        (b'# HELP a h\\n# HELP z\n# TYPE a gauge\na{l="# HELP q"} 1.0\n', ["a"]),
        (
            b"# HELP c_total d\n# TYPE c_total counter\nc_total 1.0\n# HELP c_created d\n"
            b"# TYPE c_created gauge\nc_created 5.0\n",
            ["c_total", "c_created"],
        ),
    ],
)
def test_cut_finds_each_section(body: bytes, names: list[str]) -> None:
    found = list(pieces.cut(body))
    assert [n for n, _, _ in found] == names
    assert b"".join(h + s for _, h, s in found) == body


def test_cut_refuses_a_body_that_is_not_the_encoders() -> None:
    with pytest.raises(ValueError, match="HELP"):
        list(pieces.cut(b"a 1.0\n"))


def random_families(rng: random.Random, clusters: list[str]) -> list[Metric]:
    """Families whose samples come cluster by cluster (sorted), as the assembly orders them."""
    out = []
    for i in range(rng.randint(1, 6)):
        samples = [
            (c, rng.choice(HOSTILE + [f"g{j}" for j in range(5)]) + str(j), rng.random() * 1e6)
            for c in sorted(clusters)
            for j in range(rng.randint(0, 4))
        ]
        name = f"lagwatch_{'partition' if rng.random() < 0.5 else 'group'}_f{i}"
        out.append(counter(name, samples) if rng.random() < 0.3 else gauge(name, samples))
    return out


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", range(25))
def test_sections_of_each_cluster_assemble_to_the_whole_encoding(kind: str, seed: int) -> None:
    rng = random.Random(seed)
    clusters = rng.sample(["prod", "staging", 'we"ird', "ü", "a" * 100, "z"], rng.randint(1, 4))
    families = random_families(rng, clusters)
    enc = partial(encode, kind)
    mains = pieces.headers(families, enc)
    names = {m for m, _ in mains}
    shares = pieces.by_cluster(families)
    each = [pieces.sections(shares.get(c, []), enc, names) for c in sorted(clusters)]
    assert pieces.assemble(mains, each) == enc(families)
    if kind == "openmetrics":  # and the parser reads it back
        text = (pieces.assemble(mains, each) + b"# EOF\n").decode()
        assert len(list(text_string_to_metric_families(text))) == len(families)


def test_a_cluster_s_sections_survive_the_file(tmp_path: Path) -> None:
    families = [gauge("lagwatch_group_lag", [("p", g, 1.0) for g in HOSTILE]),
                counter("lagwatch_group_rebalances", [("p", "g", 3.0)])]  # fmt: skip
    kinds = {}
    for kind in KINDS:
        enc = partial(encode, kind)
        kinds[kind] = pieces.sections(families, enc, {m for m, _ in pieces.headers(families, enc)})
    file = tmp_path / pieces.file_name('we"ird/../name')
    pieces.write(file, 'we"ird/../name', kinds)
    assert pieces.read(file) == ('we"ird/../name', kinds)
    assert "/" not in pieces.file_name("../../etc/passwd")
