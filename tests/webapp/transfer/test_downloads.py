"""Downloads: each format verified, reasons where a format cannot hold the model, the zip, interop."""

from __future__ import annotations

import dataclasses
import io
import json
import stat
import zipfile
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from engine import Tokenizer
from engine.normalizers import get_normalizer
from tests.webapp.playground_samples import EOT, byte_bpe, store, unigram, wordpiece
from webapp.transfer import downloads

TEXT = "the wé, Hello worlds! 日本 👋"


def _count_writes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bool]]:
    """Record every (format, verify) written through ``downloads.BUILDERS``."""
    calls: list[tuple[str, bool]] = []
    for key, builder in list(downloads.BUILDERS.items()):
        def counting(tok: object, verify: bool, _key: str = key, _real: object = builder.write) -> dict[str, bytes]:
            calls.append((_key, verify))
            return _real(tok, verify)  # type: ignore[operator]
        monkeypatch.setitem(downloads.BUILDERS, key, dataclasses.replace(builder, write=counting))
    return calls


def test_the_page_writes_no_format_and_a_format_is_read_back_once(
        monkeypatch: pytest.MonkeyPatch, client: FlaskClient, app: Flask) -> None:
    """o200k's page took 7 s when it built every format; now files are written only when asked for."""
    calls = _count_writes(monkeypatch)
    ref = store(app, byte_bpe())
    assert client.get(f"/tokenizers/{ref}/downloads").status_code == 200
    assert client.get(f"/tokenizers/{ref}/downloads").status_code == 200
    assert calls == []
    assert client.get(f"/tokenizers/{ref}/download/gpt2/merges.txt").status_code == 200
    assert client.get(f"/tokenizers/{ref}/download/gpt2/vocab.json").status_code == 200
    assert calls == [("gpt2", True), ("gpt2", False)]
    client.get(f"/tokenizers/{ref}/download.zip")
    assert calls[2:] == [("tokenizer.json", True), ("gpt2", False), ("tiktoken", True)]


def test_plan_offers_what_each_model_can_be_written_as() -> None:
    bpe = {f.key: f for f in downloads.plan(byte_bpe())}
    assert [k for k, f in bpe.items() if f.available] == ["tokenizer.json", "gpt2", "tiktoken"]
    assert [k for k, f in bpe.items() if not f.fits] == ["vocab.txt", "spm", "spm_model"]
    assert bpe["vocab.txt"].reason == "vocab.txt holds WordPiece vocabularies; this tokenizer is byte-level BPE."
    wp = {f.key: f for f in downloads.plan(wordpiece())}
    assert [k for k, f in wp.items() if f.available] == ["tokenizer.json", "vocab.txt"]
    assert [k for k, f in wp.items() if not f.fits] == ["gpt2", "tiktoken", "spm", "spm_model"]
    assert wp["gpt2"].reason == "GPT-2 files hold byte-level BPE; this tokenizer is WordPiece."
    uni = {f.key: f for f in downloads.plan(unigram())}
    assert [k for k, f in uni.items() if f.available] == ["tokenizer.json", "spm", "spm_model"]
    assert [k for k, f in uni.items() if not f.fits] == ["gpt2", "tiktoken", "vocab.txt"]


def test_files_without_a_template_are_not_offered_for_a_tokenizer_whose_template_adds_ids() -> None:
    """Llama 3.1 adds <|begin_of_text|> through its post-processor; GPT-2 files and tiktoken rank
    files have no place for it, and read back they gave other ids at token 0: refused up front."""
    from engine.post_processors import TemplateProcessing

    tok = byte_bpe()
    tok.post_processor = TemplateProcessing("<|endoftext|> $A", tok.special_tokens)
    formats = {f.key: f for f in downloads.plan(tok)}
    for key, what in (("gpt2", "vocab.json + merges.txt"), ("tiktoken", "A tiktoken rank file")):
        assert not formats[key].available
        assert formats[key].reason == (f"{what} cannot hold this tokenizer's template, which adds <|endoftext|> "
                                       "around the text; use tokenizer.json.")
    assert formats["tokenizer.json"].available


def test_gpt2_files_are_not_offered_for_ignore_merges() -> None:
    """Llama 3 reads a pre-token in the vocabulary as one token; vocab.json + merges.txt cannot say so,
    and read back they gave other ids (found on Llama 3.1 and Mistral NeMo): refused up front."""
    tok = byte_bpe()
    tok.model.ignore_merges = True
    gpt2 = {f.key: f for f in downloads.plan(tok)}["gpt2"]
    assert gpt2.fits and not gpt2.available and "cannot say ignore_merges" in (gpt2.reason or "")


def test_formats_for_other_models_are_left_out_of_the_page_and_named_neutrally(client: FlaskClient, app: Flask) -> None:
    page = client.get(f"/tokenizers/{store(app, byte_bpe())}/downloads").get_data(as_text=True)
    assert 'data-format="vocab.txt"' not in page and 'data-format="spm"' not in page
    assert 'data-format="gpt2"' in page and "Download merges.txt" in page
    assert "Not available" not in page and "holds WordPiece vocabularies" not in page
    assert ('data-testid="not-offered">Not offered, as they hold other kinds of models:\n'
            '  vocab.txt (WordPiece only), .vocab (Unigram only), .model (Unigram or sentencepiece BPE only).</p>') in page


