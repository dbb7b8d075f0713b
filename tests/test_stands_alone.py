"""A clone must work with nothing beside it: no code, test or document reaches outside the
repository for the specification, the domain notes or the conformance data."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SKIP = {".venv", ".git", "node_modules", "__pycache__", ".ruff_cache"}
# A path out of the checkout into the folder the project was developed beside.
OUTSIDE = re.compile(r"\.\./shared|parent\s*/\s*\"shared\"|shared/(testdata|SPEC|DOMAIN|LAB)")


def project_files() -> list[Path]:
    return [
        p
        for p in REPO.rglob("*")
        if p.is_file()
        and p.suffix in {".py", ".md", ".yml", ".yaml", ".toml", ".cfg", ".sh", ""}
        and not SKIP & set(p.relative_to(REPO).parts)
        and p.stat().st_size < 2_000_000
    ]


def test_nothing_reaches_outside_the_repository() -> None:
    offenders = []
    for path in project_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        offenders += [
            f"{path.relative_to(REPO)}:{n}"
            for n, line in enumerate(text.splitlines(), 1)
            if OUTSIDE.search(line) and path != Path(__file__).resolve()
        ]
    assert offenders == []


def test_what_the_code_cites_is_here() -> None:
    for name in ("SPEC.md", "DOMAIN.md", "LAB.md", "CONSUMER_OFFSETS_LAYOUT.md", "ARCHITECTURE.md"):
        assert (REPO / "docs" / name).stat().st_size > 1000, name
    for name in ("burrow_evaluator_windows.json", "consumer_offsets_vectors.json", "README.md"):
        assert (REPO / "tests" / "data" / name).stat().st_size > 500, name
