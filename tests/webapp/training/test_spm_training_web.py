"""A sentencepiece-style BPE trained in the web app keeps its ``.model``: the tokenizer page serves
it, sentencepiece gives the page's ids with it, and the app encodes with it.

Its ``tokenizer.json`` alone reads back as a merge-list BPE of characters (Hugging Face's
view of the same pieces), which is no sentencepiece model: before the ``.model`` was kept, the
downloads offered none and named the tokenizer "character-level BPE"."""

from __future__ import annotations

import io
import json

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from tests.webapp.conftest import add_small_corpus, default_form, run_queued_jobs
from tests.webapp.jobs_support import session_for
from webapp.store.models import Tokenizer
from webapp.tokenizers.originals import originals

spm = pytest.importorskip("sentencepiece")

LINES = ["the quick brown fox jumps over the lazy dog", "  two leading spaces", "numbers 12345 and ünïcödé",
         "tabs\tand\u00a0odd spaces", "漢字 mixed with latin"]


def test_a_trained_spm_bpe_serves_its_model_with_the_pages_ids(client: FlaskClient, app: Flask) -> None:
    add_small_corpus(client)
    corpus = "\n".join(LINES * 40) + "\n"
    client.post("/corpora/", data={"files": [(io.BytesIO(corpus.encode()), "lines.txt")]},
                content_type="multipart/form-data")
    form = default_form("bpe", level="spm", vocab_size="320") | {"corpus_ids": "2"}
    assert client.post("/train", data=form).status_code in (200, 302, 303)
    run_queued_jobs(app)
    with session_for(app) as session:
        row = session.scalars(select(Tokenizer).where(Tokenizer.source == "trained")).one()
    assert "original" not in row.stats and set(originals(row.config)) == {"spm_model"}  # kept in the config

    page = client.get(f"/tokenizers/{row.id}/downloads").get_data(as_text=True)
    assert "spm_model/tokenizer.model" in page and "character-level BPE" not in page
    model = client.get(f"/tokenizers/{row.id}/download/spm_model/tokenizer.model")
    assert model.status_code == 200 and model.data == originals(row.config)["spm_model"]
    processor = spm.SentencePieceProcessor(model_proto=model.data)
    for line in LINES:
        answer = client.post("/api/v1/encode", json={"tokenizer": row.id, "text": line})
        assert answer.status_code == 200, answer.get_data(as_text=True)
        assert json.loads(answer.data)["ids"] == processor.encode(line), line
