"""Server-rendered SVG charts: a line chart (compression against vocabulary size) and a bar chart.

Charts are small pictures built from numbers, so they are drawn here as SVG strings with no
JavaScript and nothing loaded from a CDN. Every text label goes through ``markupsafe.escape``
and every number through ``float`` formatting, so the result is safe to insert as ``Markup``.
Colours come from CSS classes (``chart-line``, ``chart-bar``, …) so dark mode applies.

Left out: axes with many ticks, legends, interactivity; a ``<title>`` per point gives the value
on hover.
"""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup, escape

WIDTH, HEIGHT = 640, 260
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 16, 40


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
        parts.append(f'<text class="chart-tick" x="{x:.1f}" y="{HEIGHT - BOTTOM + 14}" text-anchor="middle">{escape(text)}</text>')
    for y, text in y_ticks:
        parts.append(f'<text class="chart-tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{escape(text)}</text>')
        parts.append(f'<line class="chart-grid" x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}"/>')
    parts.append(f'<text class="chart-label" x="{(LEFT + WIDTH - RIGHT) / 2:.0f}" y="{HEIGHT - 6}" text-anchor="middle">{escape(label_x)}</text>')
    parts.append(f'<text class="chart-label" x="14" y="{(TOP + HEIGHT - BOTTOM) / 2:.0f}" text-anchor="middle" '
                 f'transform="rotate(-90 14 {(TOP + HEIGHT - BOTTOM) / 2:.0f})">{escape(label_y)}</text>')
    parts.append(body)
    parts.append("</svg>")
    return Markup("".join(parts))


def _ticks(low: float, high: float, n: int = 5) -> list[float]:
    if high <= low:
        return [low]
    return [low + (high - low) * i / (n - 1) for i in range(n)]


def line_chart(points: Sequence[tuple[float, float]], *, label_x: str, label_y: str, title: str) -> Markup:
    """A line through ``points`` (x ascending), with a dot and hover value per point."""
    clean = sorted((float(x), float(y)) for x, y in points)
    if not clean:
        return Markup("")
    xs, ys = [p[0] for p in clean], [p[1] for p in clean]
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(0.0, min(ys)), max(ys) * 1.05 or 1.0
    span_x = (x1 - x0) or 1.0
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x: float) -> float:
        return LEFT + (x - x0) / span_x * plot_w

    def py(y: float) -> float:
        return TOP + plot_h - (y - y0) / ((y1 - y0) or 1.0) * plot_h

    path = " ".join(f"{'M' if i == 0 else 'L'}{px(x):.1f},{py(y):.1f}" for i, (x, y) in enumerate(clean))
    body = [f'<path class="chart-line" d="{path}" fill="none"/>']
    step = max(1, len(clean) // 60)  # at most ~60 dots, the line carries the rest
    for x, y in clean[::step] + ([clean[-1]] if (len(clean) - 1) % step else []):
        body.append(f'<circle class="chart-dot" cx="{px(x):.1f}" cy="{py(y):.1f}" r="3">'
                    f'<title>{escape(_fmt(x))}: {escape(_fmt(y))}</title></circle>')
    x_ticks = [(px(v), _fmt(v)) for v in _ticks(x0, x1)]
    y_ticks = [(py(v), _fmt(v)) for v in _ticks(y0, y1)]
    return _frame(label_x, label_y, x_ticks, y_ticks, "".join(body), title)


def bar_chart(bars: Sequence[tuple[float, float]], *, label_x: str, label_y: str, title: str) -> Markup:
    """One bar per (x, height) pair, in the order given."""
    if not bars:
        return Markup("")
    top = max(h for _, h in bars) or 1.0
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_w / len(bars)
    body = []
    label_every = max(1, len(bars) // 12)
    x_ticks = []
    for i, (x, h) in enumerate(bars):
        height = h / top * plot_h
        left = LEFT + i * slot
        body.append(f'<rect class="chart-bar" x="{left + slot * 0.1:.1f}" y="{TOP + plot_h - height:.1f}" '
                    f'width="{slot * 0.8:.1f}" height="{height:.1f}"><title>{escape(_fmt(x))}: '
                    f'{escape(_fmt(h))}</title></rect>')
        if i % label_every == 0:
            x_ticks.append((left + slot / 2, _fmt(x)))
    y_ticks = [(TOP + plot_h - v / top * plot_h, _fmt(v)) for v in _ticks(0, top)]
    return _frame(label_x, label_y, x_ticks, y_ticks, "".join(body), title)
