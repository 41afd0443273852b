"""Snapshots: a parsed BPE tokenizer written as arrays reads back as the same tokenizer.

"The same" is checked where it shows: identical ids on mixed text (special tokens, bytes the
vocabulary lacks, a long piece), the identical ``tokenizer.json`` when written again, and the
same vocabulary and merges. A snapshot that is truncated, of another version or with arrays
that disagree is a SnapshotError (the caller then parses the document), never another error.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest

from engine import Tokenizer, train
from engine.models.bpe import BPE
from engine.models.bpe_char import CharBPE
from engine.snapshot import SnapshotError, load_snapshot, snapshot_of
from engine.tokenizer_json import to_hf_dict
from tests.open_models import open_model_file

CORPUS = ("the cat sat on the mat; the dog sat on the log. naïve café, 東京 and 東京タワー.\n"
          "def tokenize(text): return [ord(c) for c in text]  # 42 crêpes for $1,234.56\n") * 40
TEXT = "the café sat on 東京タワー 🙂 with \x00 tabs\t\tand a longlonglonglonglonglonglonglonglonglonglonglongword."


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("snapshot") / "corpus.txt"
    path.write_text(CORPUS, encoding="utf-8")
    return path


def round_trip(tokenizer: Tokenizer) -> Tokenizer:
    data = snapshot_of(tokenizer)
    assert data is not None
    return load_snapshot(io.BytesIO(data))


@pytest.mark.parametrize("options", [
    pytest.param({"vocab_size": 320, "special_tokens": ["<|endoftext|>"]}, id="byte-level"),
    pytest.param({"level": "spm", "vocab_size": 320}, id="spm-style"),
    pytest.param({"level": "char", "vocab_size": 120}, id="classic-char"),
])
def test_a_trained_bpe_reads_back_identical(corpus: Path, options: dict[str, object]) -> None:
    # through tokenizer.json, as the web app stores it: the spm-style one then reads as HF's
    # character-level BPE with byte fallback (Llama 2's and Gemma 3's model)
    tokenizer = Tokenizer.from_json(train("bpe", [corpus], options).tokenizer.to_json())
    back = round_trip(tokenizer)
    assert type(back.model) is type(tokenizer.model)
    assert back.encode(TEXT + "<|endoftext|>", allowed_special="all") == tokenizer.encode(
        TEXT + "<|endoftext|>", allowed_special="all")
    assert back.decode(back.encode(TEXT)) == tokenizer.decode(tokenizer.encode(TEXT))
    assert back.to_json() == tokenizer.to_json()
    assert back.model.merges == tokenizer.model.merges


def test_the_model_kinds_are_the_two_bpe_ones(corpus: Path) -> None:
    byte_level = train("bpe", [corpus], {"vocab_size": 300}).tokenizer
    spm_style = train("bpe", [corpus], {"level": "spm", "vocab_size": 320}).tokenizer
    char_level = Tokenizer.from_json(spm_style.to_json())
    assert isinstance(byte_level.model, BPE) and isinstance(char_level.model, CharBPE)
    assert snapshot_of(byte_level) and snapshot_of(char_level)
    assert snapshot_of(spm_style) is None  # scored pieces (SpmBPE): small, parsed as they are
    assert snapshot_of(train("wordpiece", [corpus], {"vocab_size": 100}).tokenizer) is None


def test_the_header_holds_no_vocabulary_or_merges(corpus: Path) -> None:
    tokenizer = train("bpe", [corpus], {"vocab_size": 320}).tokenizer
    with np.load(io.BytesIO(snapshot_of(tokenizer) or b""), allow_pickle=False) as arrays:
        header = json.loads(arrays["header"].tobytes())
        assert len(arrays["lefts"]) == len(tokenizer.model.merges) == 63  # 320 less 256 bytes and <|endoftext|>
        assert len(arrays["ids"]) == 319  # the special token is in the header, not the model
    assert header["document"]["model"]["merges"] == []
    assert header["document"]["model"]["vocab"] == {}
    assert header["document"]["pre_tokenizer"] == to_hf_dict(tokenizer)["pre_tokenizer"]


def rewritten(data: bytes, **changes: object) -> bytes:
    """The snapshot ``data`` with some arrays replaced (``header`` given as a dict)."""
    with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
        contents = {name: arrays[name] for name in arrays.files}
    for name, value in changes.items():
        contents[name] = (np.frombuffer(json.dumps(value).encode(), np.uint8) if name == "header"
                          else np.asarray(value))
    out = io.BytesIO()
    np.savez(out, **contents)  # type: ignore[arg-type]
    return out.getvalue()


def test_bad_snapshots_are_snapshot_errors(corpus: Path) -> None:
    tokenizer = train("bpe", [corpus], {"vocab_size": 300}).tokenizer
    data = snapshot_of(tokenizer) or b""
    with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
        header = json.loads(arrays["header"].tobytes())
        ids = arrays["ids"]
    bad = {
        "truncated": data[: len(data) // 2],
        "empty": b"",
        "not a zip": b"{}" * 100,
        "another version": rewritten(data, header={**header, "version": 999}),
        "unknown level": rewritten(data, header={**header, "level": "word"}),
        "ids and spellings disagree": rewritten(data, ids=ids[:-1]),
        "a merge of an absent id": rewritten(data, lefts=np.full(44, 10**6, np.int32)),
        "a negative id": rewritten(data, rights=np.full(44, -3, np.int32)),
        "options the model lacks": rewritten(data, header={**header, "options": {"colour": "red"}}),
    }
    for name, blob in bad.items():
        with pytest.raises(SnapshotError):
            load_snapshot(io.BytesIO(blob))
        assert name  # each case raised


@pytest.mark.parametrize("name", ["llama2", "gemma3", "gptoss"])
def test_open_models_read_back_with_their_ids(name: str) -> None:
    path = open_model_file(name)  # skips without $TOKENFORGE_TEST_OPEN_MODELS_DIR
    tokenizer = Tokenizer.from_file(path)
    back = round_trip(tokenizer)
    text = TEXT + " <start_of_turn>user\n<|endoftext|> Всеобщая декларация прав человека " * 20
    assert back.encode(text, allowed_special="all") == tokenizer.encode(text, allowed_special="all")
    assert back.vocab_size == tokenizer.vocab_size
