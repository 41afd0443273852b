"""Evaluation figures on tokenizers whose output is known by hand."""

from __future__ import annotations

from engine.decoders import ByteLevelDecoder, WordPieceDecoder
from engine.metrics import evaluate
from engine.models.baselines import ByteLevel, WordLevel
from engine.models.wordpiece import WordPiece
from engine.pretokenizers import BertPreTokenizer
from engine.tokenizer import Tokenizer


def test_byte_level_figures() -> None:
    tokenizer = Tokenizer(ByteLevel(), decoder=ByteLevelDecoder())
    report = evaluate(tokenizer, "ab é")
    assert {k: report[k] for k in ("chars", "bytes", "words", "tokens")} == {"chars": 4, "bytes": 5, "words": 2, "tokens": 5}
    assert (report["bytes_per_token"], report["chars_per_token"], report["fertility"]) == (1.0, 0.8, 2.5)
    assert (report["unk_tokens"], report["unk_rate"], report["lossless"], report["first_difference"]) == (0, 0.0, True, None)
    assert (report["vocab_used"], report["vocab_utilisation"]) == (5, round(5 / 256, 4))
    # é is two bytes; each covers the whole character
    assert report["longest_tokens"][:2] == [
        {"id": 32, "token": "Ġ", "text": " ", "chars": 1, "count": 1},
        {"id": 97, "token": "a", "text": "a", "chars": 1, "count": 1},
    ]


def test_wordpiece_unk_rate_round_trip_and_longest_tokens() -> None:
    vocab = {"[UNK]": 0, "hug": 1, "##s": 2, "the": 3, "!": 4}
    tokenizer = Tokenizer(
        WordPiece(vocab), pre_tokenizer=BertPreTokenizer(), special_tokens={"[UNK]": 0}, decoder=WordPieceDecoder()
    )
    report = evaluate(tokenizer, "the  hugs zzz!")
    assert report["tokens"] == 5  # the hug ##s [UNK] !
    assert (report["unk_tokens"], report["unk_rate"], report["fertility"]) == (1, 0.2, round(5 / 3, 4))
    assert report["lossless"] is False
    assert report["first_difference"] == {"char_offset": 4, "expected": " hugs zzz!", "got": "hugs [UNK]!", "context_before": "the "}
    assert [(t["token"], t["text"]) for t in report["longest_tokens"]] == [("hug", "hug"), ("the", "the"), ("##s", "s"), ("!", "!")]


def test_empty_text() -> None:
    tokenizer = Tokenizer(WordLevel({"[UNK]": 0}), pre_tokenizer=BertPreTokenizer())
    report = evaluate(tokenizer, "")
    assert (report["tokens"], report["bytes_per_token"], report["fertility"], report["unk_rate"], report["lossless"]) == (
        0, None, None, 0.0, True,
    )
