"""Results as people read them (issue 16, item 4): the filters, summary figures, merges and evaluation."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from engine import train
from tests.webapp.conftest import evaluate_held_out
from tests.webapp.playground_samples import byte_bpe, gpt2, store, unigram, wordpiece
from webapp.corpora import heldout
from webapp.web import filters


@pytest.mark.parametrize(("value", "shown"), [
    (66410.0, "66,410"), (66410, "66,410"), (3.891234, "3.891"), (0.000123456, "0.0001235"), (0.0, "0"),
    (1234567.891, "1,234,568"), (12.5, "12.5"), (-2.25, "-2.25"), (True, "yes"), (False, "no"), (None, "—"),
], ids=repr)
def test_numbers_have_separators_and_no_exponent(value: object, shown: str) -> None:
    assert filters.number(value) == shown  # type: ignore[arg-type]


def test_readable_shows_words_chips_and_dashes() -> None:
    assert filters.readable(None) == "—" and filters.readable("") == "—"
    assert filters.readable(True) == "yes" and filters.readable(False) == "no"
    assert filters.readable(0.0734, "percent") == "7.34 %"
    chips = str(filters.readable(["<unk>", "<s>", "</s>"]))
    assert chips == '<ul class="chips"><li><code>&lt;unk&gt;</code></li><li><code>&lt;s&gt;</code></li><li><code>&lt;/s&gt;</code></li></ul>'
    assert str(filters.readable({"min_frequency": 2, "lowercase": False})) == "min frequency: 2; lowercase: no"
    many = str(filters.chips([str(i) for i in range(filters.MAX_CHIPS + 7)]))
    assert many.count("<li><code>") == filters.MAX_CHIPS and "and 7 more" in many
    assert filters.label("vocab_size") == "Vocab size"


def figure(html: str, testid: str) -> str | None:
    found = re.search(rf'<dd data-testid="{testid}">(.*?)</dd>', html, re.S)
    return found.group(1) if found else None


def test_summary_counts_the_merges_of_the_model_not_of_the_stats(client: FlaskClient, app: Flask) -> None:
    tokenizer_id = store(app, byte_bpe())  # no training stats, as for every import
    html = client.get(f"/tokenizers/{tokenizer_id}").get_data(as_text=True)
    assert figure(html, "merges") == "5"
    assert figure(html, "special-tokens") == '<ul class="chips"><li><code>&lt;|endoftext|&gt;</code></li></ul>'
    rows = re.findall(r"<tr><td>(\d+)</td><td><code>([^<]*)</code></td><td><code>([^<]*)</code></td><td><code>([^<]*)</code></td>", html)
    assert rows[:3] == [("0", "t", "h", "th"), ("1", "th", "e", "the"), ("2", "␣", "w", "␣w")]
    assert "<h2>Training options</h2>" not in html and "<h2>Options</h2>" not in html


def test_an_imported_gpt2_has_its_50000_merges(client: FlaskClient, app: Flask) -> None:
    tokenizer_id = store(app, gpt2())
    html = client.get(f"/tokenizers/{tokenizer_id}").get_data(as_text=True)
    assert figure(html, "merges") == "50,000"
    assert figure(html, "vocab-size") == "50,257"
    first = re.search(r"<tr><td>0</td><td><code>([^<]*)</code></td><td><code>([^<]*)</code></td><td><code>([^<]*)</code>", html)
    assert first is not None and first.groups() == ("␣", "t", "␣t")  # GPT-2's first merge is "Ġ t"


def test_unigram_shows_pieces_not_merges(client: FlaskClient, app: Flask) -> None:
    tokenizer_id = store(app, unigram())
    html = client.get(f"/tokenizers/{tokenizer_id}").get_data(as_text=True)
    assert figure(html, "merges") is None and ">Merges<" not in html
    assert figure(html, "pieces") == "9"  # ten pieces, one of them the special <unk>


def test_wordpiece_merges_show_the_pieces_and_the_token_they_make(client: FlaskClient, app: Flask, tmp_path: Path) -> None:
    corpus = tmp_path / "zh.txt"
    corpus.write_text("中文 中文 中文 文字 the the\n" * 20, encoding="utf-8")
    result = train("wordpiece", [str(corpus)], {"vocab_size": 40, "score": "frequency"})
    stats = dict(result.stats)
    tokenizer_id = store(app, result.tokenizer, stats=stats)
    html = client.get(f"/tokenizers/{tokenizer_id}").get_data(as_text=True)
    assert "###" not in html
    rows = re.findall(r"<tr><td>\d+</td><td><code>([^<]*)</code></td><td><code>([^<]*)</code></td><td><code>([^<]*)</code></td><td>([\d,]*)</td>", html)
    assert ("中", "##文", "中文", "60") in rows
    assert figure(html, "merges") == f"{len(stats['merges']):,}"


def test_training_options_are_words_and_chips(client: FlaskClient, app: Flask) -> None:
    from webapp.store.db import get_session
    from webapp.store.models import Tokenizer as Row

    tokenizer_id = store(app, byte_bpe())
    with app.app_context():
        row = get_session().get(Row, tokenizer_id)
        row.config = {"options": {"vocab_size": 32000, "special_tokens": ["<unk>", "<s>"], "lowercase": False,
                                  "max_token_length": None}}
        get_session().commit()
    html = client.get(f"/tokenizers/{tokenizer_id}").get_data(as_text=True)
    options = re.search(r'<dl class="options" data-testid="options">(.*?)</dl>', html, re.S).group(1)  # type: ignore[union-attr]
    assert "<dt>Vocab size</dt><dd>32,000</dd>" in options
    assert "<dt>Lowercase</dt><dd>no</dd>" in options and "<dt>Max token length</dt><dd>—</dd>" in options
    assert '<ul class="chips"><li><code>&lt;unk&gt;</code></li><li><code>&lt;s&gt;</code></li></ul>' in options
    assert "False" not in options and "None" not in options and "[" not in options


def test_an_import_shows_where_it_came_from_and_no_empty_options(client: FlaskClient, app: Flask) -> None:
    from webapp.store.db import get_session
    from webapp.store.models import Tokenizer as Row

    tokenizer_id = store(app, wordpiece())
    with app.app_context():
        row = get_session().get(Row, tokenizer_id)
        row.source, row.config = "imported", {"import": {"kind": "vocab_txt", "files": ["vocab.txt"], "pattern": ""}}
        get_session().commit()
    html = client.get(f"/tokenizers/{tokenizer_id}").get_data(as_text=True)
    assert "Options</h2>" not in html
    assert "<h2>Imported from</h2>" in html and "<code>vocab.txt</code>" in html
    assert "<dt>Format</dt><dd>vocab.txt (WordPiece, BERT style)</dd>" in html and "Pre-tokenizer pattern" not in html


def test_an_imported_gpt2_names_its_format_and_pattern_as_the_form_does(client: FlaskClient, app: Flask) -> None:
    from webapp.store.db import get_session
    from webapp.store.models import Tokenizer as Row

    tokenizer_id = store(app, byte_bpe())
    with app.app_context():
        row = get_session().get(Row, tokenizer_id)
        row.source = "imported"
        row.config = {"import": {"kind": "gpt2", "files": ["vocab.json", "merges.txt"], "pattern": "gpt4"}}
        get_session().commit()
    html = client.get(f"/tokenizers/{tokenizer_id}").get_data(as_text=True)
    assert "<dt>Format</dt><dd>vocab.json + merges.txt (GPT-2 style)</dd>" in html
    assert "<dt>Pre-tokenizer pattern</dt><dd>GPT-4 (cl100k)</dd>" in html


def test_the_evaluation_is_a_table_with_the_difference_as_a_sentence() -> None:
    result = {"chars": 66410, "bytes": 66410.0, "words": 12000, "tokens": 16000, "bytes_per_token": 4.150625,
              "chars_per_token": 4.15, "fertility": 1.3333, "unk_tokens": 0, "unk_rate": 0.0, "lossless": False,
              "first_difference": {"char_offset": 1234, "expected": "é ok", "got": "e ok", "context_before": "caf"},
              "vocab_size": 300, "vocab_used": 151, "vocab_utilisation": 0.5033,
              "longest_tokens": [{"id": 280, "token": "Ġnumber", "text": " number", "chars": 7, "count": 40}]}
    report = heldout.report(result)
    shown = {f.label: str(filters.readable(f.value, f.style)) for f in report.figures}
    assert shown["Characters"] == "66,410" and shown["Bytes"] == "66,410" and shown["Bytes per token"] == "4.151"
    assert shown["Vocabulary used"] == "151 of 300" and shown["Vocabulary used (share)"] == "50.3 %"
    assert shown["Round trip"] == "differs" and shown["Unknown share"] == "0 %"
    assert report.difference == ("Decoding does not give the text back: it first differs at character 1,234 (after “caf”), "
                                 "where the text has “é␣ok” and the decoded ids give “e␣ok”.")
    assert [(t.id, t.token, t.text, t.chars, t.count) for t in report.longest] == [(280, "Ġnumber", "␣number", 7, 40)]


def test_the_evaluation_page_shows_the_table(client: FlaskClient, app: Flask) -> None:
    tokenizer_id = store(app, byte_bpe())
    response = evaluate_held_out(client, tokenizer_id, "50")
    html = response.get_data(as_text=True)
    assert response.status_code == 200, html
    assert '<tr><th scope="row">Round trip</th><td>lossless</td></tr>' in html
    assert "Decoding gives the text back exactly." in html
    assert re.search(r'<tr><th scope="row">Characters</th><td>\d{1,3}(,\d{3})*</td></tr>', html)
    assert "None" not in html and "{'id'" not in html and "e+0" not in html


@pytest.mark.parametrize(("algorithm", "expected"), [
    pytest.param("unigram", ["Default: yes", "Default: <code>&lt;unk&gt;</code> <code>&lt;s&gt;</code> <code>&lt;/s&gt;</code>"],
                 id="unigram"),
    pytest.param("wordpiece", ["Default: 30,000", "Default: <code>[PAD]</code> <code>[UNK]</code>"], id="wordpiece"),
])
def test_the_training_form_shows_defaults_as_words_and_codes(client: FlaskClient, algorithm: str,
                                                             expected: list[str]) -> None:
    """The form's hints printed "Default: True" and "Default: ['<unk>', '<s>', '</s>']"."""
    defaults = re.findall(r'class="default">(.*?)</span>', client.get(f"/train?algorithm={algorithm}").get_data(as_text=True))
    assert all(any(text.startswith(e) for text in defaults) for e in expected), defaults
    assert not any(re.search(r"True|False|None|\[&#39;", text) for text in defaults), defaults
