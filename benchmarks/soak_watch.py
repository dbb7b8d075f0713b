"""What the soak watches beside its faults: the product's processes' memory, and the sources
page while a fault lasts (was it served, which sources did it show unreachable?).

Apart from ``benchmarks/soak.py`` (the stack, the faults, the scenarios and the figures) so each
module stays within a page count a reader can hold.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lab.services import LAB_CLUSTER
from tests.lab_world import Browser

if TYPE_CHECKING:
    from benchmarks.soak import Lab

DOWN_ROW = re.compile(r'<tr class="down-row">\s*<td>([^<]+)</td>')
COLLECTION_STOPPED = 'data-collection="stopped"'


def now() -> float:
    return time.time()


def iso(t: float) -> str:
    """A wall time as the figures print it (UTC, to the second): to match logs by eye."""
    return datetime.fromtimestamp(t, UTC).strftime("%H:%M:%S")


# --- processes ---------------------------------------------------------------------------------


def _children() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        out.setdefault(ppid, []).append(int(entry.name))
    return out


def descendants(pid: int) -> list[int]:
    """``pid`` and every process under it (a worker's Spark JVM and its Python workers)."""
    children = _children()
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo.extend(children.get(p, []))
    return found


def rss_kib(pid: int) -> int:
    """VmRSS of one process, 0 if it is gone (a child may exit while the tree is read)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def cmdline(pid: int) -> str:
    """What a process runs: how a Spark JVM is told from the worker's Python children."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def memory(lab: Lab, services: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """Each service's RSS: its main process and its whole process tree, in MiB."""
    out = {}
    for name in services:
        pid = lab.pid(name)
        if pid is None:
            out[name] = {"pid": None}
            continue
        tree = descendants(pid)
        out[name] = {
            "pid": pid,
            "rss_mib": round(rss_kib(pid) / 1024, 1),
            "tree_rss_mib": round(sum(rss_kib(p) for p in tree) / 1024, 1),
            "processes": len(tree),
        }
    return out


class MemoryWatch:
    """Every service's memory every ``every_s`` in a thread, so the figures can say whether it
    stayed flat after the first ``settle_s`` (caches filled, JVMs warm): the growth from the
    first reading at or after it to the last, per service's process tree."""

    def __init__(self, lab: Lab, services: tuple[str, ...], every_s: float = 300.0) -> None:
        self.lab, self.services, self.every_s = lab, services, every_s
        self.readings: list[tuple[float, dict[str, dict[str, Any]]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="soak-memory", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)
        self.readings.append((now(), memory(self.lab, self.services)))

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.readings.append((now(), memory(self.lab, self.services)))
            except Exception as exc:  # noqa: BLE001 - a service restarting; read it next time
                print(f"memory reading failed: {exc}", flush=True)
            self._stop.wait(self.every_s)

    def figures(
        self, start: float, settle_s: float = 900.0, restarts: dict[str, list[float]] | None = None
    ) -> dict[str, Any]:
        """Per service: MiB of its tree at the settled reading and at the end, the growth in
        per cent, and the series (minutes since the start, MiB). A service a fault started
        again (``restarts``: its times) is a new process whose JVM fills its heap and caches
        anew, so its growth is also given per incarnation, each from its own first
        ``settle_s`` (``per_process``; ``growth_pct_per_process`` the largest)."""
        settled = [(at, r) for at, r in self.readings if at - start >= settle_s]
        out: dict[str, Any] = {"settle_min": settle_s / 60, "every_min": self.every_s / 60}
        for name in self.services:
            timed = [
                (at, r[name]["tree_rss_mib"])
                for at, r in self.readings
                if r.get(name, {}).get("tree_rss_mib")
            ]
            row: dict[str, Any] = {"series": [(round((at - start) / 60, 1), m) for at, m in timed]}
            first = next((r[name].get("tree_rss_mib") for _, r in settled if name in r), None)
            last = settled[-1][1].get(name, {}).get("tree_rss_mib") if settled else None
            if first and last:
                growth = round(100 * (last / first - 1), 1)
                row.update(settled_mib=first, end_mib=last, growth_pct=growth)
            lives = incarnation_growth(timed, [start, *(restarts or {}).get(name, [])], settle_s)
            row["per_process"] = [{**life, "from_min": round((life["from"] - start) / 60, 1)}
                                  for life in lives]  # fmt: skip
            if lives:
                row["growth_pct_per_process"] = max(life["growth_pct"] for life in lives)
            out[name] = row
        return out


def incarnation_growth(
    series: list[tuple[float, float]], starts: list[float], settle_s: float
) -> list[dict[str, float]]:
    """The growth of each life of a process: between two (re)starts, from its first reading
    ``settle_s`` after the start to its last reading before the next; lives with fewer than
    two such readings say nothing and are left out."""
    bounds = [*sorted(starts), float("inf")]
    lives = []
    for begun, next_start in zip(bounds, bounds[1:], strict=False):
        inside = [(at, mib) for at, mib in series if begun + settle_s <= at < next_start]
        if len(inside) >= 2:
            (at0, first), (_, last) = inside[0], inside[-1]
            lives.append({"from": at0, "settled_mib": first, "end_mib": last,
                          "growth_pct": round(100 * (last / first - 1), 1)})  # fmt: skip
    return lives


def restart_times(
    faults: Iterable[Any], restarting: Mapping[str, str]
) -> dict[str, list[float]]:
    """Per service, when faults restarted it (``restarting``: fault name to service): their
    end, for the faults that acted. One that failed before acting (a Spark kill that found no
    status run going) restarted nothing and starts no new life."""
    out: dict[str, list[float]] = {}
    for fault in faults:
        if fault.name in restarting and fault.acted:
            out.setdefault(restarting[fault.name], []).append(fault.ended)
    return out


# --- the sources page --------------------------------------------------------------------------


@dataclass
class PageLook:
    """One fetch of the sources page: its status and the sources it showed unreachable."""

    at: float
    status: int | str
    down: list[str]


class PageWatcher:
    """Fetches the sources page every few seconds while a fault lasts: was the page served,
    and which sources did it show unreachable?"""

    def __init__(self, browser: Browser, every_s: float = 3.0) -> None:
        self.browser = browser
        self.every_s = every_s
        self.looks: list[PageLook] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.looks.append(self.look())
            self._stop.wait(self.every_s)

    def look(self) -> PageLook:
        t = now()
        try:
            status, body, _ = self.browser.get(f"/sources/?cluster={LAB_CLUSTER}")
        except Exception as exc:  # noqa: BLE001 - a failed fetch is a finding, not a crash
            return PageLook(t, f"{type(exc).__name__}: {exc}"[:200], [])
        text = body.decode(errors="replace")
        if 'name="password"' in text:
            return PageLook(t, "login page", [])
        down = set(DOWN_ROW.findall(text))
        if COLLECTION_STOPPED in text:  # no source row can show Redis or beat down
            down.add("collection")
        return PageLook(t, status, sorted(down))

    @contextmanager
    def watching(self) -> Iterator[PageWatcher]:
        self._thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            self._thread.join(60)


def page_figures(looks: list[PageLook], expected: str | None, t0: float) -> dict[str, Any]:
    """Whether every fetch was served, and when the expected source first showed down."""
    shown = [lk for lk in looks if expected and expected in lk.down]
    return {
        "fetches": len(looks),
        "served": sum(1 for lk in looks if lk.status == 200),
        "not_served": [f"{iso(lk.at)} {lk.status}" for lk in looks if lk.status != 200][:5],
        "expected_down": expected,
        "shown_down": (bool(shown) if expected else None),
        "first_shown_after_s": round(shown[0].at - t0, 1) if shown else None,
        "down_seen": sorted({s for lk in looks for s in lk.down}),
    }
