"""Jinja filters for times and durations, so templates show them one consistent way."""

from __future__ import annotations

import datetime as dt

from flask import Flask


def when(value: dt.datetime | None) -> str:
    """A UTC timestamp to the minute (pages are server-rendered, so no local time zone)."""
    if value is None:
        return "—"
    return value.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def duration(seconds: float | None) -> str:
    """Seconds as "0.42 s", "12 s", "3 min 5 s" or "2 h 4 min"."""
    if seconds is None:
        return "—"
    if seconds < 10:
        return f"{seconds:.2f} s"
    whole = int(round(seconds))
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def init_app(app: Flask) -> None:
    """Register the filters."""
    app.add_template_filter(when)
    app.add_template_filter(duration)
