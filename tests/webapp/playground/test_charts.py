"""Chart axes: ticks are round 1-2-5 steps, the value axis ends on a tick, labels are written as people do."""

from __future__ import annotations

import math
import re

import pytest

from webapp.playground import charts


@pytest.mark.parametrize(("low", "high", "cover", "expected"), [
    pytest.param(0, 2771, True, [0, 1000, 2000, 3000], id="counts-to-2771"),
    pytest.param(0, 1347, True, [0, 500, 1000, 1500], id="counts-to-1347"),
    pytest.param(1000, 32000, False, [5000, 10000, 15000, 20000, 25000, 30000], id="vocab-sizes-inside"),
    pytest.param(256, 50257, False, [10000, 20000, 30000, 40000, 50000], id="gpt2-vocab-inside"),
    pytest.param(0, 3.891, True, [0, 1, 2, 3, 4], id="bytes-per-token"),
    pytest.param(0, 0.0734, True, [0, 0.02, 0.04, 0.06, 0.08], id="small-ratio"),
    pytest.param(0, 1, True, [0, 0.2, 0.4, 0.6, 0.8, 1], id="unit"),
    pytest.param(-3, 12, True, [-5, 0, 5, 10, 15], id="negative-low"),
    pytest.param(3.2, 3.9, False, [3.2, 3.4, 3.6, 3.8], id="narrow-inside"),
    pytest.param(5, 5, True, [5], id="one-value"),
    pytest.param(5, 4, True, [], id="empty-range"),
    pytest.param(0, float("inf"), True, [], id="not-finite"),
])
def test_ticks_are_round_steps(low: float, high: float, cover: bool, expected: list[float]) -> None:
    assert charts.ticks(low, high, cover=cover) == expected


def test_old_quarter_ticks_are_gone() -> None:
    """A histogram whose tallest bar is 2,771 drew 692.75, 1,385.5 and 2,078.25 as its grid."""
    assert [charts.tick_label(v, 1000) for v in charts.ticks(0, 2771, cover=True)] == ["0", "1,000", "2,000", "3,000"]
    assert [charts.tick_label(v, 0.02) for v in charts.ticks(0, 0.0734, cover=True)] == [
        "0.00", "0.02", "0.04", "0.06", "0.08"]


def test_every_step_is_one_two_or_five_times_a_power_of_ten_and_ticks_are_few() -> None:
    for high in (1, 7, 13, 99, 101, 692.75, 1347, 2771, 50257, 123456, 3.891, 0.0734):
        values = charts.ticks(0, high, cover=True)
        step = values[1] - values[0]
        assert 2 <= len(values) <= charts.MAX_TICKS and values[0] == 0 and values[-1] >= high, high
        assert round(step / 10 ** math.floor(math.log10(step)), 9) in (1, 2, 5), (high, step)


def _tick_texts(svg: str, anchor: str) -> list[str]:
    return re.findall(rf'class="chart-tick"[^>]*text-anchor="{anchor}">([^<]*)<', svg)


def test_bar_chart_value_axis_runs_to_a_round_top() -> None:
    svg = str(charts.bar_chart([(1, 120), (2, 2771), (3, 1800)], label_x="length", label_y="tokens", title="t"))
    assert _tick_texts(svg, "end") == ["0", "1,000", "2,000", "3,000"]
    assert _tick_texts(svg, "middle") == ["1", "2", "3"]
    # 2,771 of 3,000 fills 92.4 % of the 204 px plot: height 188.4
    assert 'height="188.4"><title>2: 2,771</title>' in svg


def test_line_chart_ticks_both_axes_with_round_numbers() -> None:
    points = [(1000, 2.9), (8000, 3.6), (16000, 3.8), (32000, 3.95)]
    svg = str(charts.line_chart(points, label_x="vocabulary size", label_y="bytes per token", title="t"))
    assert _tick_texts(svg, "middle") == ["5,000", "10,000", "15,000", "20,000", "25,000", "30,000"]
    assert _tick_texts(svg, "end") == ["0", "1", "2", "3", "4"]
