"""A sentencepiece ``.model`` through the web app: imported, encoded as SentencePieceProcessor
encodes, its piece types shown, and downloaded byte for byte as it came."""

from __future__ import annotations

import io
import zipfile

import pytest
from flask.testing import FlaskClient

LINES = [
    "The quick brown fox jumps over the lazy dog. 1234 apples and 56 pears.",
    "Tokenizers split text into pieces; some pieces are words, some are bytes.",
    "人工智能是计算机科学的一个分支。机器学习是人工智能的核心。",
    "Привет, как дела? Всё хорошо, спасибо!",
    "naïve café résumé — «quotes» and ‘more quotes’ …",
] * 40


@pytest.fixture(scope="module")
def spm_file(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    spm = pytest.importorskip("sentencepiece")
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(LINES), model_writer=model, vocab_size=600,
                                   model_type="bpe", byte_fallback=True, user_defined_symbols=["<tag>"],
                                   character_coverage=0.99, minloglevel=2)
    return model.getvalue()


def test_import_encode_show_and_download_a_model(client: FlaskClient, spm_file: bytes) -> None:
    spm = pytest.importorskip("sentencepiece")
    processor = spm.SentencePieceProcessor(model_proto=spm_file)
    response = client.post("/import", data={"kind": "spm_model", "name": "spm-bpe",
                                            "file": (io.BytesIO(spm_file), "tokenizer.model")})
    assert response.status_code == 303, response.get_data(as_text=True)[:2000]
    ref = int(response.headers["Location"].split("/")[2])
    for text in ("Hello <tag> world 42 ☃ 日本", "人工智能 and the lazy dog"):
        ids = client.post("/api/v1/encode", json={"tokenizer": ref, "text": text}).json["ids"]
        assert ids == processor.encode(text)
    page = client.get(f"/tokenizers/{ref}").get_data(as_text=True)
    assert 'data-testid="piece-types"' in page and 'data-testid="spm-spec"' in page
    counts = {"NORMAL": 0, "UNKNOWN": 0, "CONTROL": 0, "USER_DEFINED": 0, "UNUSED": 0, "BYTE": 0}
    for i in range(processor.get_piece_size()):
        kind = ("UNKNOWN" if processor.is_unknown(i) else "CONTROL" if processor.is_control(i) else
                "BYTE" if processor.is_byte(i) else "UNUSED" if processor.is_unused(i) else
                "USER_DEFINED" if processor.id_to_piece(i) == "<tag>" else "NORMAL")
        counts[kind] += 1
    cells = page.split('data-testid="piece-types"')[1].split("</table>")[0]
    assert [f"<td>{counts[name]:,}</td>" in cells for name in counts] == [True] * 6
    download = client.get(f"/tokenizers/{ref}/download/spm_model/tokenizer.model")
    assert download.status_code == 200 and download.data == spm_file
    with zipfile.ZipFile(io.BytesIO(client.get(f"/tokenizers/{ref}/download.zip").data)) as archive:
        assert archive.read("tokenizer.model") == spm_file


def test_a_broken_model_is_a_422_naming_the_problem(client: FlaskClient, spm_file: bytes) -> None:
    response = client.post("/import", data={"kind": "spm_model", "file": (io.BytesIO(spm_file[:-7]), "cut.model")})
    assert response.status_code == 422
    assert "bytes but its message ends at byte" in response.get_data(as_text=True)


def test_a_model_with_the_mark_after_words_imports_and_downloads(client: FlaskClient) -> None:
    # treat_whitespace_as_suffix ("a b" is "a▁b▁") was refused; its tokenizer.json appends the ▁.
    spm = pytest.importorskip("sentencepiece")
    tokenizers = pytest.importorskip("tokenizers")
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(LINES), model_writer=model, vocab_size=400,
                                   hard_vocab_limit=False, model_type="unigram", treat_whitespace_as_suffix=True,
                                   minloglevel=2)
    processor = spm.SentencePieceProcessor(model_proto=model.getvalue())
    response = client.post("/import", data={"kind": "spm_model", "name": "suffix",
                                            "file": (io.BytesIO(model.getvalue()), "tokenizer.model")})
    assert response.status_code == 303, response.get_data(as_text=True)[:2000]
    ref = int(response.headers["Location"].split("/")[2])
    text = "The lazy dog and 56 pears. 人工智能"
    assert processor.encode(text, out_type=str)[-1].endswith("▁")
    assert client.post("/api/v1/encode", json={"tokenizer": ref, "text": text}).json["ids"] == processor.encode(text)
    with zipfile.ZipFile(io.BytesIO(client.get(f"/tokenizers/{ref}/download.zip").data)) as archive:
        assert archive.read("tokenizer.model") == model.getvalue()
        exported = tokenizers.Tokenizer.from_str(archive.read("tokenizer.json").decode())
    assert exported.encode(text, add_special_tokens=False).ids == processor.encode(text)
