"""The scenario base class and its target resolution, shared by every scenario module."""

from __future__ import annotations

import abc
import inspect
from typing import TYPE_CHECKING, Any, ClassVar

from lab.workload.params import Param, ScenarioError

if TYPE_CHECKING:
    from lab.workload.world import World


def target(value: str | None, role: str | None, what: str) -> str:
    name = value or role
    if not name:
        raise ScenarioError(f"this world has no default {what}: pass it as a parameter")
    return name


class Scenario(abc.ABC):
    name: ClassVar[str]
    params: ClassVar[tuple[Param, ...]] = ()
    #: Starting it stops every other scenario; starting any other one ends it.
    exclusive: ClassVar[bool] = False
    #: Started with the world and never stopped: it documents a standing condition.
    always_on: ClassVar[bool] = False

    @abc.abstractmethod
    def start(self, world: World, **params: Any) -> dict[str, Any]:
        """Bring the fault about; returns what was done, for the control endpoint's answer."""

    def stop(self, world: World) -> None:  # noqa: B027 - a deliberate no-op default
        """Undo what start did; scenarios whose effect is permanent document so."""

    def running(self) -> bool:
        """False once a scenario with a natural end (an outage drill) has ended."""
        return True

    @classmethod
    def describe(cls) -> dict[str, Any]:
        return {
            "name": cls.name,
            "doc": inspect.cleandoc(cls.__doc__ or ""),
            "params": [p.describe() for p in cls.params],
            "exclusive": cls.exclusive,
            "always_on": cls.always_on,
        }
