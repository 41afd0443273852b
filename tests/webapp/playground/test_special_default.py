"""One default for special tokens on the encode page and in the JSON API (not allowed), the page
saying so, and the page naming a tokenizer's special tokens and what its import decided."""

from __future__ import annotations

import re

import pytest
from flask import Flask
from flask.testing import FlaskClient

from engine import byte_level_bpe
from tests.webapp.conftest import HX, shown_ids
from tests.webapp.playground_samples import EOT, byte_bpe, store

TEXT = f"the{EOT}the"
PLAIN = [257, *EOT.encode(), 257]  # <|endoftext|> as the ordinary text it is


def page_ids(html: str) -> list[int]:
    return [int(i) for i in shown_ids(html)]


@pytest.fixture
def ref(app: Flask) -> int:
    return store(app, byte_bpe())


def test_page_and_api_give_the_same_ids_by_default(client: FlaskClient, ref: int) -> None:
    """Nothing ticked, nothing named: the page (fresh, and as htmx posts it) and the API agree."""
    page = client.get(f"/tokenizers/{ref}/play", query_string={"text": TEXT}).get_data(as_text=True)
    typed = client.post(f"/tokenizers/{ref}/encode", headers=HX, data={"text": TEXT}).get_data(as_text=True)
    api = client.post("/api/v1/encode", json={"tokenizer": ref, "text": TEXT})
    assert page_ids(page) == page_ids(typed) == api.json["ids"] == PLAIN


def test_page_and_api_give_the_same_ids_when_allowed(client: FlaskClient, ref: int) -> None:
    page = client.get(f"/tokenizers/{ref}/play", query_string={"text": TEXT, "allowed_special": "on"})
    api = client.post("/api/v1/encode", json={"tokenizer": ref, "text": TEXT, "allowed_special": "all"})
    assert page_ids(page.get_data(as_text=True)) == api.json["ids"] == [257, 261, 257]


def test_the_checkbox_starts_unticked_and_the_hint_says_why(client: FlaskClient, ref: int) -> None:
    html = client.get(f"/tokenizers/{ref}/play").get_data(as_text=True)
    assert '<input type="checkbox" name="allowed_special" data-testid="allowed-special">' in html
    assert "it is off at first" in html and 'the same default (<code>"allowed_special": []</code>)' in html
    assert ('data-testid="tokenizer-specials">This tokenizer\'s special tokens: '
            '<code>&lt;|endoftext|&gt;</code>.</p>') in html


def test_a_tokenizer_without_special_tokens_names_none(app: Flask, client: FlaskClient) -> None:
    plain = store(app, byte_level_bpe({i: bytes([i]) for i in range(256)}, []), name="plain")
    html = client.get(f"/tokenizers/{plain}/play").get_data(as_text=True)
    assert 'data-testid="tokenizer-specials"' not in html and 'data-testid="import-notes"' not in html


def test_the_notes_of_an_import_are_shown_on_its_page(app: Flask, client: FlaskClient, ref: int) -> None:
    note = "Taken as special token, since no special tokens were named: '<|endoftext|>' (id 261)."
    with app.app_context():
        from webapp.store.db import get_session
        from webapp.store.models import Tokenizer as Row

        session = get_session()
        session.get(Row, ref).config = {"import": {"kind": "gpt2", "notes": [note, 7]}}
        session.commit()
    html = client.get(f"/tokenizers/{ref}/play").get_data(as_text=True)
    notes = re.search(r'data-testid="import-notes">(.*?)</div>', html).group(1)
    assert re.findall(r'<p class="hint">(.*?)</p>', notes) == [
        "Taken as special token, since no special tokens were named: &#39;&lt;|endoftext|&gt;&#39; (id 261)."]
