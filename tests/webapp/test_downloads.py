"""Downloads: each format verified, reasons where a format cannot hold the model, the zip, interop."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.webapp.playground_samples import EOT, byte_bpe, store, unigram, wordpiece
from webapp import downloads

TEXT = "the wé, Hello worlds! 日本 👋"


def test_plan_builds_each_format_once_per_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The downloads page is viewed often; writing and re-reading every format is not redone."""
    calls: list[str] = []
    real = downloads.build

    def counting(tok: object, key: str) -> dict[str, bytes]:
        calls.append(key)
        return real(tok, key)  # type: ignore[arg-type]

    monkeypatch.setattr(downloads, "build", counting)
    tok = byte_bpe()
    first, second = downloads.plan(tok), downloads.plan(tok)
    assert first == second and calls == list(downloads.BUILDERS)


def test_plan_offers_what_each_model_can_be_written_as() -> None:
    bpe = {f.key: f for f in downloads.plan(byte_bpe())}
    assert [k for k, f in bpe.items() if f.available] == ["tokenizer.json", "gpt2", "tiktoken"]
    assert bpe["vocab.txt"].reason == "vocab.txt holds WordPiece vocabularies; this tokenizer is bpe."
    wp = {f.key: f for f in downloads.plan(wordpiece())}
    assert [k for k, f in wp.items() if f.available] == ["tokenizer.json", "vocab.txt"]
    assert "Only byte-level BPE tokenizers have GPT-2 files" in wp["gpt2"].reason
    uni = {f.key: f for f in downloads.plan(unigram())}
    assert [k for k, f in uni.items() if f.available] == ["tokenizer.json", "spm"]


def test_unknown_format_is_refused() -> None:
    with pytest.raises(downloads.ExportError, match="There is no download format 'exe'"):
        downloads.build(byte_bpe(), "exe")


def test_tokenizer_json_download_loads_in_hf_tokenizers(client: FlaskClient, app: Flask) -> None:
    hf = pytest.importorskip("tokenizers")
    tok = byte_bpe()
    ref = store(app, tok)
    response = client.get(f"/tokenizers/{ref}/download/tokenizer.json/tokenizer.json")
    assert response.status_code == 200
    assert response.headers["Content-Disposition"] == 'attachment; filename="tiny-bpe-tokenizer.json"'
    loaded = hf.Tokenizer.from_str(response.get_data(as_text=True))
    assert loaded.encode(TEXT).ids == tok.encode(TEXT)


def test_gpt2_and_tiktoken_files_load_in_tiktoken(client: FlaskClient, app: Flask) -> None:
    tiktoken = pytest.importorskip("tiktoken")
    import base64

    tok = byte_bpe()
    ref = store(app, tok)
    ranks = client.get(f"/tokenizers/{ref}/download/tiktoken/ranks.tiktoken").get_data(as_text=True)
    sidecar = json.loads(client.get(f"/tokenizers/{ref}/download/tiktoken/ranks.tiktoken.json").get_data(as_text=True))
    mergeable = {base64.b64decode(t): int(r) for t, r in (line.split() for line in ranks.splitlines())}
    enc = tiktoken.Encoding(mergeable_ranks=mergeable, **sidecar)
    assert enc.encode(TEXT + EOT, allowed_special="all") == tok.encode(TEXT + EOT, allowed_special="all")
    merges = client.get(f"/tokenizers/{ref}/download/gpt2/merges.txt").get_data(as_text=True)
    assert merges.splitlines()[:3] == ["#version: 0.2", "t h", "th e"]


def test_impossible_format_is_a_422_with_the_reason(client: FlaskClient, app: Flask) -> None:
    ref = store(app, wordpiece())
    response = client.get(f"/tokenizers/{ref}/download/tiktoken/ranks.tiktoken")
    assert response.status_code == 422
    assert "Only byte-level BPE tokenizers have tiktoken files" in response.get_data(as_text=True)
    page = client.get(f"/tokenizers/{ref}/downloads").get_data(as_text=True)
    assert "Not available" in page and "Download vocab.txt" in page
    assert client.get(f"/tokenizers/{ref}/download/vocab.txt/other.txt").status_code == 404


def test_zip_holds_every_available_file_and_a_readme(client: FlaskClient, app: Flask) -> None:
    ref = store(app, byte_bpe())
    archive = zipfile.ZipFile(io.BytesIO(client.get(f"/tokenizers/{ref}/download.zip").data))
    assert sorted(archive.namelist()) == ["README.md", "merges.txt", "ranks.tiktoken", "ranks.tiktoken.json",
                                          "tokenizer.json", "vocab.json"]
    readme = archive.read("README.md").decode()
    assert "Tokenizer.from_file(\"tokenizer.json\")" in readme and "load_tiktoken_bpe" in readme
    assert "GPT2TokenizerFast" in readme and "vocab.txt" not in readme


def test_wordpiece_vocab_txt_round_trips() -> None:
    files = downloads.build(wordpiece(), "vocab.txt")
    assert files["vocab.txt"].decode().splitlines()[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello"]
