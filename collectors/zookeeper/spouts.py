"""The walk of Storm KafkaSpout commits: ``<zkRoot>/<spoutId>/partition_<N>`` (SPEC §2.1).

Each configured spout root is listed, then every spout id under it, then every partition
node is read and parsed by :mod:`collectors.storm_znode` into a ``CommittedOffset`` with
``source=STORM``: three levels, each one batch (``batched_reads``). A configured root that
does not exist is an error of that root only; a spout removed between two levels is skipped,
as the normal race with a topology going away.
"""

from __future__ import annotations

from collectors.records import CollectionResult, Source, SourceError
from collectors.storm_znode import BadZnode, parse_spout_znode
from collectors.zookeeper.batched_reads import (
    GET,
    LS,
    MISSING,
    Walker,
    child_path,
    node_key,
    value,
)

__all__ = ["walk_spouts"]


def walk_spouts(roots: list[str], result: CollectionResult) -> Walker:
    """<root> → spout ids → partition_<N> nodes → commits, one batch per level."""
    errors = result.errors
    (listings,) = yield [(LS, roots)]
    spout_paths: list[str] = []
    for root, reply in zip(roots, listings, strict=True):
        spouts = value(reply, root, Source.STORM, errors)
        if spouts is MISSING:
            errors.append(SourceError(Source.STORM, root, "spout root does not exist"))
        elif spouts is not None:
            spout_paths.extend(child_path(root, spout) for spout in sorted(spouts))

    (listings,) = yield [(LS, spout_paths)]
    node_paths: list[str] = []
    for spout_path, reply in zip(spout_paths, listings, strict=True):
        names = value(reply, spout_path, Source.STORM, errors)
        if names:  # falsy too for MISSING: spout removed since its root was listed
            node_paths.extend(f"{spout_path}/{name}" for name in sorted(names, key=node_key))

    (replies,) = yield [(GET, node_paths)]
    commits = result.commits
    for path, reply in zip(node_paths, replies, strict=True):
        if reply.successful():
            data, stat = reply.value
            try:
                commits.append(parse_spout_znode(path, data, stat.mtime, stat.version))
            except BadZnode as exc:
                errors.append(SourceError(Source.STORM, exc.where, exc.reason))
        else:
            value(reply, path, Source.STORM, errors)
