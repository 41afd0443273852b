"""Leaderboards that do not reward loss (issue 24, item 3): a lossy pair (unknown tokens, or a
round trip that differs) carries a badge with the reason and ranks after the lossless ones
whatever the column, ``?lossy=mixed`` sorts purely by the column, and the chart lists its bars
in the table's order, one labelled row per tokenizer, lossy bars marked.

Boards are stored with their results directly (no job), so every order here is exact.
"""

from __future__ import annotations

import csv
import html
import io
import re
from itertools import pairwise
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from webapp.leaderboards.leaderboard import loss_reasons, rows
from webapp.playground.charts import MAX_LABEL, hbar_chart
from webapp.store import db
from webapp.store.models import Leaderboard

CORPUS = 7


def figures(bpt: float, *, unk_rate: float = 0.0, lossless: bool = True, fertility: float = 1.5) -> dict[str, Any]:
    return {"chars": 900, "bytes": 1000, "words": 200, "tokens": round(1000 / bpt), "bytes_per_token": bpt,
            "chars_per_token": bpt * 0.9, "fertility": fertility, "unk_tokens": round(unk_rate * 1000 / bpt),
            "unk_rate": unk_rate, "lossless": lossless, "first_difference": None if lossless else 3,
            "vocab_size": 100, "vocab_used": 50, "vocab_utilisation": 0.5}


# The user's board on zh.txt: the WordPiece that loses 28.2% of its tokens has the best bytes/token.
ZH = {1: ("byte-bpe", figures(2.1, fertility=1.2)),
      2: ("wordpiece", figures(3.9, unk_rate=0.282, lossless=False, fertility=1.0)),
      3: ("unigram", figures(2.6, fertility=1.4)),
      4: ("char-level", figures(1.0, lossless=False, fertility=3.0)),
      5: ("tiktoken", figures(2.4, fertility=1.1))}


def board_of(pairs: dict[int, tuple[str, dict[str, Any] | None]], team_id: int = 1) -> Leaderboard:
    return Leaderboard(team_id=team_id, name="zh", tokenizers=[{"id": i, "name": n} for i, (n, _) in pairs.items()],
                       corpora=[{"id": CORPUS, "name": "zh.txt"}], max_bytes=1024,
                       results={f"{CORPUS}:{i}": f for i, (_, f) in pairs.items() if f is not None})


def stored(app: Flask, pairs: dict[int, tuple[str, dict[str, Any] | None]]) -> int:
    with app.app_context():
        board = board_of(pairs)
        db.get_session().add(board)
        db.get_session().commit()
        return board.id


def ids(board: Leaderboard, **options: Any) -> list[int]:
    return [row.tokenizer_id for row in rows(board, CORPUS, **options)]


@pytest.mark.parametrize(("figs", "reasons"), [
    (figures(2.0), ()),
    (figures(2.0, unk_rate=0.282, lossless=False), ("28.2% unknown tokens", "round trip differs")),
    (figures(2.0, unk_rate=0.123), ("12.3% unknown tokens",)),
    (figures(2.0, unk_rate=0.00001), ("under 0.1% unknown tokens",)),
    (figures(2.0, lossless=False), ("round trip differs",)),
    ({**figures(2.0), "lossless": None}, ()),
    (None, ()),
], ids=["lossless", "both", "unknown", "tiny-unknown", "differs", "round-trip-unknown", "no-figures"])
def test_loss_reasons_read_as_badges(figs: dict[str, Any] | None, reasons: tuple[str, ...]) -> None:
    assert loss_reasons(figs) == reasons


def test_a_lossy_tokenizer_with_the_best_bytes_per_token_ranks_after_the_lossless_ones() -> None:
    board = board_of(ZH)
    assert ids(board) == [3, 5, 1, 2, 4]  # lossless by bytes/token, then the lossy ones by bytes/token
    assert ids(board, lossy_last=False) == [2, 3, 5, 1, 4]  # ``lossy=mixed``: the pure sort


@pytest.mark.parametrize(("sort", "descending", "expected", "pure"), [
    ("fertility", False, [5, 1, 3, 2, 4], [2, 5, 1, 3, 4]),
    ("tokens", False, [3, 5, 1, 2, 4], [2, 3, 5, 1, 4]),
    ("unk_rate", False, [1, 3, 5, 4, 2], [1, 3, 4, 5, 2]),
    ("tokenizer", False, [1, 5, 3, 4, 2], [1, 4, 5, 3, 2]),
    ("lossless", True, [1, 3, 5, 2, 4], [1, 3, 5, 2, 4]),
], ids=["fertility", "tokens", "unknown", "name", "round-trip"])
def test_lossy_pairs_rank_last_whatever_the_column(sort: str, descending: bool, expected: list[int],
                                                   pure: list[int]) -> None:
    board = board_of(ZH)
    assert ids(board, sort=sort, descending=descending) == expected
    assert ids(board, sort=sort, descending=descending, lossy_last=False) == pure


def test_pairs_without_figures_stay_at_the_bottom() -> None:
    board = board_of({**ZH, 6: ("waiting", None)})
    assert ids(board) == [3, 5, 1, 2, 4, 6]


def _table_order(page: str, corpus_id: int = CORPUS) -> list[str]:
    section = page.split(f'data-testid="corpus-{corpus_id}"', 1)[1]
    return [html.unescape(name).strip() for name in re.findall(r'<th scope="row">([^<]*)', section)]


