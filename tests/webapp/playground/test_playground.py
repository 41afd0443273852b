"""Flask-client tests of the playground pages: encode, decode, inspector, compare, vocabulary, insights."""

from __future__ import annotations

import re

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.webapp.conftest import HX, add_user, evaluate_held_out, shown_ids
from tests.webapp.playground_samples import EOT, byte_bpe, store, unigram, wordpiece


@pytest.fixture
def ids(app: Flask) -> dict[str, int]:
    stats = {"merges": [[116, 104, 900], [256, 101, 700], [32, 119, 50], [258, 111, 40], [195, 169, 5]],
             "curve": [[256, 1.0], [258, 1.4], [261, 1.6]]}
    return {"bpe": store(app, byte_bpe(), stats=stats), "wp": store(app, wordpiece()), "uni": store(app, unigram())}


def spans_of(html: str) -> list[str]:
    return re.findall(r'<span class="tok[^"]*"[^>]*>([^<]*)</span>', html)


def test_encode_page_shows_spans_counts_and_ids(client: FlaskClient, ids: dict[str, int]) -> None:
    page = client.get(f"/tokenizers/{ids['bpe']}/play?text=the+w%C3%A9&allowed_special=on")
    html = page.get_data(as_text=True)
    assert page.status_code == 200
    assert "<textarea" in html and 'hx-trigger="submit, input"' in html and 'hx-sync="this:queue last"' in html
    assert spans_of(html) == ["the", " w", "é"]
    assert 'data-testid="count-tokens">3<' in html and 'data-testid="count-bytes">7<' in html


def test_htmx_encode_returns_only_the_result_block(client: FlaskClient, ids: dict[str, int]) -> None:
    response = client.post(f"/tokenizers/{ids['bpe']}/encode", headers=HX,
                           data={"text": f"the{EOT}", "allowed_special": "on"})
    html = response.get_data(as_text=True)
    assert response.status_code == 200
    assert html.lstrip().startswith('<dl class="counts"')  # swapped into #encode-result
    assert "<html" not in html and "encode-result" not in html
    assert 'class="tok c1 special"' in html and "&lt;|endoftext|&gt;</span>" in html
    assert shown_ids(html) == ["257", "261"]


def test_specials_not_allowed_are_plain_text(client: FlaskClient, ids: dict[str, int]) -> None:
    html = client.post(f"/tokenizers/{ids['bpe']}/encode", headers=HX, data={"text": EOT}).get_data(as_text=True)
    assert "special" not in re.findall(r'<div class="spans[^"]*"', html)[0]
    assert len(spans_of(html)) == len(EOT)


@pytest.mark.parametrize("allowed", [True, False], ids=["allowed", "not-allowed"])
def test_page_and_api_follow_one_special_token_rule(client: FlaskClient, ids: dict[str, int], allowed: bool) -> None:
    """One rule for both: allowed special text is one token, otherwise plain text, never a 422."""
    text = f"the{EOT}the"
    form = {"text": text, **({"allowed_special": "on"} if allowed else {})}
    page = client.post(f"/tokenizers/{ids['bpe']}/encode", headers=HX, data=form)
    api = client.post("/api/v1/encode", json={"tokenizer": ids["bpe"], "text": text,
                                              "allowed_special": "all" if allowed else []})
    assert (page.status_code, api.status_code) == (200, 200)
    shown = [int(i) for i in shown_ids(page.get_data(as_text=True))]
    expected = [257, 261, 257] if allowed else [257, *EOT.encode(), 257]
    assert shown == api.json["ids"] == expected
    assert "encoded as the ordinary text it is" in client.get(f"/tokenizers/{ids['bpe']}/play").get_data(as_text=True)


def test_whitespace_toggle_adds_markers(client: FlaskClient, ids: dict[str, int]) -> None:
    html = client.post(f"/tokenizers/{ids['bpe']}/encode", headers=HX,
                       data={"text": "a b\tc\n", "show_ws": "on"}).get_data(as_text=True)
    assert "".join(spans_of(html)) == "a·b→c↵\n"


