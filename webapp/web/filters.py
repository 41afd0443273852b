"""Jinja filters that show values the way people write them, one way on every page.

Times and durations; numbers with thousands separators and never in scientific notation;
booleans as "yes"/"no"; nothing (None, "") as a dash; lists as chips; ratios as percentages.
``readable`` picks the right one for any JSON-like value, so a page that lists options or
metrics never prints Python's ``repr`` ("True", "None", "['<unk>', '<s>']", "6.641e+04").

Left out: the values' meanings (labels and which figure is a ratio are the callers' choice).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flask import Flask
from markupsafe import Markup, escape

DASH = "—"
MAX_CHIPS = 50  # a list longer than this shows its first items and how many more there are


@dataclass(frozen=True, slots=True)
class Figure:
    """One labelled value of a page's table of figures, shown through :func:`readable`:
    ``style`` is the filter's style ("percent" or ""), ``testid`` names the cell for tests."""

    label: str
    value: Any
    style: str = ""
    testid: str = ""


def when(value: dt.datetime | None) -> str:
    """A UTC timestamp to the minute (pages are server-rendered, so no local time zone)."""
    if value is None:
        return DASH
    return value.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def duration(seconds: float | None) -> str:
    """Seconds as "0.42 s", "12 s", "3 min 5 s" or "2 h 4 min"."""
    if seconds is None:
        return DASH
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


def remaining(seconds: float | None) -> str:
    """An ETA as "about 12 s left" or "about 3 min 5 s left": whole seconds, nothing under one."""
    if seconds is None or seconds < 1:
        return ""
    whole = int(round(seconds))
    return f"about {whole} s left" if whole < 60 else f"about {duration(whole)} left"


def number(value: float | int | None, digits: int = 4) -> str:
    """``66410.0`` -> "66,410", ``3.891234`` -> "3.891", ``0.00012`` -> "0.00012": separators, no exponent.

    Integers keep every digit; other numbers keep ``digits`` significant digits (at least the
    whole part), without trailing zeros.
    """
    if value is None or isinstance(value, bool):
        return DASH if value is None else yes_no(value)
    if isinstance(value, int):
        return f"{value:,}"
    if not math.isfinite(value):
        return DASH if math.isnan(value) else ("∞" if value > 0 else "−∞")
    if value == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    text = f"{value:,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def percent(ratio: float | None) -> str:
    """``0.0734`` -> "7.34 %"."""
    if ratio is None or isinstance(ratio, bool):
        return DASH
    return f"{number(ratio * 100, 3)} %"


def quoted(text: str) -> str:
    """A name or file name inside a sentence, between typographic quotes and as its owner typed
    it: Python's ``repr`` would print "Bob 👩\\u200d🚀" for a ZWJ emoji, a name nobody can type back."""
    return f"“{text}”"


def yes_no(value: bool | None) -> str:
    """A boolean as "yes" or "no" (None as a dash)."""
    return DASH if value is None else ("yes" if value else "no")


def chips(values: Any) -> Markup:
    """A list as a row of chips, each item escaped and shown as code; an empty list as a dash."""
    items = list(values)
    if not items:
        return Markup(DASH)
    shown = "".join(f"<li><code>{escape(_plain(item))}</code></li>" for item in items[:MAX_CHIPS])
    more = f'<li class="more">and {len(items) - MAX_CHIPS:,} more</li>' if len(items) > MAX_CHIPS else ""
    return Markup(f'<ul class="chips">{shown}{more}</ul>')


def _plain(value: Any) -> str:
    """A scalar as text (the words and separators of :func:`readable`, without HTML)."""
    if value is None or isinstance(value, (bool, int, float)):
        return number(value) if value is not None and not isinstance(value, bool) else yes_no(value)
    return str(value)


def readable(value: Any, style: str = "") -> Markup | str:
    """Any JSON-like value as people write it; ``style="percent"`` shows a ratio as a percentage."""
    if style == "percent":
        return percent(value)
    if value is None or value == "":
        return DASH
    if isinstance(value, (list, tuple, set, frozenset)):
        return chips(value)
    if isinstance(value, Mapping):
        if not value:
            return DASH
        parts = (f"{escape(str(key).replace('_', ' '))}: {escape(readable(item))}" for key, item in value.items())
        return Markup("; ".join(parts))
    return _plain(value)


def label(name: str) -> str:
    """An option or field name as a label: ``vocab_size`` -> "Vocab size"."""
    text = str(name).replace("_", " ").strip()
    return text[:1].upper() + text[1:]


def init_app(app: Flask) -> None:
    """Register the filters."""
    for f in (when, duration, remaining, number, percent, yes_no, chips, readable, label):
        app.add_template_filter(f)
