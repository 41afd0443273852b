"""The smaller items of issue 16, item 8: form wording, the Delete style, zip modes, corpus wording."""

from __future__ import annotations

import gzip
import io
import re
import stat
import zipfile
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from engine import ConfigError
from engine.trainers import make_options
from tests.webapp.conftest import run_queued_jobs
from tests.webapp.playground_samples import byte_bpe, store
from webapp.training.form import available_algorithms

ROOT = Path(__file__).resolve().parents[2]


def field_error(html: str, name: str) -> str:
    found = re.search(rf'name="opt-{name}".*?<p class="field-error" role="alert">(.*?)</p>', html, re.S)
    assert found is not None, html
    return found.group(1)


@pytest.mark.parametrize(("algorithm", "message"), [
    ("bpe", "Vocab size must be from 257 (the 1 special tokens + 256 bytes) to 1,000,000, not 5,000,000. "
            "Enter a number in that range."),
    ("wordpiece", "Vocab size can be at most 1,000,000, not 5,000,000. Enter a smaller number."),
    ("unigram", "Vocab size can be at most 1,000,000, not 5,000,000. Enter a smaller number."),
])
def test_an_oversized_vocabulary_gets_form_advice_and_the_cli_keeps_its_own(client: FlaskClient, algorithm: str,
                                                                            message: str) -> None:
    if algorithm not in available_algorithms():
        pytest.skip(f"no {algorithm} trainer")
    html = client.post("/train", data={"algorithm": algorithm, "opt-vocab_size": "5000000"}).get_data(as_text=True)
    assert field_error(html, "vocab_size") == message
    with pytest.raises(ConfigError, match=r"; pass (a )?vocab_size"):  # the API and CLI wording is unchanged
        make_options(algorithm, {"vocab_size": 5_000_000})


def test_delete_links_are_styled_as_danger_not_primary() -> None:
    css = (ROOT / "static" / "css" / "app.css").read_text(encoding="utf-8")
    rules = re.findall(r"([^{}]+)\{([^}]*)\}", css)
    danger = [body for selector, body in rules if ".button.danger" in selector.replace(" ", "")]
    assert danger and "background: transparent" in danger[-1] and "var(--danger)" in danger[-1]
    assert 'class="button danger"' in (ROOT / "templates" / "corpora" / "show.html").read_text(encoding="utf-8")


def test_the_zip_files_are_readable_by_everyone(client: FlaskClient, app: Flask) -> None:
    tokenizer_id = store(app, byte_bpe())
    response = client.get(f"/tokenizers/{tokenizer_id}/download.zip")
    assert response.status_code == 200
    with zipfile.ZipFile(io.BytesIO(response.data)) as archive:
        infos = archive.infolist()
        assert {"README.md", "tokenizer.json"} <= {i.filename for i in infos}
        assert {i.filename: stat.S_IMODE(i.external_attr >> 16) for i in infos} == {i.filename: 0o644 for i in infos}
        assert all(stat.S_ISREG(i.external_attr >> 16) for i in infos)
        assert archive.read("README.md").startswith(b"#")


def test_a_jsonl_corpus_is_one_document_per_line(client: FlaskClient, app: Flask) -> None:
    body = b'{"text": "first doc"}\n{"text": "second"}\n'
    client.post("/corpora/", data={"files": [(io.BytesIO(body), "docs.jsonl")]}, content_type="multipart/form-data")
    client.post("/corpora/", data={"files": [(io.BytesIO(b"a<|endoftext|>b"), "plain.txt")]},
                content_type="multipart/form-data")
    run_queued_jobs(app)
    jsonl_page = client.get("/corpora/1").get_data(as_text=True)
    hint = re.search(r'<span class="hint" data-testid="documents-hint">(.*?)</span>', jsonl_page)
    assert hint is not None and hint.group(1) == "one per line of the .jsonl file (one JSON record each)"
    assert "endoftext" not in hint.group(1)
    assert "split on <code>&lt;|endoftext|&gt;</code>" in client.get("/corpora/2").get_data(as_text=True)


@pytest.mark.parametrize("name", ["corpus.gz", "corpus.txt.gz", "corpus.jsonl.gz"])
def test_a_fake_gz_is_not_a_valid_gzip_file(client: FlaskClient, name: str) -> None:
    response = client.post("/corpora/", data={"files": [(io.BytesIO(b"plain text, not gzip"), name)]},
                           content_type="multipart/form-data")
    html = response.get_data(as_text=True)
    assert response.status_code == 422
    assert f"“{name}” is not a valid gzip file." in html and "unknown format" not in html


def test_a_real_bare_gz_is_read_as_text(client: FlaskClient, app: Flask) -> None:
    response = client.post("/corpora/", data={"files": [(io.BytesIO(gzip.compress(b"hello there")), "corpus.gz")]},
                           content_type="multipart/form-data")
    assert response.status_code == 303
    assert "hello there" in client.get(response.headers["Location"]).get_data(as_text=True)
