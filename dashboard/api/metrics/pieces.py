"""The bulk families encoded per cluster, so that a stored cycle re-encodes its own cluster's
series only (``exposition.build(clusters=…)``) and a build's cost follows the cluster that
changed, not every cluster's partitions.

Prometheus' text formats want each family's lines together, under one ``# HELP``/``# TYPE``
header: one cluster's encoded families cannot simply be appended to another's. So each
cluster's families are encoded on their own (the encoder's own bytes, escaping and all) and cut
into *sections*, each a header and its sample lines; a body is then every family's header and
the sample lines of every cluster, in the families' order and the clusters' (sorted) order.
A section starts at a ``# HELP`` line: the text format's counters have two (the ``_total``
family, then its ``_created`` gauge), OpenMetrics' one. Label values and help texts never hold
a raw newline (the encoders escape it), so a line starting with ``#`` is always a header.

On disk (``write``/``read``) a cluster's sections are a small JSON index and the bytes after
it: files this process wrote and reads back, never code (no pickle).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from prometheus_client.core import Metric

HELP = b"# HELP "
# family -> [(section name, header, sample lines)], the encoder's order within the family.
Sections = dict[str, list[tuple[str, bytes, bytes]]]


def empty_like(family: Metric) -> Metric:
    """The family with no sample: what its header alone encodes to."""
    return Metric(family.name, family.documentation, family.type, family.unit)


def by_cluster(families: Iterable[Metric]) -> dict[str, list[Metric]]:
    """Each cluster's share of the families (every family here is labelled by cluster)."""
    out: dict[str, dict[str, Metric]] = {}
    for family in families:
        for sample in family.samples:
            cluster = sample.labels["cluster"]
            mine = out.setdefault(cluster, {})
            if family.name not in mine:
                mine[family.name] = empty_like(family)
            mine[family.name].samples.append(sample)
    return {c: list(f.values()) for c, f in out.items()}


def cut(body: bytes) -> Iterator[tuple[str, bytes, bytes]]:
    """(section name, header lines, sample lines) of an encoded body, in order."""
    if not body:
        return
    if not body.startswith(HELP):
        raise ValueError("an encoded body starts with # HELP")
    for chunk in (b"\n" + body).split(b"\n" + HELP)[1:]:
        # The split took each section's last newline but the body's last one's.
        chunk = HELP + chunk + (b"" if chunk.endswith(b"\n") else b"\n")
        lines = chunk.splitlines(keepends=True)
        n = next((i for i, line in enumerate(lines) if not line.startswith(b"#")), len(lines))
        header, samples = b"".join(lines[:n]), b"".join(lines[n:])
        yield chunk[len(HELP) :].split(b" ", 1)[0].decode(), header, samples


def sections(
    families: list[Metric], encode: Callable[[list[Metric]], bytes], mains: set[str]
) -> Sections:
    """One cluster's families encoded and cut; each section filed under the family whose main
    section (``mains``: the names an empty family's header gives) precedes it."""
    out: Sections = {}
    family = None
    by_main = {}
    for name, header, samples in cut(encode(families)):
        if name in mains:
            family = by_main.setdefault(name, name)
        if family is None:
            raise ValueError(f"section {name} before any family")
        out.setdefault(family, []).append((name, header, samples))
    return out


def headers(families: list[Metric], encode: Callable[[list[Metric]], bytes]) -> list[tuple]:
    """(main section name, header) of each family, in order: what a body always holds, even
    for a family no cluster has a sample of (as a whole build encodes it)."""
    return [(name, header) for name, header, _ in cut(encode([empty_like(f) for f in families]))]


def assemble(mains: list[tuple[str, bytes]], clusters: list[Sections]) -> bytes:
    """A body: each family's header and every cluster's samples, then the family's further
    sections (a counter's ``_created``) where any cluster has one."""
    out = []
    for main, header in mains:
        out.append(header)
        extra: dict[str, list[bytes]] = {}
        extra_header: dict[str, bytes] = {}
        for cluster in clusters:
            for name, section_header, samples in cluster.get(main, ()):
                if name == main:
                    out.append(samples)
                else:
                    extra_header.setdefault(name, section_header)
                    extra.setdefault(name, []).append(samples)
        for name in sorted(extra):
            out.append(extra_header[name])
            out.extend(extra[name])
    return b"".join(out)


def file_name(cluster: str) -> str:
    """A cluster's file: its name hashed (names are the user's, and may hold anything)."""
    return hashlib.sha256(cluster.encode()).hexdigest()[:32]


def write(path: Path, cluster: str, kinds: dict[str, Sections]) -> None:
    index, blobs, offset = [], [], 0
    for kind, secs in kinds.items():
        for family, parts in secs.items():
            for name, header, samples in parts:
                index.append([kind, family, name, offset, len(header), len(samples)])
                blobs += [header, samples]
                offset += len(header) + len(samples)
    head = json.dumps({"cluster": cluster, "index": index}).encode()
    path.write_bytes(len(head).to_bytes(8, "big") + head + b"".join(blobs))


def read(path: Path) -> tuple[str, dict[str, Sections]]:
    data = path.read_bytes()
    size = int.from_bytes(data[:8], "big")
    doc = json.loads(data[8 : 8 + size])
    base = 8 + size
    kinds: dict[str, Sections] = {}
    for kind, family, name, offset, h, s in doc["index"]:
        at = base + offset
        part = (name, data[at : at + h], data[at + h : at + h + s])
        kinds.setdefault(kind, {}).setdefault(family, []).append(part)
    return doc["cluster"], kinds
