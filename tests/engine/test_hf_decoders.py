"""HF decoders on bytes: each chain decodes to exactly the text the real ``tokenizers`` gives.

The documents pair a sentencepiece-style character-level BPE (``▁`` words and byte pieces, so a
token can be a :class:`engine.decoders.FallbackByte`) with one decoder; the tokens decoded are
given by id, so byte pieces appear in every position, valid UTF-8 or not.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.decoders import (
    BPESuffixDecoder,
    ByteFallback,
    ByteLevelDecoder,
    ConcatDecoder,
    FallbackByte,
    Metaspace,
    Replace,
    Sequence,
    Strip,
    decoder_from_hf,
)
from engine.errors import FormatError
from engine.models.bpe_char import BYTE_PIECES, CharBPE

HFTokenizer = pytest.importorskip("tokenizers").Tokenizer

TOKENS = ["<unk>", *BYTE_PIECES, "▁", "a", "▁▁", "▁hello", "▁world", "ab", "##c", "x</w>", "y", "<0x4g>", "<0x+A>",
          "  y", " a ", "y  ", ".", "'s", "▁don", "'t", "<s>"]
VOCAB = {token: index for index, token in enumerate(TOKENS)}
MODEL = {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
         "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "vocab": VOCAB, "merges": []}
OURS = CharBPE.from_hf(MODEL, special_tokens={})

LLAMA2 = {"type": "Sequence", "decoders": [
    {"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"},
    {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
GEMMA3 = {"type": "Sequence", "decoders": LLAMA2["decoders"][:3]}
DECODERS = {
    "llama2": LLAMA2,
    "gemma3": GEMMA3,
    "metaspace-always": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True},
    "metaspace-first": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": False},
    "metaspace-never": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "never", "split": True},
    "metaspace-legacy": {"type": "Metaspace", "replacement": "▁", "add_prefix_space": True},
    "byte-fallback": {"type": "ByteFallback"},
    "fuse": {"type": "Fuse"},
    "fuse-before-byte-fallback": {"type": "Sequence", "decoders": [{"type": "Fuse"}, {"type": "ByteFallback"}]},
    "strip-both": {"type": "Strip", "content": " ", "start": 2, "stop": 1},
    "strip-letter": {"type": "Strip", "content": "a", "start": 1, "stop": 1},
    "replace-regex": {"type": "Replace", "pattern": {"Regex": "[▁ ]+"}, "content": "_"},
    "replace-into-byte-piece": {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "0x"}, "content": "0y"}, {"type": "ByteFallback"}]},
    "wordpiece": {"type": "WordPiece", "prefix": "##", "cleanup": True},
    "wordpiece-raw": {"type": "WordPiece", "prefix": "##", "cleanup": False},
    "bpe-suffix": {"type": "BPEDecoder", "suffix": "</w>"},
    "byte-level-first": {"type": "Sequence", "decoders": [
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        {"type": "Replace", "pattern": {"String": "▁"}, "content": " "}]},
}
SEQUENCES = {
    "words": ["▁hello", "▁world"],
    "leading-blanks": ["▁▁", "▁hello", "▁", "▁world"],
    "bytes-valid": ["▁hello", "<0xE2>", "<0x98>", "<0x83>", "▁world"],
    "bytes-cut": ["<0xE2>", "<0x98>", "▁hello", "<0xE2>"],
    "ascii-in-bad-run": ["<0x41>", "<0xE2>", "y"],
    "byte-space-first": ["<0x20>", "<0x20>", "▁hello"],
    "odd-pieces": ["<0x4g>", "<0x+A>", "<0x0A>", "ab"],
    # Not a token made only of a Strip's content: HF panics when start and stop then overlap.
    "spaces": ["  y", " a ", "y  ", "ab", "y"],
    "wordpiece": ["ab", "##c", ".", "'s", "▁don", "'t", "##c"],
    "suffix": ["x</w>", "y", "x</w>"],
    "one": ["▁"],
    "none": [],
}


@pytest.mark.parametrize("tokens", SEQUENCES.values(), ids=SEQUENCES.keys())
@pytest.mark.parametrize("name", DECODERS)
def test_decode_matches_hf(name: str, tokens: list[str]) -> None:
    hf = HFTokenizer.from_str(json.dumps({"version": "1.0", "added_tokens": [], "normalizer": None,
                                          "pre_tokenizer": None, "post_processor": None,
                                          "decoder": DECODERS[name], "model": MODEL}))
    ids = [VOCAB[t] for t in tokens]
    decoder = decoder_from_hf(DECODERS[name], ConcatDecoder())
    ours = decoder.decode([OURS.token_bytes(i) for i in ids]).decode("utf-8", "replace")
    assert ours == hf.decode(ids, skip_special_tokens=False)


@pytest.mark.parametrize("name", ["byte-fallback", "llama2", "fuse-before-byte-fallback"])
def test_a_vocabularys_own_byte_pieces_decode_as_hugging_face(name: str) -> None:
    """A WordLevel vocabulary's ``<0x2C>`` is a token string HF's ByteFallback reads as the byte."""
    from engine.tokenizer import Tokenizer

    vocab = {token: index for index, token in enumerate(["[UNK]", "<0x2C>", "<0xE2>", "<0x98>", "<0x83>", "▁a", "<0x4g>"])}
    document = json.dumps({"version": "1.0", "added_tokens": [], "normalizer": None, "pre_tokenizer": None,
                           "post_processor": None, "decoder": DECODERS[name],
                           "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"}})
    hf, ours = HFTokenizer.from_str(document), Tokenizer.from_json(document)
    for ids in ([1, 5, 1], [2, 3, 4, 5], [2, 3, 5, 6], [6, 1]):
        assert ours.decode(ids) == hf.decode(ids, skip_special_tokens=False), ids


@pytest.mark.parametrize("name", DECODERS)
def test_to_hf_writes_back_what_was_read(name: str) -> None:
    assert decoder_from_hf(DECODERS[name], ConcatDecoder()).to_hf() == DECODERS[name]


def test_steps_by_the_numbers() -> None:
    piece = [FallbackByte(0xE2, "<0xE2>"), FallbackByte(0x98, "<0x98>")]
    assert ByteFallback().decode_chain([*piece, b"a"]) == ["\ufffd".encode()] * 2 + [b"a"]
    assert ByteFallback().decode_chain([*piece, FallbackByte(0x83, "<0x83>")]) == ["☃".encode()]
    assert ConcatDecoder().decode([*piece, b"a"]) == b"<0xE2><0x98>a"  # no ByteFallback: printed as pieces
    assert Strip(" ", 1, 1).decode_chain([b"  a  ", b" "]) == [b" a ", b""]
    assert Replace("▁", " ").decode_chain(["▁a▁".encode(), piece[0]]) == [b" a ", piece[0]]
    assert Metaspace().decode(["▁▁a".encode(), "▁b".encode()]) == b"a b"
    assert BPESuffixDecoder().decode([b"a</w>", b"b</w>"]) == b"a b"
    assert ByteLevelDecoder().decode([b"\xe2\x98", b"\x83"]) == "☃".encode()
    chain = Sequence([Replace("▁", " "), ByteFallback(), ConcatDecoder(), Strip(" ", 1, 0)])
    assert chain.decode(["▁hi".encode(), *piece, FallbackByte(0x83, "<0x83>")]) == "hi☃".encode()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param({"type": "Sequence", "decoders": [{"type": "Fuse"}, {"type": "Fuse"}, {"type": "CTC"}]},
                     r"decoder\.decoders\[2\]\.type", id="unknown-in-chain"),
        pytest.param({"type": "Nope"}, r"decoder\.type", id="unknown"),
        pytest.param({"type": "Strip", "content": "ab", "start": 1, "stop": 0}, r"decoder\.content",
                     id="strip-content"),
        pytest.param({"type": "Strip", "content": " ", "start": -1, "stop": 0}, r"decoder\.start", id="strip-start"),
        pytest.param({"type": "Strip", "content": " ", "start": True, "stop": 0}, r"decoder\.start", id="strip-bool"),
        pytest.param({"type": "Replace", "pattern": {"Glob": "*"}, "content": ""}, r"decoder\.pattern", id="glob"),
        pytest.param({"type": "Replace", "pattern": {"Regex": "("}, "content": ""}, r"decoder\.pattern\.Regex",
                     id="bad-regex"),
        pytest.param({"type": "Replace", "pattern": {"String": "a"}}, r"decoder\.content", id="no-content"),
        pytest.param({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "sometimes"},
                     r"decoder\.prepend_scheme", id="scheme"),
        pytest.param({"type": "Metaspace", "replacement": "▁", "add_prefix_space": False},
                     "add_prefix_space", id="legacy-mismatch"),
        pytest.param({"type": "Sequence", "decoders": [{"type": "Fuse"}, {"type": "ByteLevel"}]},
                     r"decoder\.decoders\[1\]", id="late-byte-level"),
        pytest.param({"type": "Sequence", "decoders": {"type": "Fuse"}}, r"decoder\.decoders", id="not-a-list"),
        pytest.param({"type": "WordPiece", "cleanup": "yes"}, r"decoder\.cleanup", id="cleanup"),
    ],
)
def test_bad_decoders_are_refused_by_path(data: dict[str, Any], message: str) -> None:
    with pytest.raises(FormatError, match=message):
        decoder_from_hf(data, ConcatDecoder())
