"""Parser of the commit metadata a Storm 2 ``KafkaSpout`` (storm-kafka-client) leaves in Kafka.

Storm 2's spout is an ordinary Kafka consumer: it commits its offsets to Kafka, and with every
commit a metadata string its ``CommitMetadataManager`` serialises from ``CommitMetadata``
(Jackson, in field order), as the real 2.8.2 spout of ``lab/storm2/`` wrote it (one line)::

    {"topologyId":"orders-storm2-1-1795907098","taskId":3,
     "threadName":"Thread-39-kafka-spout-executor[3, 3]"}

The topology id is the instance Nimbus named at submission (``<name>-<counter>-<seconds>``):
what links a Kafka group to the Storm topology reading it, and changes when the topology is
resubmitted. Every other Kafka client may put any string there (most put nothing), so this
module never raises and never guesses: anything not exactly that document is None. Exactly:
an object with these three fields and no other (Storm's own reader, Jackson with its default
of failing on unknown properties, refuses more), ``topologyId`` of Nimbus's shape without a
control character, ``taskId`` an integer of Java's ``int`` range from 1 (Storm numbers tasks
from 1; ``true`` and ``3.0`` are not integers), ``threadName`` a string.

Pure and I/O-free. The Kafka adapter parses every commit's metadata, so the common cases are
cheap: an empty string costs a comparison, and a spout task's string (the same at each of its
commits) is parsed once and remembered.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

__all__ = [
    "MAX_METADATA_CHARS",
    "SpoutCommitMetadata",
    "parse_commit_metadata",
    "topology_name",
    "topology_of",
]

# Kafka's default ``offset.metadata.max.bytes``: a broker refuses a longer commit unless
# configured otherwise. The spout's own is ~110 characters; a longer string is not parsed.
MAX_METADATA_CHARS: Final = 4096
_MAX_TASK_ID: Final = 2**31 - 1
# Nimbus names an instance ``topoName + "-" + counter + "-" + Time.currentTimeSecs()``; the
# name itself may hold dashes, and may not hold ``/ . : \`` (Storm's ``validateTopologyName``)
# nor, here, a control character (a JSON escape can make a NUL, which PostgreSQL's text refuses).
_TOPOLOGY_ID: Final = re.compile(
    r"([^/.:\\\x00-\x1f\x7f]+)-(0|[1-9][0-9]{0,9})-(0|[1-9][0-9]{0,18})"
)
_FIELDS: Final = frozenset({"topologyId", "taskId", "threadName"})


@dataclass(frozen=True, slots=True)
class SpoutCommitMetadata:
    """What one commit of a Storm 2 spout says about its writer."""

    topology_id: str
    task_id: int
    thread_name: str

    @property
    def topology_name(self) -> str:
        return topology_name(self.topology_id)

    @property
    def submitted_s(self) -> int:
        """When Nimbus accepted the submission (epoch seconds, from the id)."""
        return int(self.topology_id.rsplit("-", 1)[1])


def topology_name(topology_id: str) -> str:
    """The topology's name: a Nimbus instance id without its counter and time (the name
    Storm keeps across resubmissions, which the id does not)."""
    return topology_id.rsplit("-", 2)[0]


def parse_commit_metadata(metadata: str | None) -> SpoutCommitMetadata | None:
    """The Storm 2 spout's commit metadata in ``metadata``, or None for anything else."""
    if not metadata or metadata[0] != "{" or len(metadata) > MAX_METADATA_CHARS:
        return None
    return _parse(metadata)


@lru_cache(maxsize=4096)
def _parse(text: str) -> SpoutCommitMetadata | None:
    try:
        obj = json.loads(text, object_pairs_hook=_unique_pairs)
    except (ValueError, RecursionError):
        return None
    if type(obj) is not dict or obj.keys() != _FIELDS:
        return None
    topology_id, task_id, thread = obj["topologyId"], obj["taskId"], obj["threadName"]
    if not (
        type(topology_id) is str
        and type(task_id) is int
        and type(thread) is str
        and 1 <= task_id <= _MAX_TASK_ID
        and _TOPOLOGY_ID.fullmatch(topology_id)
    ):
        return None
    if "\\u" in text:  # only a JSON escape can smuggle a lone surrogate past the decode
        try:
            topology_id.encode("utf-8")
            thread.encode("utf-8")
        except UnicodeEncodeError:
            return None
    return SpoutCommitMetadata(topology_id, task_id, thread)


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object, refused when a key repeats (which value a writer meant is not known)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise ValueError("duplicate key")
    return obj


def topology_of(commits: Iterable[SpoutCommitMetadata | None]) -> str | None:
    """The topology instance a group's commits name: the one most of its partitions' commits
    name, the newest submission on a tie (a resubmitted topology's partitions move to the new
    instance one commit at a time). None when no commit names one."""
    counts = Counter(c.topology_id for c in commits if c is not None)
    if not counts:
        return None
    return max(counts, key=lambda t: (counts[t], int(t.rsplit("-", 1)[1]), t))
