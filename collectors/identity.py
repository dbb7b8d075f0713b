"""What identifies a monitored system across cycles, and whether it changed (pure).

A cluster rebuilt under the same name (a broker restarted on empty storage, a ZooKeeper
ensemble wiped) starts its offsets again from zero: compared with the old history, every
commit would read as a rewind or a jump over deleted data. So each source reports *identity
marks*, values that never change during one system's life and differ in the next one's:

- **Kafka**: the cluster id from the metadata answer every cycle reads anyway (KIP-78; a
  broker formats it into its storage, and a rebuilt cluster gets a new one).
- **ZooKeeper**: each watched root's creation, its ``czxid`` and ``ctime`` (the spout roots,
  ``/consumers``). They are the ensemble's replicated state, so every server of one ensemble
  answers the same, however far behind; a root recreated, by a wiped ensemble or by hand,
  has a new ``ctime`` (and usually a new ``czxid``). The server's zxid alone is not reliable:
  a standalone server keeps epoch 0 across restarts and a wiped one starts again from 0x1,
  which a young ensemble's last zxid may not be far above by the next poll, and a session
  opened on a follower behind the leader sees a lower zxid than the last session did.

A mark present before and now with another value is a change; a mark only on one side (a root
not created yet, a source not configured before) is none.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["KAFKA_CLUSTER_ID", "changes", "describe_changes", "znode_mark", "znode_mark_key"]

KAFKA_CLUSTER_ID = "cluster_id"


def znode_mark_key(path: str) -> str:
    """The mark's name for a watched znode."""
    return f"znode {path}"


def znode_mark(czxid: int, ctime_ms: int) -> str:
    """A znode's creation as a mark: its zxid (hex, as ZooKeeper's logs write them) and time."""
    return f"0x{czxid:x}@{ctime_ms}"


def changes(before: Mapping[str, str], now: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """The marks known on both sides whose values differ: ``{name: (before, now)}``."""
    return {k: (before[k], v) for k, v in sorted(now.items()) if k in before and before[k] != v}


def describe_changes(source: str, changed: Mapping[str, tuple[str, str]]) -> str:
    """One sentence for the timeline and the sources page."""
    parts = []
    for name, (old, new) in changed.items():
        what = "cluster id" if name == KAFKA_CLUSTER_ID else name
        parts.append(f"{what} {old} → {new}")
    return f"{source}: " + "; ".join(parts)