def test_large_input_counts_everything_and_renders_the_first_tokens(app: Flask, client: FlaskClient, ids: dict[str, int]) -> None:
    app.config["PLAYGROUND_RENDER_TOKENS"] = 10
    html = client.post(f"/tokenizers/{ids['bpe']}/encode", headers=HX, data={"text": "xy" * 50}).get_data(as_text=True)
    assert 'data-testid="count-tokens">100<' in html
    assert len(spans_of(html)) == 10
    assert "Showing the first 10 of 100 tokens" in html


def test_text_over_the_limit_is_a_422_with_a_message(app: Flask, client: FlaskClient, ids: dict[str, int]) -> None:
    app.config["PLAYGROUND_MAX_CHARS"] = 50
    response = client.post(f"/tokenizers/{ids['bpe']}/encode", headers=HX, data={"text": "x" * 51})
    assert response.status_code == 422
    assert "The text has 51 characters; the playground encodes at most 50." in response.get_data(as_text=True)


def test_user_text_is_escaped(client: FlaskClient, ids: dict[str, int]) -> None:
    html = client.post(f"/tokenizers/{ids['bpe']}/encode", headers=HX,
                       data={"text": '<script>alert(1)</script>"><img onerror=x>'}).get_data(as_text=True)
    assert "<script>" not in html and "<img" not in html
    assert "&lt;" in html


def test_unknown_tokenizer_is_404(client: FlaskClient, ids: dict[str, int]) -> None:
    assert client.get("/tokenizers/999/play").status_code == 404
    assert client.post("/tokenizers/999/encode", data={"text": "x"}).status_code == 404


def test_decode_pasted_ids(client: FlaskClient, ids: dict[str, int]) -> None:
    html = client.post(f"/tokenizers/{ids['bpe']}/decode", headers=HX, data={"ids": "[257, 258, 260]"}).get_data(as_text=True)
    assert '<pre class="decoded-text">the wé</pre>' in html


@pytest.mark.parametrize("raw, message", [
    pytest.param("1, two", "Item 2, &#39;two&#39;, is not a token id", id="not-a-number"),
    pytest.param("", "Paste some token ids first", id="empty"),
    pytest.param("99999", "Token id 99999 is not in this tokenizer", id="unknown-id"),
])
def test_decode_bad_ids_is_422(client: FlaskClient, ids: dict[str, int], raw: str, message: str) -> None:
    response = client.post(f"/tokenizers/{ids['bpe']}/decode", headers=HX, data={"ids": raw})
    assert response.status_code == 422
    assert message in response.get_data(as_text=True)


def test_inspector_shows_bpe_merge_count_and_chain(client: FlaskClient, ids: dict[str, int]) -> None:
    html = client.get(f"/tokenizers/{ids['bpe']}/tokens/257", headers=HX).get_data(as_text=True)
    assert html.lstrip().startswith('<aside id="inspector"')
    assert 'data-testid="inspector-rank">1<' in html
    assert 'data-testid="inspector-count">700<' in html
    assert 'data-testid="inspector-hex">74 68 65<' in html
    chain = re.search(r'<ol class="chain".*?</ol>', html, re.S).group(0)
    assert re.findall(r"<code>([^<]*)</code> \+ <code>([^<]*)</code> → <code>([^<]*)</code>", chain) == [
        ("t", "h", "th"), ("th", "e", "the")]


def test_inspector_for_unigram_wordpiece_and_bad_ids(client: FlaskClient, ids: dict[str, int]) -> None:
    assert 'data-testid="inspector-score">-1.5000<' in client.get(f"/tokenizers/{ids['uni']}/tokens/6").get_data(as_text=True)
    assert 'data-testid="inspector-continuation">yes<' in client.get(f"/tokenizers/{ids['wp']}/tokens/7").get_data(as_text=True)
    assert 'data-testid="inspector-continuation">no<' in client.get(f"/tokenizers/{ids['wp']}/tokens/6").get_data(as_text=True)
    missing = client.get(f"/tokenizers/{ids['bpe']}/tokens/5000")
    assert missing.status_code == 404 and "5000 is not in this tokenizer" in missing.get_data(as_text=True)


