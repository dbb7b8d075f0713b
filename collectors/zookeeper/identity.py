"""The walk of the ensemble's identity marks: each watched root's creation (``czxid``,
``ctime``), read with the cycle's first level (``collectors.identity`` says why these)."""

from __future__ import annotations

from collectors.identity import znode_mark, znode_mark_key
from collectors.records import CollectionResult
from collectors.zookeeper.batched_reads import GET, Walker

__all__ = ["walk_identity"]


def walk_identity(roots: list[str], result: CollectionResult) -> Walker:
    """One batch: the roots' data and stat. A root missing or unreadable gives no mark (the
    walks that read it report why)."""
    (replies,) = yield [(GET, roots)]
    for root, reply in zip(roots, replies, strict=True):
        if reply.successful():
            _, stat = reply.value
            result.identity[znode_mark_key(root)] = znode_mark(stat.czxid, stat.ctime)
