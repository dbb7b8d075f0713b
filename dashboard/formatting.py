"""How figures read to people, on the pages and in the commands' text reports: short durations,
big numbers, status CSS classes (pure)."""

from __future__ import annotations

from datetime import datetime

STATUS_CLASS = {
    "OK": "ok",
    "WARN": "warn",
    "STALL": "bad",
    "STOP": "bad",
    "REWIND": "bad",
    "ERR": "bad",
    "UNKNOWN": "unknown",
}


def duration(seconds: float | None) -> str:
    """``95`` -> ``1m 35s``; two units at most, the way people read an age or a time lag."""
    if seconds is None:
        return "—"
    s = int(round(seconds))
    if s < 0:
        return "-" + duration(-seconds)
    if s < 60:
        return f"{s}s"
    minutes, sec = divmod(s, 60)
    if minutes < 60:
        return f"{minutes}m {sec}s" if sec else f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h {minutes}m" if minutes else f"{hours}h"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h" if hours else f"{days}d"


def number(value: float | None) -> str:
    """Thousands separated by thin spaces; ``—`` for unknown (never 0: unknown is not zero)."""
    if value is None:
        return "—"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.1f}".replace(",", "\u202f")
    return f"{int(value):,}".replace(",", "\u202f")


def age(at: datetime | None, now: datetime) -> str:
    if at is None:
        return "never"
    return f"{duration((now - at).total_seconds())} ago"


def status_class(status: str) -> str:
    return STATUS_CLASS.get(status, "unknown")


def percent(share: float | None) -> str:
    return "—" if share is None else f"{share * 100:.0f}%"


ARROWS = {"rising": "↑", "falling": "↓", "flat": "→"}
TREND_WORDS = {"rising": "lag rising", "falling": "lag falling", "flat": "lag steady"}


def arrow(direction: str | None) -> str:
    """The lag slope's direction as an arrow; ``—`` when unknown."""
    return ARROWS.get(direction or "", "—")


def rate(per_s: float | None) -> str:
    """``12.5/s`` (a slope keeps its sign); ``—`` for unknown."""
    if per_s is None:
        return "—"
    shown = f"{per_s:,.2f}" if abs(per_s) < 10 else f"{per_s:,.0f}"
    return shown.replace(",", "\u202f") + "/s"

