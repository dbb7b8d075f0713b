"""The conformance data the tests read, from ``tests/data/`` (see its README for provenance)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data"


def load_json(name: str) -> Any:
    return json.loads((DATA / name).read_text(encoding="utf-8"))
