"""The import form shows only what the chosen kind reads (issue 24, finding 9), and the server
refuses a file sent in a part that kind does not read instead of ignoring it."""

from __future__ import annotations

import html
import io
import re

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select

from engine.formats import gpt2 as gpt2_format
from tests.webapp.playground_samples import byte_bpe
from webapp.store import db
from webapp.store.models import Tokenizer


def upload(data: str, name: str) -> tuple[io.BytesIO, str]:
    return io.BytesIO(data.encode()), name


def tokenizers(app: Flask) -> int:
    with app.app_context():
        return db.get_session().scalar(select(func.count()).select_from(Tokenizer))


def test_each_part_names_the_kinds_that_read_it(client: FlaskClient) -> None:
    text = client.get("/import").get_data(as_text=True)
    parts = {part: kinds for kinds, part in re.findall(
        r'<fieldset class="part" data-kinds="([^"]*)" data-testid="part-(\w+)">', text)}
    assert parts == {
        "file": "tokenizer_json vocab_txt tiktoken spm_model",
        "vocab": "gpt2",
        "merges": "gpt2",
        "config": "tokenizer_json gpt2 vocab_txt tiktoken spm_model",
        "sidecar": "tiktoken",
        "pattern": "gpt2 tiktoken",
        "special_tokens": "gpt2 tiktoken",
        "lowercase": "vocab_txt",
    }
    assert '<script src="/static/js/import.js" defer></script>' in text
    response = client.get("/static/js/import.js")
    assert response.status_code == 200 and b"data-kinds" in response.data
    response.close()


@pytest.mark.parametrize("kind, files, message", [
    pytest.param("tokenizer_json", {"file": "tokenizer.json", "merges": "merges.txt"},
                 "merges.txt was chosen as the merges.txt file, which an import of “tokenizer.json (Hugging Face)” "
                 "does not read. Remove it, or choose “vocab.json + merges.txt (GPT-2 style)” as what you are importing.",
                 id="merges-beside-tokenizer-json"),
    pytest.param("gpt2", {"vocab": "vocab.json", "merges": "merges.txt", "file": "tokenizer.json"},
                 "tokenizer.json was chosen as the File file, which an import of “vocab.json + merges.txt (GPT-2 style)” "
                 "does not read. Remove it, or choose “tokenizer.json (Hugging Face)” or “vocab.txt (WordPiece, BERT "
                 "style)” or “tiktoken rank file” or “sentencepiece .model (tokenizer.model)” as what you are importing.",
                 id="file-beside-gpt2"),
    pytest.param("tokenizer_json", {"file": "tokenizer.json", "sidecar": "r.tiktoken.json"},
                 "r.tiktoken.json was chosen as the Sidecar file, which an import of “tokenizer.json (Hugging Face)” "
                 "does not read. Remove it, or choose “tiktoken rank file” as what you are importing.",
                 id="sidecar-beside-tokenizer-json"),
])
def test_a_file_in_a_part_the_kind_does_not_read_is_refused(app: Flask, client: FlaskClient, kind: str,
                                                             files: dict[str, str], message: str) -> None:
    tok = byte_bpe()
    contents = {"tokenizer.json": tok.to_json(), "merges.txt": gpt2_format.dumps_merges(tok),
                "vocab.json": gpt2_format.dumps_vocab(tok), "r.tiktoken.json": "{}"}
    data = {"kind": kind, **{part: upload(contents[name], name) for part, name in files.items()}}
    response = client.post("/import", data=data)
    assert response.status_code == 422
    error = response.get_data(as_text=True).split('data-testid="import-error">', 1)[1].split("</p>", 1)[0]
    assert html.unescape(error) == message
    assert tokenizers(app) == 0


def test_parts_a_browser_sends_empty_are_not_stray(client: FlaskClient) -> None:
    """Without script every file input is sent, those left alone with an empty file name."""
    response = client.post("/import", data={"kind": "tokenizer_json", "file": upload(byte_bpe().to_json(), "t.json"),
                                            "merges": (io.BytesIO(b""), ""), "vocab": (io.BytesIO(b""), ""),
                                            "pattern": "gpt2", "special_tokens": ""})
    assert response.status_code == 303
