"""What a consumer group and a share group of the workload share: a pool of members, each a
client in its own thread, grown, shrunk and faulted at run time by the same scenarios.

A subclass says how a member is made (``_new_member``); members joining later read the same
faults object (``_faults``: at least ``delay_ms`` and ``poison``), so a scenario started before
they came still applies to them.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any, Generic, Protocol, TypeVar


class Member(Protocol):
    client_id: str

    def start(self) -> None: ...

    def signal_stop(self) -> None: ...

    def join(self) -> None: ...


M = TypeVar("M", bound=Member)


class MemberPool(ABC, Generic[M]):
    """Members named ``<group>-<n>``, ``n`` counting up for the life of the pool."""

    def __init__(self, spec: Any, faults: Any) -> None:
        self.spec = spec
        self._faults = faults
        self._lock = threading.Lock()
        self._members: list[M] = []
        self._next_index = 0
        self.member_changes = 0

    @abstractmethod
    def _new_member(self, client_id: str) -> M:
        """A member of this pool's kind (a consumer or a share consumer), not started yet."""

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def delay_ms(self) -> float:
        return self._faults.delay_ms

    def start(self) -> None:
        self.set_members(self.spec.members)

    def stop(self) -> None:
        self.set_members(0)

    def set_delay_ms(self, delay_ms: float) -> float:
        """Set the per-record processing delay; return the previous value."""
        if delay_ms < 0:
            raise ValueError("delay_ms must be >= 0")
        previous, self._faults.delay_ms = self._faults.delay_ms, delay_ms
        return previous

    def clear_poison(self) -> None:
        self._faults.poison = frozenset()

    def add_member(self) -> str:
        with self._lock:
            self._next_index += 1
            member = self._new_member(f"{self.spec.name}-{self._next_index}")
            self._members.append(member)
            self.member_changes += 1
        member.start()
        return member.client_id

    def remove_member(self) -> str | None:
        """Close the newest member (it leaves the group); return its client id."""
        with self._lock:
            if not self._members:
                return None
            member = self._members.pop()
            self.member_changes += 1
        close_members([member])
        return member.client_id

    def set_members(self, count: int) -> None:
        """Grow or shrink to ``count`` members; members leaving close in parallel."""
        if count < 0:
            raise ValueError("count must be >= 0")
        with self._lock:
            leaving = self._members[count:]
            del self._members[count:]
            missing = count - len(self._members)
            self.member_changes += len(leaving)
        close_members(leaving)
        for _ in range(missing):
            self.add_member()

    def member_count(self) -> int:
        with self._lock:
            return len(self._members)

    def members(self) -> list[M]:
        with self._lock:
            return list(self._members)


def close_members(members: Iterable[Member]) -> None:
    """Ask every member to stop, then wait for each: they close in parallel."""
    members = list(members)
    for member in members:
        member.signal_stop()
    for member in members:
        member.join()