def test_compare_marks_differing_spans(client: FlaskClient, app: Flask, ids: dict[str, int]) -> None:
    plain = store(app, byte_bpe("plain", merges=[]))
    response = client.post("/compare", headers=HX, data={"ids": [str(ids["bpe"]), str(plain)], "text": "the cat"})
    html = response.get_data(as_text=True)
    assert response.status_code == 200
    assert html.lstrip().startswith('<section id="comparison"')
    assert html.count('data-testid="compare-col"') == 2
    assert re.findall(r'class="tok c\d+ differs"[^>]*>([^<]*)<', html) == ["the", "t", "h", "e"]
    assert "1 of 5 stretches of text are split differently (3 characters)." in html


@pytest.mark.parametrize("chosen", [pytest.param(1, id="one"), pytest.param(5, id="five")])
def test_compare_needs_two_to_four(client: FlaskClient, app: Flask, ids: dict[str, int], chosen: int) -> None:
    all_ids = list(ids.values()) + [store(app, byte_bpe("x")), store(app, byte_bpe("y"))]
    response = client.post("/compare", headers=HX, data={"ids": [str(i) for i in all_ids[:chosen]], "text": "a"})
    assert response.status_code == 422
    assert "Choose between 2 and 4 tokenizers to compare" in response.get_data(as_text=True)


def test_vocab_browser_search_and_paging(client: FlaskClient, ids: dict[str, int]) -> None:
    html = client.get(f"/tokenizers/{ids['bpe']}/vocab?q=the", headers=HX).get_data(as_text=True)
    assert html.lstrip().startswith('<div id="vocab-table"')
    assert "1 token match <code>the</code>" in html and "<td><code>the</code></td>" in html
    full = client.get(f"/tokenizers/{ids['bpe']}/vocab?page=3").get_data(as_text=True)
    assert "page 3 of 3" in full and "<svg" in full and "Longest tokens" in full
    assert "page 3 of 3" in client.get(f"/tokenizers/{ids['bpe']}/vocab?page=99999999999").get_data(as_text=True)


def test_insights_draw_the_curve_and_histogram(client: FlaskClient, ids: dict[str, int]) -> None:
    html = client.get(f"/tokenizers/{ids['bpe']}/insights").get_data(as_text=True)
    assert html.count('<svg class="chart"') == 2 and 'class="chart-line"' in html
    assert "No training curve" in client.get(f"/tokenizers/{ids['wp']}/insights").get_data(as_text=True)


def test_evaluation_needs_a_corpus_and_a_percentage(client: FlaskClient, ids: dict[str, int]) -> None:
    response = client.post(f"/tokenizers/{ids['bpe']}/insights/evaluate", headers=HX, data={"corpus_id": "", "percent": "10"})
    assert response.status_code == 422 and "Choose a corpus" in response.get_data(as_text=True)


def test_evaluation_on_a_held_out_split_shows_the_engine_metrics(client: FlaskClient, ids: dict[str, int]) -> None:
    response = evaluate_held_out(client, ids["bpe"], "10")
    html = response.get_data(as_text=True)
    assert response.status_code == 200, html
    assert "Bytes per token" in html and "Tokens per word" in html and "<td>lossless</td>" in html


def test_decode_without_htmx_renders_the_whole_page(client: FlaskClient, ids: dict[str, int]) -> None:
    response = client.post(f"/tokenizers/{ids['bpe']}/decode", data={"ids": "257, 261"})
    html = response.get_data(as_text=True)
    assert response.status_code == 200 and "<html" in html and "<textarea" in html


@pytest.mark.parametrize("url", ["/tokenizers/{}/play", "/corpora/{}", "/jobs/{}", "/tokenizers/{}/tokens/1"])
def test_ids_beyond_64_bits_are_not_found(client: FlaskClient, url: str) -> None:
    assert client.get(url.format(10**30)).status_code == 404


def test_summary_page_shows_merges_as_text(client: FlaskClient, ids: dict[str, int]) -> None:
    html = client.get(f"/tokenizers/{ids['bpe']}").get_data(as_text=True)
    rows = re.findall(r"<tr><td>(\d+)</td><td><code>([^<]*)</code></td><td><code>([^<]*)</code></td>"
                      r"<td><code>([^<]*)</code></td><td>([\d,]*)</td></tr>", html)
    assert rows[:2] == [("0", "t", "h", "th", "900"), ("1", "th", "e", "the", "700")]


