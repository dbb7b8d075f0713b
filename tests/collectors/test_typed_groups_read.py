"""What share and streams groups have in common (``collectors/kafka/typed_groups.py:
read_typed_groups``): both calls asked once for every listed group, a group deleted since the
listing left out silently, a failed answer the warning of its group naming the call, a call
that raised the warning of the kind's groups. The calls against a real broker are tested in
``test_kafka_wire_share.py`` and ``tests/lab/test_streams_groups.py``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from collectors.kafka.cycle import Cycle
from collectors.kafka.typed_groups import read_typed_groups
from collectors.kafka_wire import GroupListing, ListedGroup
from collectors.records import CommittedOffset, GroupSnapshot, Source


@dataclass(frozen=True)
class Answer:
    error_name: str | None = None
    error_message: str | None = None

    @property
    def ok(self) -> bool:
        return self.error_name is None


@dataclass
class Client:
    """The two calls' answers per group (or an exception to raise), and the calls made."""

    descriptions: dict[str, Answer]
    progress: dict[str, Answer]
    raises: Exception | None = None
    coordinators: dict[str, str] = field(default_factory=lambda: {"a": "b1:9092"})
    asked: list[tuple[str, list[str]]] = field(default_factory=list)

    def describe(self, ids: list[str], timeout_s: float) -> dict[str, Answer]:
        self.asked.append(("describe", ids))
        if self.raises:
            raise self.raises
        return self.descriptions

    def fetch(self, ids: list[str], timeout_s: float) -> dict[str, Answer]:
        self.asked.append(("fetch", ids))
        return self.progress


def snapshot(description: Any, answer: Any, state: str | None, coordinator: str | None):
    return GroupSnapshot(Source.KAFKA, "?", state, coordinator=coordinator)


def commits(made: GroupSnapshot, answer: Any, cycle: Cycle) -> list[CommittedOffset]:
    return [CommittedOffset(Source.KAFKA, "g", "t", 0, 1)]


GONE = Answer("GROUP_ID_NOT_FOUND")
CASES = [
    # (descriptions, progress, raises) -> (snapshots, warnings)
    ({"a": Answer(), "b": Answer()}, {"a": Answer(), "b": Answer()}, None, 2, []),
    ({"a": Answer(), "b": GONE}, {"a": Answer(), "b": Answer()}, None, 1, []),
    ({"a": Answer("COORDINATOR_NOT_AVAILABLE", "moving"), "b": Answer()},
     {"a": Answer(), "b": Answer("GROUP_AUTHORIZATION_FAILED")}, None, 2,
     ["group a: Describe: moving", "group b: Progress: GROUP_AUTHORIZATION_FAILED"]),
    ({}, {}, OSError("connection reset"), 0, ["groups (share): OSError: connection reset"]),
    ({}, {}, ValueError("bad frame"), 0, ["groups (share): ValueError: bad frame"]),
]  # fmt: skip


@pytest.mark.parametrize(("descriptions", "progress", "raises", "made", "warnings"), CASES)
def test_read_typed_groups(
    descriptions: dict, progress: dict, raises: Exception | None, made: int, warnings: list[str]
) -> None:
    client = Client(descriptions, progress, raises)
    listing = GroupListing({g: ListedGroup(g, "share", "Stable", "share") for g in ("b", "a")})
    cycle = Cycle(0, 5.0)
    snapshots, out = read_typed_groups(
        client, "share", listing, cycle,  # type: ignore[arg-type]
        (("Describe", client.describe), ("Progress", client.fetch)),
        gone=lambda description, _: description.error_name == "GROUP_ID_NOT_FOUND",
        snapshot=snapshot, commits=commits,
    )  # fmt: skip
    assert len(snapshots) == len(out) == made
    assert [f"{e.where}: {e.error}" for e in cycle.result.errors] == warnings
    assert client.asked[0] == ("describe", ["a", "b"])  # every group in one call, in order
    if made:
        assert [s.state for s in snapshots] == ["Stable"] * made
        assert snapshots[0].coordinator == "b1:9092"


def test_an_empty_listing_asks_nothing() -> None:
    client = Client({}, {})
    cycle = Cycle(0, 5.0)
    calls = (("Describe", client.describe), ("Progress", client.fetch))
    got = read_typed_groups(client, "streams", GroupListing(), cycle, calls,  # type: ignore[arg-type]
                            gone=lambda *_: False, snapshot=snapshot, commits=commits)  # fmt: skip
    assert got == ([], []) and client.asked == [] and not cycle.result.errors
