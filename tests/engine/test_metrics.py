"""Evaluation figures on tokenizers whose output is known by hand."""

from __future__ import annotations

from engine.decoders import ByteLevelDecoder, MetaspaceDecoder, WordPieceDecoder
from engine.metrics import evaluate
from engine.models.baselines import ByteLevel, WordLevel
from engine.models.unigram import Unigram
from engine.models.wordpiece import WordPiece
from engine.pretokenizers import BertPreTokenizer, Metaspace
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


def test_unigram_unknown_character_leaves_its_neighbours_their_own_text() -> None:
    # "\n" is in no piece, so the word "▁.\ncd" encodes as ▁. <unk> cd. Every token of it used to
    # be given the whole word (the longest tokens showed "▁." as " .\ncd").
    pieces = [("<unk>", 0.0), ("▁ab", -1.0), ("▁.", -1.0), ("cd", -2.0)]
    pieces += [(c, -3.0) for c in "▁ab.cd"]
    tokenizer = Tokenizer(Unigram(pieces, unk_id=0), pre_tokenizer=Metaspace(), decoder=MetaspaceDecoder())
    text = "ab .\ncd"
    spans = tokenizer.encode_with_offsets(text)
    assert [(tokenizer.id_to_token(s.id), text[s.char_start : s.char_end], s.byte_start, s.byte_end) for s in spans] == [
        ("▁ab", "ab", 0, 2), ("▁.", " .", 2, 4), ("<unk>", "\n", 4, 5), ("cd", "cd", 5, 7),
    ]
    report = evaluate(tokenizer, text)
    assert [(t["token"], t["text"]) for t in report["longest_tokens"]] == [("▁ab", "ab"), ("▁.", " ."), ("cd", "cd")]
    assert report["unk_tokens"] == 1


def test_a_run_of_unknown_characters_is_one_unknown_token_with_its_own_span() -> None:
    pieces = [("<unk>", 0.0), ("▁x", -1.0), ("y", -1.0), ("▁", -2.0)]
    tokenizer = Tokenizer(Unigram(pieces, unk_id=0), pre_tokenizer=Metaspace(), decoder=MetaspaceDecoder())
    text = "xéé€y"  # é and € are unknown and fused into one <unk> of 7 bytes ("<unk>" itself has 5)
    spans = tokenizer.encode_with_offsets(text)
    assert [(tokenizer.id_to_token(s.id), text[s.char_start : s.char_end], s.byte_start, s.byte_end) for s in spans] == [
        ("▁x", "x", 0, 1), ("<unk>", "éé€", 1, 8), ("y", "y", 8, 9),
    ]
