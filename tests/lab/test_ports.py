"""Port claims: two processes picking lab ports at once never get the same one, and a claim
lapses with the process that made it."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab import ports


@pytest.fixture
def claims(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(ports, "CLAIMS", tmp_path / "claims")
    return tmp_path / "claims"


def test_a_claimed_port_is_not_claimed_again_while_its_process_lives(claims: Path) -> None:
    assert ports.claim(25001)
    assert not ports.claim(25001)  # this process holds it
    assert (claims / "25001").read_text() == str(__import__("os").getpid())


def test_a_dead_process_claim_is_taken_over(claims: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    claims.mkdir(parents=True)
    (claims / "25002").write_text(dead)
    assert ports.claim(25002)


@pytest.mark.parametrize(("age_s", "holds"), [(0, True), (3600, False)])
def test_an_empty_claim_holds_only_while_it_may_still_be_written(
    claims: Path, age_s: float, holds: bool
) -> None:
    import os

    claims.mkdir(parents=True)
    path = claims / "25003"
    path.write_text("")
    old = time.time() - age_s
    os.utime(path, (old, old))
    assert ports.claim(25003) is not holds


def test_two_processes_picking_at_once_get_disjoint_ports(claims: Path) -> None:
    """Each picks many ports from a small range while the other does, as two stacks do, and
    lives on (a claim lapses with its process) until both have picked."""
    code = (
        "import sys; from pathlib import Path; from lab import ports;"
        f"ports.CLAIMS = Path({str(claims)!r}); ports._LOWEST = 26000;"
        "ports.ephemeral_range = lambda: (26400, 60999);"
        "print(' '.join(map(str, ports.pick_free_ports(150))), flush=True); sys.stdin.read()"
    )  # fmt: skip
    root = Path(__file__).resolve().parents[2]
    procs = [
        subprocess.Popen([sys.executable, "-c", code], cwd=root, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)  # fmt: skip
        for _ in range(2)
    ]
    try:
        picked = [set(map(int, p.stdout.readline().split())) for p in procs]
    finally:
        for p in procs:
            p.communicate(timeout=60)
    assert all(len(p) == 150 for p in picked)
    assert not picked[0] & picked[1]
    # Once both are gone, their claims lapse: the ports can be claimed again.
    assert ports.claim(min(picked[0]))
