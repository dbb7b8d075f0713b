"""Scenario parameters: declared once per scenario, validated before anything is touched."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class ScenarioError(ValueError):
    """A scenario cannot start with these parameters in this world (HTTP 400)."""


@dataclass(frozen=True)
class Param:
    name: str
    type: type
    doc: str
    default: Any = None
    required: bool = False
    choices: tuple[Any, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type.__name__,
            "doc": self.doc,
            "default": self.default,
            "required": self.required,
            "choices": list(self.choices) if self.choices else None,
            "minimum": self.minimum,
            "maximum": self.maximum,
        }

    def coerce(self, value: Any) -> Any:
        """Accept JSON's types: an int where a float is wanted, never a bool for a number."""
        if value is None and not self.required:
            return None
        ok = isinstance(value, self.type) and not (
            self.type in (int, float) and isinstance(value, bool)
        )
        if self.type is float and isinstance(value, int) and not isinstance(value, bool):
            value, ok = float(value), True
        if not ok:
            raise ScenarioError(
                f"parameter {self.name!r} must be {self.type.__name__}, "
                f"got {type(value).__name__} {value!r}"
            )
        if self.choices is not None and value not in self.choices:
            raise ScenarioError(f"parameter {self.name!r} must be one of {list(self.choices)}")
        if self.minimum is not None and value < self.minimum:
            raise ScenarioError(f"parameter {self.name!r} must be >= {self.minimum}")
        if self.maximum is not None and value > self.maximum:
            raise ScenarioError(f"parameter {self.name!r} must be <= {self.maximum}")
        return value


def validate(declared: tuple[Param, ...], given: Mapping[str, Any]) -> dict[str, Any]:
    """Full parameter set: given values checked, defaults filled, unknown names refused."""
    by_name = {p.name: p for p in declared}
    unknown = sorted(set(given) - set(by_name))
    if unknown:
        raise ScenarioError(
            f"unknown parameter(s) {unknown}; this scenario takes {sorted(by_name) or 'none'}"
        )
    values = {}
    for param in declared:
        if param.name in given:
            values[param.name] = param.coerce(given[param.name])
        elif param.required:
            raise ScenarioError(f"parameter {param.name!r} is required")
        else:
            values[param.name] = param.default
    return values