def test_the_picker_switches_tokenizer_keeping_a_short_text(app: Flask, client: FlaskClient,
                                                           ids: dict[str, int]) -> None:
    page = client.get(f"/tokenizers/{ids['bpe']}/play?text=hello").get_data(as_text=True)
    picker = re.search(r'<form id="picker".*?</form>', page, re.S).group()
    assert 'action="/play"' in picker and 'name="text" value="hello"' in picker
    assert re.findall(r'<option value="(\d+)"( selected)?', picker) == [
        (str(ids["uni"]), ""), (str(ids["wp"]), ""), (str(ids["bpe"]), " selected")]
    switched = client.get(f"/play?tokenizer={ids['wp']}&text=caf%C3%A9+%26+co")
    assert (switched.status_code, switched.headers["Location"]) == (303, f"/tokenizers/{ids['wp']}/play?text=caf%C3%A9+%26+co")
    landed = client.get(switched.headers["Location"]).get_data(as_text=True)
    assert "café &amp; co</textarea>" in landed and 'data-text-from="given"' in landed
    posted = client.post(f"/tokenizers/{ids['bpe']}/encode", data={"text": "typed"}).get_data(as_text=True)
    assert 'name="text" value="typed" data-picker-text' in posted  # without script: Encode, then Open
    assert 'data-text-from="given">typed</textarea>' in posted
    long_text = "x" * 2001  # too long for a URL: the browser keeps it (continuity.js), the URL does not
    assert client.get(f"/play?tokenizer={ids['wp']}&text={long_text}").headers["Location"] == f"/tokenizers/{ids['wp']}/play"
    other = store(app, byte_bpe("other-team"), team_id=add_user(app, "bob@example.com")[1])
    for bad in ("", "abc", "-1", "99999999999999999999999", str(other)):
        assert client.get(f"/play?tokenizer={bad}").status_code == 404, bad


def test_the_text_travels_to_compare_and_the_permalink(client: FlaskClient, ids: dict[str, int]) -> None:
    fresh = client.get(f"/tokenizers/{ids['bpe']}/play").get_data(as_text=True)
    assert 'data-text-from="default"' in fresh  # the sample: a text kept in the browser replaces it
    assert f'href="/compare?ids={ids["bpe"]}" data-carry-text' in fresh  # the sample does not travel
    page = client.get(f"/tokenizers/{ids['bpe']}/play?text=the+w%C3%A9").get_data(as_text=True)
    assert f'href="/compare?ids={ids["bpe"]}&amp;text=the+w%C3%A9" data-carry-text' in page
    assert f'href="http://localhost/tokenizers/{ids["bpe"]}/play?text=the+w%C3%A9" id="permalink"' in page
    assert "?text=" in re.search(r'<p class="permalink hint">.*?</p>', page, re.S).group()  # documented on the page
    compare = client.get(f"/compare?ids={ids['bpe']}&text=the+w%C3%A9").get_data(as_text=True)
    assert 'data-text-from="given">the wé</textarea>' in compare
    assert 'data-text-from="default">' in client.get(f"/compare?ids={ids['bpe']}").get_data(as_text=True)


def test_opening_a_tokenizer_lands_on_encode(client: FlaskClient, ids: dict[str, int]) -> None:
    listing = client.get("/tokenizers").get_data(as_text=True)
    for key in ("bpe", "wp", "uni"):
        assert f'href="/tokenizers/{ids[key]}/play" data-carry-text' in listing


def test_a_text_in_the_url_keeps_the_default_toggles(client: FlaskClient, ids: dict[str, int]) -> None:
    """A reload or permalink with ``?text=`` must encode as the page did: flags change only by name."""
    def shown(query: str) -> list[str]:
        html = client.get(f"/tokenizers/{ids['bpe']}/play?{query}").get_data(as_text=True)
        return shown_ids(html)

    plain = ["257", *map(str, EOT.encode())]
    assert shown("text=the%3C%7Cendoftext%7C%3E") == plain  # specials not allowed, as on a fresh page
    assert shown("text=the%3C%7Cendoftext%7C%3E&allowed_special=0") == plain
    assert shown("text=the%3C%7Cendoftext%7C%3E&allowed_special=on") == ["257", "261"]
