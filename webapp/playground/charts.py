"""Server-rendered SVG charts: a line chart (compression against vocabulary size), a bar chart,
and a horizontal bar chart whose rows are labelled by name (the leaderboard's tokenizers).

Charts are small pictures built from numbers, so they are drawn here as SVG strings with no
JavaScript and nothing loaded from a CDN. Every text label goes through ``markupsafe.escape``
and every number through ``float`` formatting, so the result is safe to insert as ``Markup``.
Colours come from CSS classes (``chart-line``, ``chart-bar``, …) so dark mode applies.

Every chart has a bounded size whatever the data: a bar chart draws at most ``MAX_BARS`` bars
(more are merged into ranges, so a vocabulary with a 10 MB token does not draw ten million bars),
a horizontal one at most ``MAX_BARS`` rows (the rest are left out, and its title says so), and a
line at most ``MAX_POINTS`` points. Non-finite numbers are left out.

Ticks are round numbers, as people draw axes by hand: steps of 1, 2 or 5 times a power of ten
(:func:`tick_step`), so an axis reads 0, 1,000, 2,000, 3,000 and never 692.75 or 336.75. The value
axis runs from zero to the first tick at or above the largest value, so its top line is round too.

Left out: axes with many ticks, legends, interactivity; a ``<title>`` per point gives the value
on hover.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from markupsafe import Markup, escape

WIDTH, HEIGHT = 640, 260
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 16, 40
MAX_BARS = 60  # about 10 px per bar: narrower bars cannot be told apart anyway
MAX_POINTS = 400  # the line's vertices; a 600 px wide plot shows no more detail than that
RANGE_DASH = "–"


def numeric_points(raw: Sequence[object]) -> list[tuple[float, float]]:
    """The (x, y) pairs of stored data that are two finite numbers; anything else is left out."""
    points = []
    for item in raw:
        if isinstance(item, (list, tuple)) and len(item) >= 2:
            x, y = item[0], item[1]
            if (isinstance(x, (int, float)) and isinstance(y, (int, float)) and not isinstance(x, bool)
                    and not isinstance(y, bool) and math.isfinite(x) and math.isfinite(y)):
                points.append((float(x), float(y)))
    return points


def _fmt(value: float) -> str:
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if value == int(value):
        return str(int(value))
    return f"{value:.2f}"


def _frame(label_x: str, label_y: str, x_ticks: Sequence[tuple[float, str]],
           y_ticks: Sequence[tuple[float, str]], body: str, title: str) -> Markup:
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title)}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>',
        f'<line class="chart-axis" x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" y2="{HEIGHT - BOTTOM}"/>',
        f'<line class="chart-axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - BOTTOM}"/>',
    ]
    for x, text in x_ticks:
        parts.append(f'<text class="chart-tick" x="{x:.1f}" y="{HEIGHT - BOTTOM + 14}" text-anchor="middle">'
                     f'{escape(text)}</text>')
    for y, text in y_ticks:
        parts.append(f'<text class="chart-tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{escape(text)}</text>')
        parts.append(f'<line class="chart-grid" x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}"/>')
    parts.append(f'<text class="chart-label" x="{(LEFT + WIDTH - RIGHT) / 2:.0f}" y="{HEIGHT - 6}" '
                 f'text-anchor="middle">{escape(label_x)}</text>')
    parts.append(f'<text class="chart-label" x="14" y="{(TOP + HEIGHT - BOTTOM) / 2:.0f}" text-anchor="middle" '
                 f'transform="rotate(-90 14 {(TOP + HEIGHT - BOTTOM) / 2:.0f})">{escape(label_y)}</text>')
    parts.append(body)
    parts.append("</svg>")
    return Markup("".join(parts))


MAX_TICKS = 6  # labels on an axis; with 1-2-5 steps an axis shows between 3 and 6 of them


def _bounds(low: float, high: float, step: float, cover: bool) -> tuple[int, int]:
    """The first and last multiple of ``step`` inside ``low``..``high`` (around it, with ``cover``)."""
    eps = 1e-9
    if cover:
        return math.floor(low / step + eps), math.ceil(high / step - eps)
    return math.ceil(low / step - eps), math.floor(high / step + eps)


def tick_step(low: float, high: float, *, cover: bool = False, max_ticks: int = MAX_TICKS) -> float:
    """The smallest step of 1, 2 or 5 × 10^k that puts at most ``max_ticks`` ticks on the range."""
    span = high - low
    if not math.isfinite(span) or span <= 0:
        return 1.0
    power = 10.0 ** (math.floor(math.log10(span / max_ticks)) - 1)
    while True:  # at most a few rounds: the first power is one decade below any answer
        for m in (1, 2, 5):
            first, last = _bounds(low, high, m * power, cover)
            if last - first + 1 <= max_ticks:
                return m * power
        power *= 10


def _decimals(step: float) -> int:
    """Digits after the point that a tick of this step needs (0.5 -> 1, 0.05 -> 2, 200 -> 0)."""
    return max(0, -math.floor(math.log10(step) + 1e-9))


def ticks(low: float, high: float, *, cover: bool = False, max_ticks: int = MAX_TICKS) -> list[float]:
    """Round ticks for the range ``low``..``high``: every multiple of :func:`tick_step` inside it.

    With ``cover``, the first tick is at or below ``low`` and the last at or above ``high``, so the
    axis itself can run from tick to tick.
    """
    if not (math.isfinite(low) and math.isfinite(high)) or high < low:
        return []
    if high == low:
        return [low]
    step = tick_step(low, high, cover=cover, max_ticks=max_ticks)
    digits = _decimals(step)
    first, last = _bounds(low, high, step, cover)
    return [round(k * step, digits) + 0.0 for k in range(first, last + 1)]  # + 0.0: no "-0"


def tick_label(value: float, step: float) -> str:
    """A tick as written: thousands separators, as many decimals as the step needs, no exponent."""
    return f"{value:,.{_decimals(step)}f}" if step else _fmt(value)


def _labelled(values: Sequence[float]) -> list[tuple[float, str]]:
    step = values[1] - values[0] if len(values) > 1 else 0.0
    return [(v, tick_label(v, step)) for v in values]


def line_chart(points: Sequence[tuple[float, float]], *, label_x: str, label_y: str, title: str) -> Markup:
    """A line through ``points`` (x ascending), with a dot and hover value per point."""
    clean = sorted((float(x), float(y)) for x, y in points if math.isfinite(x) and math.isfinite(y))
    if not clean:
        return Markup("")
    if len(clean) > MAX_POINTS:  # keep every k-th point and the last, so the shape stays
        stride = -(-len(clean) // MAX_POINTS)
        clean = clean[::stride] + ([clean[-1]] if (len(clean) - 1) % stride else [])
    xs, ys = [p[0] for p in clean], [p[1] for p in clean]
    x0, x1 = min(xs), max(xs)
    y_ticks_at = ticks(min(0.0, min(ys)), max(ys) or 1.0, cover=True)
    y0, y1 = y_ticks_at[0], y_ticks_at[-1]
    span_x = (x1 - x0) or 1.0
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x: float) -> float:
        return LEFT + (x - x0) / span_x * plot_w

    def py(y: float) -> float:
        return TOP + plot_h - (y - y0) / ((y1 - y0) or 1.0) * plot_h

    path = " ".join(f"{'M' if i == 0 else 'L'}{px(x):.1f},{py(y):.1f}" for i, (x, y) in enumerate(clean))
    body = [f'<path class="chart-line" d="{path}" fill="none"/>']
    step = max(1, -(-len(clean) // 60))  # at most 61 dots (the last included), the line carries the rest
    for x, y in clean[::step] + ([clean[-1]] if (len(clean) - 1) % step else []):
        body.append(f'<circle class="chart-dot" cx="{px(x):.1f}" cy="{py(y):.1f}" r="3">'
                    f'<title>{escape(_fmt(x))}: {escape(_fmt(y))}</title></circle>')
    x_ticks = [(px(v), text) for v, text in _labelled(ticks(x0, x1))]
    y_ticks = [(py(v), text) for v, text in _labelled(y_ticks_at)]
    return _frame(label_x, label_y, x_ticks, y_ticks, "".join(body), title)


def _label(x: float | str) -> str:
    return x if isinstance(x, str) else _fmt(x)


def merge_bars(bars: Sequence[tuple[float | str, float]], max_bars: int = MAX_BARS) -> list[tuple[float | str, float]]:
    """At most ``max_bars`` bars: runs of neighbours become one bar labelled "first–last", summed."""
    if len(bars) <= max_bars:
        return list(bars)
    size = -(-len(bars) // max_bars)
    merged: list[tuple[float | str, float]] = []
    for start in range(0, len(bars), size):
        run = bars[start:start + size]
        first, last = _label(run[0][0]).split(RANGE_DASH)[0], _label(run[-1][0]).split(RANGE_DASH)[-1]
        merged.append((first if first == last else f"{first}{RANGE_DASH}{last}", sum(h for _, h in run)))
    return merged


def bar_chart(bars: Sequence[tuple[float | str, float]], *, label_x: str, label_y: str, title: str) -> Markup:
    """One bar per (x, height) pair, in the order given; x may be a label such as "5–8".

    More than ``MAX_BARS`` pairs are merged into ranges (:func:`merge_bars`).
    """
    bars = [(x, h) for x, h in bars if math.isfinite(h) and h >= 0]
    if not bars:
        return Markup("")
    bars = merge_bars(bars)
    y_ticks_at = ticks(0.0, max(h for _, h in bars) or 1.0, cover=True)
    top = y_ticks_at[-1]
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_w / len(bars)
    body = []
    label_every = max(1, len(bars) // 12)
    x_ticks = []
    for i, (x, h) in enumerate(bars):
        height = h / top * plot_h
        left = LEFT + i * slot
        body.append(f'<rect class="chart-bar" x="{left + slot * 0.1:.1f}" y="{TOP + plot_h - height:.1f}" '
                    f'width="{slot * 0.8:.1f}" height="{height:.1f}"><title>{escape(_label(x))}: '
                    f'{escape(_fmt(h))}</title></rect>')
        if i % label_every == 0:  # a range's tick shows where it starts; its title has both ends
            x_ticks.append((left + slot / 2, _label(x).split(RANGE_DASH)[0]))
    y_ticks = [(TOP + plot_h - v / top * plot_h, text) for v, text in _labelled(y_ticks_at)]
    return _frame(label_x, label_y, x_ticks, y_ticks, "".join(body), title)


ROW_HEIGHT = 24  # a horizontal bar's row: room for an 11 px label whatever the number of rows
LABEL_WIDTH = 168  # the names' column on the left
VALUE_ROOM = 92  # room right of the longest bar for its value and flag ("12.34 · lossy")
MAX_LABEL = 26  # characters of a name drawn; a longer one is cut with "…", its <title> has it whole


def _short(name: str) -> str:
    return name if len(name) <= MAX_LABEL else name[:MAX_LABEL - 1] + "…"


def hbar_chart(bars: Sequence[tuple[str, float, bool]], *, label_value: str, title: str, flag: str = "") -> Markup:
    """One horizontal bar per (name, value, flagged), top to bottom in the order given, names as row labels.

    Rows never overlap: the picture grows ``ROW_HEIGHT`` per row instead of thinning the bars, so
    twelve names read as well as two. A flagged bar gets the ``chart-bar-flagged`` class and
    ``flag`` after its value, so it is told apart without relying on colour.
    """
    clean = [(str(name), float(value), bool(flagged)) for name, value, flagged in bars
             if math.isfinite(value) and value >= 0]
    if not clean:
        return Markup("")
    if len(clean) > MAX_BARS:
        title = f"{title} (the first {MAX_BARS}; {len(clean) - MAX_BARS} more left out)"
        clean = clean[:MAX_BARS]
    value_ticks = ticks(0.0, max(value for _, value, _ in clean) or 1.0, cover=True)
    top = value_ticks[-1]
    plot_w = WIDTH - LABEL_WIDTH - VALUE_ROOM
    plot_bottom = TOP + len(clean) * ROW_HEIGHT
    height = plot_bottom + BOTTOM
    parts = [f'<svg class="chart" data-chart="hbar" viewBox="0 0 {WIDTH} {height}" role="img" '
             f'aria-label="{escape(title)}" '
             f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>']
    for value, text in _labelled(value_ticks):
        x = LABEL_WIDTH + value / top * plot_w
        parts.append(f'<line class="chart-grid" x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{plot_bottom}"/>')
        parts.append(f'<text class="chart-tick" x="{x:.1f}" y="{plot_bottom + 14}" text-anchor="middle">'
                     f'{escape(text)}</text>')
    for i, (name, value, flagged) in enumerate(clean):
        y = TOP + i * ROW_HEIGHT
        width = value / top * plot_w
        shown = _fmt(value) + (f" · {flag}" if flagged and flag else "")
        parts.append(f'<text class="chart-tick chart-row-label" x="{LABEL_WIDTH - 6}" y="{y + ROW_HEIGHT / 2 + 4:.1f}" '
                     f'text-anchor="end"><title>{escape(name)}</title>{escape(_short(name))}</text>')
        parts.append(f'<rect class="chart-bar{" chart-bar-flagged" if flagged else ""}" x="{LABEL_WIDTH}" y="{y + 4}" '
                     f'width="{width:.1f}" height="{ROW_HEIGHT - 8}">'
                     f'<title>{escape(name)}: {escape(shown)}</title></rect>')
        parts.append(f'<text class="chart-tick chart-value{" chart-value-flagged" if flagged else ""}" '
                     f'x="{LABEL_WIDTH + width + 4:.1f}" y="{y + ROW_HEIGHT / 2 + 4:.1f}">{escape(shown)}</text>')
    parts.append(f'<line class="chart-axis" x1="{LABEL_WIDTH}" y1="{TOP}" x2="{LABEL_WIDTH}" y2="{plot_bottom}"/>')
    parts.append(f'<line class="chart-axis" x1="{LABEL_WIDTH}" y1="{plot_bottom}" x2="{LABEL_WIDTH + plot_w}" '
                 f'y2="{plot_bottom}"/>')
    parts.append(f'<text class="chart-label" x="{LABEL_WIDTH + plot_w / 2:.0f}" y="{height - 6}" '
                 f'text-anchor="middle">{escape(label_value)}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))
