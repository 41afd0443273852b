"""Character-level BPE in the web app: the training form offers it, downloads and summaries handle it."""

from __future__ import annotations

import re
from pathlib import Path

from flask.testing import FlaskClient

from engine.trainers import train
from webapp.tokenizers import summary
from webapp.training.form import form_from_options, parse
from webapp.transfer import downloads


def test_the_form_offers_the_level_and_validates_it(client: FlaskClient) -> None:
    page = client.get("/train?algorithm=bpe").get_data(as_text=True)
    select = re.search(r'<select name="opt-level"[^>]*>(.*?)</select>', page, re.S)
    assert select is not None
    assert re.findall(r'<option value="([^"]*)"', select.group(1)) == ["byte", "char", "spm"]
    form = form_from_options("bpe", {}) | {"opt-level": "char"}
    options, errors = parse("bpe", form)
    assert errors == {} and options is not None
    assert (options["level"], options["pretokenizer"], options["end_of_word_suffix"]) == ("char", None, "</w>")
    assert parse("bpe", form | {"opt-level": "word"}) == (None, {"level": "level='word' must be one of: byte, char, spm."})


def test_downloads_and_summary_handle_a_char_level_model(tmp_path: Path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("low lower newest widest " * 30, encoding="utf-8")
    result = train("bpe", [corpus], {"level": "char", "vocab_size": 30})
    tokenizer = result.tokenizer
    offered = {f.key: f.available for f in downloads.plan(tokenizer)}
    assert offered["tokenizer.json"] is True
    assert not offered["gpt2"] and not offered["tiktoken"]  # byte-level formats, with a reason instead
    # (w e), (e s), (s t</w>) and (l o) all occur 60 times: the greatest pair goes first, and once
    # "we" is made, (e s) is left with widest's 30.
    rows = summary.first_merges(tokenizer, result.stats, 3)
    assert [(r.left, r.right, r.result, r.count) for r in rows] == [
        ("w", "e", "we", 60), ("s", "t</w>", "st</w>", 60), ("l", "o", "lo", 60)]
