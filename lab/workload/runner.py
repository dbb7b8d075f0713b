"""Keeps track of which scenarios are active and serialises starting and stopping them.

Scenario operations touch shared parts of the world (a group's members, a spout), so one
lock orders them; the HTTP server calls in from several threads.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lab.workload.params import validate
from lab.workload.scenarios import SCENARIOS, Scenario
from lab.workload.world import World

log = logging.getLogger(__name__)


class UnknownScenarioError(KeyError):
    """No scenario of that name (HTTP 404)."""

    def __str__(self) -> str:
        return f"no scenario named {self.args[0]!r}; known: {', '.join(sorted(SCENARIOS))}"


@dataclass
class _Active:
    scenario: Scenario
    params: dict[str, Any]
    started_at: float = field(default_factory=time.time)
    details: dict[str, Any] = field(default_factory=dict)

    def describe(self, name: str) -> dict[str, Any]:
        return {
            "name": name,
            "params": self.params,
            "started_at": self.started_at,
            "running": self.scenario.running(),
            "details": self.details,
        }


class ScenarioRunner:
    def __init__(self, world: World, table: Mapping[str, type[Scenario]] = SCENARIOS) -> None:
        self.world = world
        self._table = dict(table)
        self._active: dict[str, _Active] = {}
        self._lock = threading.RLock()

    def start_always_on(self) -> None:
        for name, cls in self._table.items():
            if cls.always_on:
                self.start(name, {})

    def catalogue(self) -> list[dict[str, Any]]:
        with self._lock:
            return [
                {**cls.describe(), "active": name in self._active}
                for name, cls in self._table.items()
            ]

    def active(self) -> list[dict[str, Any]]:
        with self._lock:
            return [a.describe(name) for name, a in self._active.items()]

    def start(self, name: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """Start `name`; an active one is stopped first, so this also changes parameters."""
        cls = self._cls(name)
        values = validate(cls.params, params)
        with self._lock:
            if name in self._active:
                self._stop_locked(name)
            for other, active in list(self._active.items()):
                ends_other = cls.exclusive or type(active.scenario).exclusive
                if ends_other and not type(active.scenario).always_on:
                    self._stop_locked(other)
            scenario = cls()
            details = scenario.start(self.world, **values) or {}
            self._active[name] = _Active(scenario, values, details=details)
            log.info("scenario %s started %s", name, details)
            return self._active[name].describe(name)

    def stop(self, name: str) -> dict[str, Any]:
        """Stop `name` if active (stopping an inactive scenario is not an error)."""
        self._cls(name)
        with self._lock:
            was_active = name in self._active
            if was_active:
                self._stop_locked(name)
            return {"name": name, "stopped": was_active}

    def stop_all(self) -> None:
        with self._lock:
            for name in reversed(list(self._active)):
                self._stop_locked(name)

    def _stop_locked(self, name: str) -> None:
        active = self._active.pop(name)
        try:
            active.scenario.stop(self.world)
        finally:
            log.info("scenario %s stopped", name)

    def _cls(self, name: str) -> type[Scenario]:
        try:
            return self._table[name]
        except KeyError:
            raise UnknownScenarioError(name) from None