def _bar_order(page: str) -> list[str]:
    svg = page.split('<svg class="chart" data-chart="hbar"', 1)[1].split("</svg>", 1)[0]
    return [html.unescape(name) for name in re.findall(r'<rect class="chart-bar[^"]*"[^>]*><title>([^<]*):', svg)]


def test_the_page_badges_lossy_pairs_and_ranks_them_last(app: Flask, client: FlaskClient) -> None:
    board_id = stored(app, ZH)
    page = client.get(f"/leaderboards/{board_id}").get_data(as_text=True)
    assert _table_order(page) == ["unigram", "tiktoken", "byte-bpe", "wordpiece", "char-level"]
    badges = re.findall(r'<tr data-tokenizer="(\d+)" class="lossy" data-lossy="yes">\s*<th scope="row">[^<]*(.*?)</th>',
                        page, re.S)
    assert [(int(i), re.findall(r'data-testid="lossy-badge">([^<]*)<', cell)) for i, cell in badges] == [
        (2, ["28.2% unknown tokens", "round trip differs"]), (4, ["round trip differs"])]
    assert 'href="/leaderboards/%d?sort=bytes_per_token&amp;order=desc&amp;lossy=mixed" data-testid="lossy-toggle"' \
        % board_id in page


def test_lossy_mixed_restores_the_pure_sort_and_keeps_it_in_the_links(app: Flask, client: FlaskClient) -> None:
    board_id = stored(app, ZH)
    page = client.get(f"/leaderboards/{board_id}?lossy=mixed").get_data(as_text=True)
    assert _table_order(page) == ["wordpiece", "unigram", "tiktoken", "byte-bpe", "char-level"]
    assert f'href="/leaderboards/{board_id}?sort=fertility&amp;order=asc&amp;lossy=mixed" data-sort="fertility"' in page
    assert f'href="/leaderboards/{board_id}?sort=bytes_per_token&amp;order=desc" data-testid="lossy-toggle"' in page
    page = client.get(f"/leaderboards/{board_id}?sort=fertility&order=asc&lossy=mixed").get_data(as_text=True)
    assert _table_order(page) == ["wordpiece", "tiktoken", "byte-bpe", "unigram", "char-level"]
    assert _bar_order(page) == _table_order(page)


@pytest.mark.parametrize("query", ["", "?lossy=mixed", "?sort=fertility&order=asc", "?sort=tokenizer&order=desc"],
                         ids=["default", "mixed", "fertility", "name-desc"])
def test_the_chart_lists_bars_in_the_tables_order_with_lossy_bars_marked(app: Flask, client: FlaskClient,
                                                                         query: str) -> None:
    board_id = stored(app, ZH)
    page = client.get(f"/leaderboards/{board_id}{query}").get_data(as_text=True)
    assert _bar_order(page) == _table_order(page)
    svg = page.split('<svg class="chart" data-chart="hbar"', 1)[1].split("</svg>", 1)[0]
    assert sorted(re.findall(r'class="chart-bar chart-bar-flagged"[^>]*><title>([^<]*):', svg)) == [
        "char-level", "wordpiece"]
    assert svg.count("· lossy</text>") == 2


def test_twelve_tokenizers_each_get_a_readable_row_label(app: Flask, client: FlaskClient) -> None:
    names = [f"tokenizer number {i:02d} with a long name" for i in range(12)]
    pairs = {i + 1: (name, figures(1.0 + i / 4, unk_rate=0.05 if i % 3 == 0 else 0.0)) for i, name in enumerate(names)}
    board_id = stored(app, pairs)
    page = client.get(f"/leaderboards/{board_id}").get_data(as_text=True)
    svg = page.split('<svg class="chart" data-chart="hbar"', 1)[1].split("</svg>", 1)[0]
    labels = re.findall(r'<text class="chart-tick chart-row-label" x="[\d.]+" y="([\d.]+)"[^>]*><title>([^<]*)</title>([^<]*)</text>', svg)
    assert [name for _, name, _ in labels] == _table_order(page) == _bar_order(page)
    assert len(labels) == 12 and set(names) == {name for _, name, _ in labels}
    assert all(len(shown) <= MAX_LABEL and name.startswith(shown.rstrip("…")) for _, name, shown in labels)
    ys = [float(y) for y, _, _ in labels]
    assert all(b - a >= 20 for a, b in pairwise(ys))  # rows at least 20 px apart: no smear


def test_the_csv_keeps_a_lossless_column(app: Flask, client: FlaskClient) -> None:
    board_id = stored(app, ZH)
    body = client.get(f"/leaderboards/{board_id}/csv").get_data(as_text=True)
    table = {row["tokenizer"]: row for row in csv.DictReader(io.StringIO(body))}
    assert {name: row["lossless"] for name, row in table.items()} == {
        "byte-bpe": "yes", "wordpiece": "no", "unigram": "yes", "char-level": "no", "tiktoken": "yes"}
    assert table["wordpiece"]["unk_rate"] == "0.282"


def test_hbar_chart_escapes_names_and_bounds_its_rows() -> None:
    svg = hbar_chart([("<b>&", 2.0, True), ("plain", 1.0, False)], label_value="Bytes per token", title="t",
                     flag="lossy")
    assert "&lt;b&gt;&amp;" in svg and "<b>" not in svg
    assert hbar_chart([], label_value="v", title="t") == ""
    many = hbar_chart([(f"n{i}", 1.0, False) for i in range(70)], label_value="v", title="t")
    assert many.count("<rect ") == 60 and "10 more left out" in many
