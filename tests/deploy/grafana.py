"""What the tests need to know of deploy/grafana/'s dashboards: their PromQL, and the values
their variables take in the test world.

Grafana replaces ``$name`` / ``${name}`` in a query by the variable's value before sending it;
``label_values(selector, label)`` is Grafana's, not PromQL: it is the label values API.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DASHBOARDS = sorted((ROOT / "deploy" / "grafana").glob("*.json"))
VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)")
LABEL_VALUES = re.compile(r"^label_values\((?:(?P<selector>.+),\s*)?(?P<label>\w+)\)$")


@dataclass(frozen=True)
class Query:
    dashboard: str  # file name
    panel: str  # panel title, or "variable <name>"
    expr: str

    def __str__(self) -> str:
        return f"{self.dashboard} / {self.panel}: {self.expr}"


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def panels(board: dict) -> Iterator[dict]:
    for panel in board["panels"]:
        yield panel
        yield from panel.get("panels", [])  # a collapsed row holds its panels


def queries(path: Path) -> Iterator[Query]:
    """Every panel target's expression."""
    for panel in panels(load(path)):
        for target in panel.get("targets", []):
            yield Query(path.name, panel["title"], target["expr"])


def variable_queries(path: Path) -> Iterator[Query]:
    for variable in load(path)["templating"]["list"]:
        if variable["type"] == "query":
            yield Query(path.name, f"variable {variable['name']}", variable["definition"])


def substitute(expr: str, values: dict[str, str]) -> str:
    """``expr`` with its variables replaced; KeyError names a variable ``values`` lacks."""
    return VARIABLE.sub(lambda m: values[m[1] or m[2]], expr)


def used_variables(expr: str) -> set[str]:
    return {m[1] or m[2] for m in VARIABLE.finditer(expr)}
