"""HF ``BPE`` model files, model level: our ids against the real ``tokenizers`` library.

Small hand-made ``tokenizer.json`` documents (no normalizer, no pre-tokenizer, so HF's model
sees each piece as it is) cover byte-level ``ignore_merges`` and the model fields, and the
character-level semantics of Llama 2 / Gemma 3 files (byte fallback, unknown runs, affixes).
The last test runs on real files when ``TOKENFORGE_TEST_OPEN_MODELS_DIR`` names a folder of
``<name>/tokenizer.json``.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from engine.byte_unicode import bytes_to_symbols
from engine.decoders import ConcatDecoder, FallbackByte, decoder_from_hf
from engine.errors import ConfigError, FormatError
from engine.formats.tiktoken import dumps_ranks
from engine.models.bpe import BATCH_MIN_PIECES, BPE
from engine.models.bpe_char import BYTE_PIECES, CharBPE
from engine.snapshot import load_snapshot, snapshot_of
from engine.tokenizer import Tokenizer
from tests.engine.bpe_encode_reference import reference_encode

HFTokenizer = pytest.importorskip("tokenizers").Tokenizer


def document(model: dict[str, Any]) -> str:
    return json.dumps({"version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
                       "normalizer": None, "pre_tokenizer": None, "post_processor": None, "decoder": None,
                       "model": model})


def hf_ids(model: dict[str, Any], piece: str) -> list[int]:
    return [token.id for token in HFTokenizer.from_str(document(model)).model.tokenize(piece)]


# ----------------------------------------------------------------- byte-level BPE

def byte_level_model(**fields: Any) -> dict[str, Any]:
    """All 256 bytes, merges that build "Ġhello" and "ab", and whole tokens no merge builds."""
    vocab = {bytes_to_symbols(bytes([b])): b for b in range(256)}
    merged = ["he", "ll", "hell", "hello", "Ġhello", "ab"]
    whole = ["Ġworld", "abab", "x" * 70]  # reachable only through ignore_merges
    for token in merged + whole:
        vocab[token] = len(vocab)
    merges = ["h e", "l l", "he ll", "hell o", "Ġ hello", "a b"]
    return {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, **fields,
            "vocab": vocab, "merges": merges}


BYTE_PIECES_TEXT = [" hello", " world", "abab", "ababab", "x" * 70, "x" * 71, "hello", "naïve", ""]


@pytest.mark.parametrize("ignore_merges", [True, False], ids=["ignore_merges", "merges"])
@pytest.mark.parametrize("piece", BYTE_PIECES_TEXT, ids=lambda p: repr(p[:12]))
def test_byte_level_ids_match_hf(ignore_merges: bool, piece: str) -> None:
    data = byte_level_model(ignore_merges=ignore_merges)
    model = BPE.from_hf(data, special_tokens={})
    expected = hf_ids(data, bytes_to_symbols(piece.encode()))
    assert model.tokenize(piece) == expected
    assert model.encode_bytes(piece.encode()) == expected
    assert reference_encode(model, piece.encode()) == expected


def test_ignore_merges_by_the_numbers() -> None:
    model = BPE.from_hf(byte_level_model(ignore_merges=True), special_tokens={})
    assert model.tokenize(" world") == [262]  # one token, though no merge makes it
    assert model.tokenize("abab") == [263] and model.tokenize("ababab") == [261, 261, 261]
    plain = BPE.from_hf(byte_level_model(), special_tokens={})
    assert plain.tokenize("abab") == [261, 261]


def test_ignore_merges_in_the_batch_path() -> None:
    data = byte_level_model(ignore_merges=True)
    model = BPE.from_hf(data, special_tokens={})
    pieces = (BYTE_PIECES_TEXT * (BATCH_MIN_PIECES // len(BYTE_PIECES_TEXT) + 1))
    hf = HFTokenizer.from_str(document(data)).model
    expected = [tuple(t.id for t in hf.tokenize(bytes_to_symbols(p.encode()))) for p in pieces]
    assert model.tokenize_many(pieces) == expected


def test_byte_level_fields_round_trip() -> None:
    data = byte_level_model(ignore_merges=True, unk_token="<unk>", continuing_subword_prefix="",
                            end_of_word_suffix="", byte_fallback=True, fuse_unk=True, dropout=0.0)
    exported = BPE.from_hf(data, special_tokens={}).to_hf()
    fields = ("ignore_merges", "unk_token", "continuing_subword_prefix", "end_of_word_suffix",
              "byte_fallback", "fuse_unk", "dropout")
    assert {k: exported[k] for k in fields} == {k: data[k] for k in fields}
    assert hf_ids(exported, "Ġworld") == [262]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        pytest.param({"dropout": 0.1}, "model.dropout", id="dropout"),
        pytest.param({"dropout": "0"}, "model.dropout", id="dropout-text"),
        pytest.param({"continuing_subword_prefix": "##"}, "model.continuing_subword_prefix", id="prefix"),
        pytest.param({"end_of_word_suffix": "</w>"}, "model.end_of_word_suffix", id="suffix"),
        pytest.param({"ignore_merges": 1}, "model.ignore_merges", id="ignore-merges-not-bool"),
        pytest.param({"unk_token": 5}, "model.unk_token", id="unk-not-text"),
    ],
)
def test_byte_level_fields_that_change_the_ids_are_refused(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(FormatError, match=message):
        BPE.from_hf(byte_level_model(**fields), special_tokens={})


# ----------------------------------------------------------------- raw tokens (Command R+)

RAW_TOKENS = ["\u200d", "🔆", "Ġ🔆", "x🔆"]  # outside the byte alphabet, as Cohere's file writes emoji


def raw_token_document(**fields: Any) -> str:
    """A byte-level tokenizer.json (ByteLevel pre-tokenizer and decoder) whose vocabulary also holds
    raw tokens, as typed: Hugging Face reads them, encodes none of them, and decodes their UTF-8."""
    model = byte_level_model(**fields)
    for token in RAW_TOKENS:
        model["vocab"][token] = len(model["vocab"])
    model["vocab"]["âĢ"] = len(model["vocab"])
    model["vocab"]["âĢį"] = len(model["vocab"])  # the byte-level spelling of "\u200d", merged below
    model["merges"] += ["â Ģ", "âĢ į"]
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    return json.dumps({"version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
                       "normalizer": None, "pre_tokenizer": byte_level, "post_processor": None,
                       "decoder": byte_level, "model": model})


RAW_TEXTS = ["a\u200db", " 🔆", "🔆\u200d🔆", "x🔆", " hello", "abab"]


@pytest.mark.parametrize("ignore_merges", [True, False], ids=["ignore_merges", "merges"])
def test_raw_tokens_read_encode_and_decode_as_hugging_face(ignore_merges: bool) -> None:
    doc = raw_token_document(ignore_merges=ignore_merges)
    ours, hf = Tokenizer.from_json(doc), HFTokenizer.from_str(doc)
    raw_ids = [hf.token_to_id(token) for token in RAW_TOKENS]
    for text in RAW_TEXTS:
        assert ours.encode(text) == hf.encode(text).ids, text
        assert not set(ours.encode(text)) & set(raw_ids)
    for ids in ([raw_ids[0]], raw_ids, [raw_ids[1], 261, raw_ids[2], raw_ids[3]], [hf.token_to_id("âĢį"), raw_ids[0]]):
        assert ours.decode(ids) == hf.decode(ids), ids
    assert [ours.model.id_to_token(i) for i in raw_ids] == RAW_TOKENS
    assert [ours.model.token_to_id(token) for token in RAW_TOKENS] == raw_ids
    assert ours.model.token_to_id("âĢį") == hf.token_to_id("âĢį")  # the same bytes, the reachable spelling
    # Written back and through a snapshot, the same tokenizer.
    again = HFTokenizer.from_str(ours.to_json())
    assert again.get_vocab() == hf.get_vocab()
    assert [again.encode(text).ids for text in RAW_TEXTS] == [hf.encode(text).ids for text in RAW_TEXTS]
    restored = load_snapshot(io.BytesIO(snapshot_of(ours) or b""))
    assert [restored.encode(text) for text in RAW_TEXTS] == [hf.encode(text).ids for text in RAW_TEXTS]
    assert restored.decode(raw_ids) == hf.decode(raw_ids)
    assert restored.model.id_to_token(raw_ids[2]) == "Ġ🔆"


def test_a_merge_of_a_raw_token_is_refused_and_tiktoken_cannot_hold_one() -> None:
    data = json.loads(raw_token_document())
    data["model"]["merges"].append("🔆 a")
    data["model"]["vocab"]["🔆a"] = len(data["model"]["vocab"])
    with pytest.raises(FormatError, match="outside the byte-level alphabet"):
        Tokenizer.from_json(json.dumps(data))
    with pytest.raises(ConfigError, match="made by no merge"):
        dumps_ranks(Tokenizer.from_json(raw_token_document()))


# ----------------------------------------------------------------- character-level BPE

def char_model(*, bytes_: bool = True, some_bytes: bool = False, **fields: Any) -> dict[str, Any]:
    """A sentencepiece-style vocabulary: ▁-words, the unknown token, byte pieces."""
    vocab: dict[str, int] = {"<unk>": 0}
    if bytes_:
        for piece in (BYTE_PIECES[0xC3:0xC4] if some_bytes else BYTE_PIECES):
            vocab[piece] = len(vocab)
    for token in ["▁", "a", "b", "c", "l", "o", "w", "e", "r", "é", "▁l", "lo", "▁lo", "▁low", "er", "▁lower",
                  "ab", "abc", "##b", "##c", "a##b"]:
        vocab[token] = len(vocab)
    merges = [["▁", "l"], ["l", "o"], ["▁l", "o"], ["▁lo", "w"], ["e", "r"], ["▁low", "er"], ["a", "b"],
              ["ab", "c"]]
    model = {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
             "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": bytes_, "ignore_merges": False,
             "vocab": vocab, "merges": merges}
    model.update(fields)
    return model


CHAR_PIECES = ["▁lower", "▁low", "abc", "▁lowé", "☃", "▁☃☃x", "a☃b", "▁" + "lo" * 40, "ab" * 50 + "☃é",
               "x", "xy", "éé", "a\u0000b", ""]
CHAR_MODELS = {
    "byte-fallback": {},
    "byte-fallback-no-unk": {"unk_token": None},
    "some-byte-pieces": {"some_bytes": True},
    "unk-fused": {"bytes_": False},
    "unk-not-fused": {"bytes_": False, "fuse_unk": False},
    "no-unk": {"bytes_": False, "unk_token": None},
    "ignore-merges": {"ignore_merges": True},
    "suffix": {"bytes_": False, "end_of_word_suffix": "b"},
    "prefix": {"bytes_": False, "continuing_subword_prefix": "##", "merges": [["a", "##b"]]},
    "empty-affixes": {"continuing_subword_prefix": "", "end_of_word_suffix": ""},
}


@pytest.mark.parametrize("name", CHAR_MODELS)
@pytest.mark.parametrize("piece", CHAR_PIECES, ids=lambda p: repr(p[:10]))
def test_char_level_ids_match_hf(name: str, piece: str) -> None:
    data = char_model(**CHAR_MODELS[name])
    assert CharBPE.from_hf(data, special_tokens={}).tokenize(piece) == hf_ids(data, piece)


def test_char_level_by_the_numbers() -> None:
    model = CharBPE.from_hf(char_model(some_bytes=True), special_tokens={})
    # "é" is a piece; "☃" (E2 98 83) has no byte pieces here, so it is the unknown token, and
    # "x☃" is one fused unknown token.
    assert [model.id_to_token(i) for i in model.tokenize("▁lowé")] == ["▁low", "é"]
    assert [model.id_to_token(i) for i in model.tokenize("a☃x☃b")] == ["a", "<unk>", "b"]
    full = CharBPE.from_hf(char_model(), special_tokens={})
    assert [full.id_to_token(i) for i in full.tokenize("a☃")] == ["a", "<0xE2>", "<0x98>", "<0x83>"]


def test_byte_pieces_decode_to_their_byte() -> None:
    model = CharBPE.from_hf(char_model(), special_tokens={})
    byte_id = model.token_to_id("<0xE2>")
    assert model.token_bytes(byte_id) == b"\xe2" and isinstance(model.token_bytes(byte_id), FallbackByte)
    assert model.surface_bytes(byte_id) == b"\xe2"
    assert model.token_bytes(model.token_to_id("▁low")) == "▁low".encode()
    prefixed = CharBPE.from_hf(char_model(bytes_=False, continuing_subword_prefix="##", merges=[["a", "##b"]]),
                               special_tokens={})
    assert prefixed.surface_bytes(prefixed.token_to_id("##b")) == b"b"


def test_char_level_round_trip_gives_the_same_ids() -> None:
    data = char_model(ignore_merges=True, continuing_subword_prefix="", end_of_word_suffix="")
    exported = CharBPE.from_hf(data, special_tokens={}).to_hf()
    assert {k: exported[k] for k in data if k != "merges"} == {k: data[k] for k in data if k != "merges"}
    for piece in CHAR_PIECES:
        assert hf_ids(exported, piece) == hf_ids(data, piece)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        pytest.param({"dropout": 0.5}, "model.dropout", id="dropout"),
        pytest.param({"unk_token": "<missing>"}, "model.unk_token", id="unk-absent"),
        pytest.param({"fuse_unk": "yes"}, "model.fuse_unk", id="fuse-not-bool"),
        pytest.param({"merges": [["a", "x"]]}, r"model.merges\[0\]", id="merge-absent"),
        pytest.param({"merges": ["a b c"]}, r"model.merges\[0\]", id="merge-three-parts"),
        pytest.param({"end_of_word_suffix": 3}, "model.end_of_word_suffix", id="suffix-not-text"),
    ],
)
def test_char_level_bad_fields_are_refused(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(FormatError, match=message):
        CharBPE.from_hf(char_model(**fields), special_tokens={})


# ----------------------------------------------------------------- real files

OPEN_MODELS = os.environ.get("TOKENFORGE_TEST_OPEN_MODELS_DIR")
SAMPLE = ("The quick brown fox jumps over the lazy dog. Naïve café, 東京タワー, 🙂🙃, ñandú, Ωmega; "
          "def f(x):\n\treturn x ** 2  # 1234567 tokens\u3000and\u00a0spaces   end")


@pytest.mark.parametrize("name", ["llama2", "llama3", "gemma3"])
def test_real_files_at_the_model_level(name: str) -> None:
    path = Path(OPEN_MODELS or "/nonexistent") / name / "tokenizer.json"
    if not path.is_file():
        pytest.skip(f"set TOKENFORGE_TEST_OPEN_MODELS_DIR to a folder with {name}/tokenizer.json")
    text = path.read_text(encoding="utf-8")
    data = json.loads(text)
    specials = {entry["content"]: entry["id"] for entry in data["added_tokens"]}
    full = HFTokenizer.from_str(text)
    hf = full.model
    words = SAMPLE.split(" ")
    if data["model"].get("byte_fallback") is not None and name != "llama3":
        model: Any = CharBPE.from_hf(data["model"], special_tokens=specials)
        pieces = ["▁" + w for w in words] + ["▁".join(words), "▁" + "a" * 300]
        for piece in pieces:
            assert model.tokenize(piece) == [t.id for t in hf.tokenize(piece)], piece
        # The file's decoder chain (Replace, ByteFallback, Fuse[, Strip]) over byte pieces too.
        ids = [i for piece in pieces + ["▁☃\U0001F9FF𝕏"] for i in model.tokenize(piece)]
        ids += [model.token_to_id("<0xE2>"), model.token_to_id("<0x98>")]  # a cut character at the end
        decoder = decoder_from_hf(data["decoder"], ConcatDecoder())
        ours = decoder.decode([model.token_bytes(i) for i in ids]).decode("utf-8", "replace")
        assert ours == full.decode(ids, skip_special_tokens=False)
    else:
        model = BPE.from_hf(data["model"], special_tokens=specials)
        pieces = [" " + w for w in words] + [" ".join(words), " " + "a" * 300]
        expected = [tuple(t.id for t in hf.tokenize(bytes_to_symbols(p.encode()))) for p in pieces]
        assert [tuple(model.tokenize(p)) for p in pieces] == expected
        assert model.tokenize_many(pieces * (BATCH_MIN_PIECES // len(pieces) + 1))[: len(pieces)] == expected
