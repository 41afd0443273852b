"""The vocabulary diff page: counts and exact pieces, the lines of a text, scoping and bad ids."""

from __future__ import annotations

import re

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.webapp.conftest import HX, add_user
from tests.webapp.playground_samples import MERGES, byte_bpe, store, unigram

ADDED = [(b"\xe4", b"\xbd"), (b"\xe4\xbd", b"\xa0"), (b" ", b"\xe4\xbd\xa0")]  # half of 你, 你, " 你"


@pytest.fixture
def ids(app: Flask) -> dict[str, int]:
    bob, bobs_team = add_user(app, "bob@example.com", "Bob")
    return {"base": store(app, byte_bpe("base")), "extended": store(app, byte_bpe("extended", MERGES + ADDED)),
            "uni": store(app, unigram()), "bobs": store(app, byte_bpe("bob's"), team_id=bobs_team)}


def shown_in(html: str, name: str) -> str:
    found = re.search(rf'data-testid="{name}">([^<]*)<', html)
    assert found is not None, name
    return found.group(1)


def test_a_base_and_its_extension(client: FlaskClient, ids: dict[str, int]) -> None:
    response = client.get(f"/tokenizers/diff?a={ids['base']}&b={ids['extended']}")
    html = response.get_data(as_text=True)
    assert response.status_code == 200
    assert [shown_in(html, f"diff-{n}") for n in ("pieces-a", "pieces-b", "shared", "same-id", "only-a", "only-b")] == [
        "262 pieces", "265 pieces", "262", "261", "0", "3"]  # <|endoftext|> moved from 261 to 264
    rows = re.findall(r'<tr data-testid="diff-piece-b"><td>(\d+)</td><td><code>([^<]*)</code></td><td>(\w+)</td>'
                      r'<td>([\d,]*)</td>', html)
    assert rows == [("262", "ä½ł", "normal", "6"), ("263", "Ġä½ł", "normal", "7"),  # Han first, then
                    ("261", "ä½", "normal", "5")]  # Partial characters
    assert 'data-testid="diff-piece-a"' not in html
    assert "<h3>Han " in html and "<h3>Partial characters " in html


def test_the_lines_a_base_and_its_extension_encode_differently(client: FlaskClient, ids: dict[str, int]) -> None:
    form = {"a": str(ids["base"]), "b": str(ids["extended"]), "text": "the\n\n你 the\nthe wo"}
    response = client.post("/tokenizers/diff", data=form)
    html = response.get_data(as_text=True)
    assert response.status_code == 200
    assert shown_in(html, "diff-only-b") == "3"  # the whole page, with the lines
    assert shown_in(html, "diff-lines-summary") == "1 of 3 lines encode differently."
    assert re.findall(r'<tr data-testid="diff-line"><td>(\d+)</td><td>([^<]*)</td>\s*<td>(\d+): ', html) == [
        ("3", "你 the", "5")]
    assert "<td>3: <code>ä½ł</code> <code>Ġ</code> <code>the</code> </td>" in html  # B's tokens
    fragment = client.post("/tokenizers/diff", data=form, headers=HX).get_data(as_text=True)
    assert fragment.lstrip().startswith('<section id="diff-lines"') and "<html" not in fragment
    assert 'data-testid="diff-counts"' not in fragment and "1 of 3 lines encode differently." in fragment


def test_unrelated_tokenizers(client: FlaskClient, ids: dict[str, int]) -> None:
    form = {"a": str(ids["base"]), "b": str(ids["uni"]), "text": "the\n\n the cat\nthe"}
    html = client.post("/tokenizers/diff", data=form).get_data(as_text=True)
    assert shown_in(html, "diff-shared") == "7"  # ▁ = Ġ (a space), t, h, e, s, a, c; the base has no " the"
    assert shown_in(html, "diff-only-b") == "3"  # <unk>, ▁the, ▁cat
    assert shown_in(html, "diff-lines-summary") == "3 of 3 lines encode differently."  # ▁ before each line


def test_a_text_over_the_limit_is_one_sentence(app: Flask, client: FlaskClient, ids: dict[str, int]) -> None:
    app.config["PLAYGROUND_MAX_CHARS"] = 10
    response = client.post("/tokenizers/diff", data={"a": ids["base"], "b": ids["uni"], "text": "x" * 11})
    assert response.status_code == 422
    assert "The text has 11 characters; compare at most 10." in response.get_data(as_text=True)


def test_the_pickers_alone_until_both_are_chosen(client: FlaskClient, ids: dict[str, int]) -> None:
    html = client.get(f"/tokenizers/diff?a={ids['base']}").get_data(as_text=True)
    assert f'<option value="{ids["base"]}" selected>base' in html and 'data-testid="diff-counts"' not in html
    assert f'<option value="{ids["bobs"]}"' not in html  # Bob's team's tokenizer is not offered


def test_the_tokenizer_page_links_to_the_diff(client: FlaskClient, ids: dict[str, int]) -> None:
    html = client.get(f"/tokenizers/{ids['base']}").get_data(as_text=True)
    assert f'href="/tokenizers/diff?a={ids["base"]}" data-testid="compare-vocabulary">Compare vocabulary with…' in html


@pytest.mark.parametrize("query", ["a={base}&b={bobs}", "a={bobs}&b={base}", "a={base}&b=99999", "a=abc&b={base}",
                                   "a={base}&b=-1", "a={base}&b=1e3", "a={base}&b=99999999999999999999999",
                                   "a={base}&b=%00"],
                         ids=["other-team-b", "other-team-a", "absent", "letters", "negative", "exponent", "huge",
                              "nul"])
def test_what_the_visitor_may_not_read_and_bad_ids_are_404(client: FlaskClient, ids: dict[str, int],
                                                           query: str) -> None:
    assert client.get("/tokenizers/diff?" + query.format(**ids)).status_code == 404
    form = dict(pair.split("=") for pair in query.format(**ids).replace("%00", "\0").split("&"))
    assert client.post("/tokenizers/diff", data={**form, "text": "the"}).status_code == 404