def test_a_format_that_fits_but_fails_for_this_tokenizer_says_why(client: FlaskClient, app: Flask) -> None:
    """A byte-level BPE with a normalizer fits GPT-2 files in kind, but they cannot store the normalizer."""
    tok = byte_bpe()
    normalized = Tokenizer(tok.model, normalizer=get_normalizer("nfkc"), pre_tokenizer=tok.pre_tokenizer,
                           special_tokens=tok.special_tokens, name="normalized")
    gpt2 = {f.key: f for f in downloads.plan(normalized)}["gpt2"]
    assert gpt2.fits and gpt2.reason == (
        "vocab.json + merges.txt cannot hold this tokenizer's normalizer; use tokenizer.json.")
    page = client.get(f"/tokenizers/{store(app, normalized)}/downloads").get_data(as_text=True)
    assert 'data-testid="why-gpt2"><strong>Not available for this tokenizer.</strong> vocab.json' in page


def test_a_failed_check_is_remembered_and_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    """A file that does not read back is refused at download, then named on the page."""
    tok = byte_bpe()
    builder = downloads.BUILDERS["tiktoken"]

    def broken(t: object, verify: bool) -> dict[str, bytes]:
        raise downloads.ExportError("The exported tiktoken rank file does not read back to the same tokenizer.")
    monkeypatch.setitem(downloads.BUILDERS, "tiktoken", dataclasses.replace(builder, write=broken))
    assert {f.key: f for f in downloads.plan(tok)}["tiktoken"].available
    with pytest.raises(downloads.ExportError, match="does not read back"):
        downloads.build(tok, "tiktoken")
    assert "does not read back" in ({f.key: f for f in downloads.plan(tok)}["tiktoken"].reason or "")


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
    assert "tiktoken files hold byte-level BPE; this tokenizer is WordPiece." in response.get_data(as_text=True)
    page = client.get(f"/tokenizers/{ref}/downloads").get_data(as_text=True)
    assert "Download vocab.txt" in page and 'data-format="tiktoken"' not in page
    assert client.get(f"/tokenizers/{ref}/download/vocab.txt/other.txt").status_code == 404


def test_zip_holds_every_available_file_and_a_readme(client: FlaskClient, app: Flask) -> None:
    ref = store(app, byte_bpe())
    archive = zipfile.ZipFile(io.BytesIO(client.get(f"/tokenizers/{ref}/download.zip").data))
    assert sorted(archive.namelist()) == ["README.md", "merges.txt", "ranks.tiktoken", "ranks.tiktoken.json",
                                          "tokenizer.json", "tokenizer_config.json", "vocab.json"]
    readme = archive.read("README.md").decode()
    assert "Tokenizer.from_file(\"tokenizer.json\")" in readme and "Encoding(mergeable_ranks=ranks" in readme
    assert "GPT2TokenizerFast" in readme and "AutoTokenizer.from_pretrained" in readme and "vocab.txt" not in readme


def test_wordpiece_vocab_txt_round_trips() -> None:
    files = downloads.build(wordpiece(), "vocab.txt")
    assert files["vocab.txt"].decode().splitlines()[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello"]


@pytest.mark.parametrize(("sample", "roles"), [
    (byte_bpe, {"bos_token": EOT, "eos_token": EOT}),
    (wordpiece, {"unk_token": "[UNK]", "cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]"}),
    (unigram, {"unk_token": "<unk>"}),
], ids=["byte-bpe", "wordpiece", "unigram"])
def test_the_unzipped_folder_loads_in_autotokenizer_with_our_ids(
        client: FlaskClient, app: Flask, tmp_path: Path, transformers: Any, sample: Any, roles: dict[str, str]) -> None:
    tok = sample()
    ref = store(app, tok)
    zipfile.ZipFile(io.BytesIO(client.get(f"/tokenizers/{ref}/download.zip").data)).extractall(tmp_path)
    theirs = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    assert isinstance(theirs, transformers.PreTrainedTokenizerFast)
    assert {role: getattr(theirs, role) for role in roles} == roles
    for text in (TEXT, "the cats", "hello unables world!"):
        assert theirs.encode(text) == tok.encode(text)
        assert theirs.decode(tok.encode(text)) == tok.decode(tok.encode(text))


def test_an_imported_chat_template_and_tokens_go_back_into_tokenizer_config(client: FlaskClient, app: Flask,
                                                                           tmp_path: Path, transformers: Any) -> None:
    template = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{{ eos_token }}{% endfor %}"
    config = {"tokenizer_class": "GPT2Tokenizer", "chat_template": template, "bos_token": EOT, "eos_token": EOT,
              "pad_token": EOT}
    imported = client.post("/import", data={
        "kind": "tokenizer_json", "name": "chatty",
        "file": (io.BytesIO(byte_bpe().to_json().encode()), "tokenizer.json"),
        "config": (io.BytesIO(json.dumps(config).encode()), "tokenizer_config.json")})
    assert imported.status_code == 303
    ref = int(imported.headers["Location"].split("/")[2])  # /tokenizers/<id>/play
    written = json.loads(client.get(f"/tokenizers/{ref}/download/tokenizer.json/tokenizer_config.json").data)
    assert (written["chat_template"], written["pad_token"]) == (template, EOT)
    zipfile.ZipFile(io.BytesIO(client.get(f"/tokenizers/{ref}/download.zip").data)).extractall(tmp_path)
    theirs = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    prompt = theirs.apply_chat_template([{"role": "user", "content": "the"}], tokenize=False)
    assert prompt == f"<|user|>the{EOT}"


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
