"""The vocabulary diff: exact pieces on hand-made tokenizers, the spelling rule across kinds of
model, the line diff, and set arithmetic on two real vocabularies (Llama 2 and Gemma 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.decoders import MetaspaceDecoder, WordPieceDecoder
from engine.models.unigram import Unigram
from engine.models.wordpiece import WordPiece
from engine.presets import byte_level_bpe
from engine.pretokenizers import Metaspace, get_pretokenizer
from engine.tokenizer import Tokenizer
from engine.vocab_diff import BYTE_GROUP, SPECIAL_GROUP, diff, line_diff
from engine.vocab_diff_report import to_dict, to_text
from tests.engine.cli_run import run
from tests.open_models import open_model_file

EOT = "<|endoftext|>"
# ids: 0 is special, 1..256 are the bytes (byte b has id b + 1), then the merges.
MERGES = [(b"t", b"h"), (b"th", b"e"), (b" ", b"the"), (b"c", b"a"), (b" ", b"ca"), (b" ca", b"t")]
ADDED = [(b"\xe4", b"\xbd"), (b"\xe4\xbd", b"\xa0"), (b" ", b"\xe4\xbd\xa0")]  # half of 你, 你, " 你"


def byte_bpe(merges: list[tuple[bytes, bytes]]) -> Tokenizer:
    vocab = {b + 1: bytes([b]) for b in range(256)}
    for index, (left, right) in enumerate(merges):
        vocab[257 + index] = left + right
    return byte_level_bpe(vocab, merges, special_tokens={EOT: 0})


def unigram(pieces: list[tuple[str, float]], *, byte_fallback: bool = False) -> Tokenizer:
    model = Unigram([("<unk>", 0.0), *pieces], unk_id=0, byte_fallback=byte_fallback)
    return Tokenizer(model, pre_tokenizer=Metaspace(), decoder=MetaspaceDecoder())


def only(groups: dict[str, list]) -> list[tuple[int, str]]:
    return [(p.id, p.piece) for pieces in groups.values() for p in pieces]


def test_an_extension_lists_exactly_its_added_pieces() -> None:
    base, extended = byte_bpe(MERGES), byte_bpe(MERGES + ADDED)
    result = diff(base, extended)
    assert only(result.only_a) == []
    assert {name: [(p.id, p.piece, p.rank, p.type) for p in pieces] for name, pieces in result.only_b.items()} == {
        "Han": [(264, "ä½ł", 7, "normal"), (265, "Ġä½ł", 8, "normal")],
        "Partial characters": [(263, "ä½", 6, "normal")],
    }
    assert list(result.only_b) == ["Han", "Partial characters"]  # token_scripts.order
    assert (result.pieces_a, result.pieces_b, result.shared, result.shared_same_id) == (263, 266, 263, 263)
    assert result.shared_by_script == {"Latin": 6 + 52, "Numbers and symbols": 76, "Partial characters": 128,
                                       SPECIAL_GROUP: 1}  # the merges and ASCII letters; <|endoftext|>


def test_pieces_are_compared_by_what_they_spell() -> None:
    """GPT-2's Ġthe and sentencepiece's ▁the both spell " the", ▁ alone spells GPT-2's Ġ; a byte-level
    token that spells a literal ▁ is not a space."""
    gpt = byte_bpe([*MERGES, (b"\xe2", b"\x96"), (b"\xe2\x96", b"\x81")])  # the last spells "▁" itself
    spm = unigram([("▁the", -1.0), ("▁", -2.0), ("t", -3.0), ("h", -3.0), ("e", -3.0), ("c", -4.0)])
    result = diff(gpt, spm)
    assert only(result.only_b) == [(0, "<unk>")]
    assert result.shared == 6
    assert ("âĸģ" in {p.piece for p in result.only_a["Numbers and symbols"]}
            and "Ġthe" not in {p.piece for pieces in result.only_a.values() for p in pieces})
    assert result.only_b[SPECIAL_GROUP][0].type == "unknown"


def test_byte_fallback_pieces_are_their_own_kind() -> None:
    """<0x41> is a fallback for byte 0x41, not the piece "A" (which spells the same byte)."""
    pieces = [(f"<0x{b:02X}>", 0.0) for b in range(256)]
    with_bytes = unigram([*pieces, ("A", -1.0), ("▁A", -2.0)], byte_fallback=True)
    plain = unigram([("A", -1.0), ("▁A", -2.0), ("B", -3.0)])
    result = diff(with_bytes, plain)
    assert [p.piece for p in result.only_a[BYTE_GROUP]] == [piece for piece, _ in pieces]
    assert {p.type for p in result.only_a[BYTE_GROUP]} == {"byte"}
    assert only(result.only_b) == [(3, "B")]
    assert result.shared == 3  # <unk>, A, ▁A


def test_wordpiece_continuing_pieces_keep_their_prefix() -> None:
    vocab = {"[UNK]": 0, "ing": 1, "##ing": 2, "play": 3}
    bert = Tokenizer(WordPiece(vocab), pre_tokenizer=get_pretokenizer("whitespace"), decoder=WordPieceDecoder())
    other = Tokenizer(WordPiece({"[UNK]": 0, "ing": 1, "play": 2}), pre_tokenizer=get_pretokenizer("whitespace"),
                      decoder=WordPieceDecoder())
    result = diff(bert, other)
    assert only(result.only_a) == [(2, "##ing")]
    assert (result.shared, result.shared_same_id) == (3, 2)  # play moved from 3 to 2


def test_unigram_pieces_carry_their_scores_and_scripts() -> None:
    a = unigram([("▁the", -1.0), ("你好", -2.5), ("▁мир", -3.25), ("a1", -4.0)])
    b = unigram([("▁the", -1.0)])
    result = diff(a, b)
    assert {name: [(p.id, p.piece, p.score, p.type) for p in pieces] for name, pieces in result.only_a.items()} == {
        "Latin": [(4, "a1", -4.0, "normal")], "Cyrillic": [(3, "▁мир", -3.25, "normal")],
        "Han": [(2, "你好", -2.5, "normal")],
    }
    assert list(result.only_a) == ["Latin", "Cyrillic", "Han"]  # token_scripts.order: the named scripts' order


def test_line_diff_shows_only_the_lines_that_change() -> None:
    base, extended = byte_bpe(MERGES), byte_bpe(MERGES + ADDED)
    text = "the cat\n\n你 the\nthe 你\r\n你你"
    lines = line_diff(base, extended, text)
    assert (lines.compared, lines.differing, lines.not_compared) == (4, 3, 0)
    assert [(c.number, c.text, c.tokens_a, c.tokens_b) for c in lines.changes] == [
        (3, "你 the", ["ä", "½", "ł", "Ġthe"], ["ä½ł", "Ġthe"]),
        (4, "the 你", ["the", "Ġ", "ä", "½", "ł"], ["the", "Ġä½ł"]),
        (5, "你你", ["ä", "½", "ł"] * 2, ["ä½ł"] * 2)]
    cut = line_diff(base, extended, text, shown=1, max_lines=3)
    assert (cut.compared, cut.differing, cut.not_compared, len(cut.changes)) == (2, 1, 2, 1)


def test_line_diff_is_bounded() -> None:
    base, extended = byte_bpe(MERGES), byte_bpe(MERGES + ADDED)
    lines = line_diff(base, extended, "你" * 500 + "\n" + "你\n" * 80)
    assert (lines.differing, len(lines.changes)) == (81, 50)
    first = lines.changes[0]
    assert (len(first.text), len(first.tokens_a), first.count_a, first.count_b) == (300, 100, 1500, 500)


def test_unrelated_tokenizers_differ_on_lines_they_spell_differently() -> None:
    gpt = byte_bpe(MERGES)
    spm = unigram([("▁the", -1.0), ("▁", -2.0), ("t", -3.0), ("h", -3.0), ("e", -3.0), ("c", -4.0)])
    lines = line_diff(gpt, spm, " the\nthe")  # sentencepiece adds a ▁ before "the"; GPT-2 does not
    assert [(c.number, c.tokens_a, c.tokens_b) for c in lines.changes] == [(2, ["the"], ["▁the"])]


@settings(max_examples=40, deadline=None)
@given(st.sets(st.sampled_from(["▁a", "▁b", "ab", "ba", "▁ab", "b", "a", "▁", "ä", "▁ä"]), min_size=1),
       st.sets(st.sampled_from(["▁a", "▁b", "ab", "ba", "▁ab", "b", "a", "▁", "ä", "▁ä"]), min_size=1))
def test_between_two_metaspace_vocabularies_the_diff_is_set_arithmetic(left: set[str], right: set[str]) -> None:
    a, b = unigram([(p, -1.0) for p in sorted(left)]), unigram([(p, -1.0) for p in sorted(right)])
    result = diff(a, b)
    assert {p.piece for pieces in result.only_a.values() for p in pieces} == left - right
    assert {p.piece for pieces in result.only_b.values() for p in pieces} == right - left
    assert result.shared == len(left & right) + 1  # and <unk>


def test_report_text_and_json() -> None:
    base, extended = byte_bpe(MERGES), byte_bpe(MERGES + ADDED)
    result, lines = diff(base, extended), line_diff(base, extended, "你")
    text = to_text(result, lines, names=("a.json", "b.json"), limit=1)
    assert text.splitlines()[2:] == [
        "shared: 263 (263 at the same id)", "only in A: 0", "only in B: 3", "", "Only in B:", "  Han (2):",
        "         264  ä½ł  normal  rank 7", "    … and 1 more", "  Partial characters (1):",
        "         263  ä½  normal  rank 6", "", "Lines encoded differently: 1 of 1", "  line 1: 你",
        "    A (3): ä ½ ł", "    B (1): ä½ł"]
    data = json.loads(json.dumps(to_dict(result, lines, names=("a.json", "b.json"), limit=1)))
    assert data["only_b"]["by_script"]["Han"] == {
        "count": 2, "pieces": [{"id": 264, "piece": "ä½ł", "type": "normal", "rank": 7}], "more": 1}
    assert data["lines"]["shown"] == [{"line": 1, "text": "你", "a": ["ä", "½", "ł"], "b": ["ä½ł"],
                                       "count_a": 3, "count_b": 1}]
    assert to_dict(result, None, names=("a", "b"), limit=0)["only_b"]["by_script"]["Han"]["more"] == 0


def _vocabulary(tokenizer: Tokenizer) -> set[str]:
    return {t for t in map(tokenizer.id_to_token, range(tokenizer.vocab_size)) if t is not None}


def test_llama2_against_gemma3_is_set_arithmetic_on_their_vocabularies() -> None:
    llama = Tokenizer.from_json(open_model_file("llama2").read_bytes())
    gemma = Tokenizer.from_json(open_model_file("gemma3").read_bytes())
    result = diff(llama, gemma)
    left, right = _vocabulary(llama), _vocabulary(gemma)
    assert {p.piece for pieces in result.only_a.values() for p in pieces} == left - right
    assert {p.piece for pieces in result.only_b.values() for p in pieces} == right - left
    assert (result.pieces_a, result.pieces_b, result.shared) == (len(left), len(right), len(left & right))
    assert BYTE_GROUP not in result.only_a and BYTE_GROUP not in result.only_b  # both have the 256 byte pieces
    assert sum(p.type == "user-defined" for p in result.only_b["Latin"]) > 6000  # Gemma's added tokens


def test_the_diff_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, extended = tmp_path / "base.json", tmp_path / "extended.json"
    byte_bpe(MERGES).save(base)
    byte_bpe(MERGES + ADDED).save(extended)
    (tmp_path / "lines.txt").write_text("the cat\n你 the\n", encoding="utf-8")
    code, out, err = run(capsys, "diff", "-a", str(base), "-b", str(extended))
    assert (code, err) == (0, "")
    assert out.splitlines()[2:5] == ["shared: 263 (263 at the same id)", "only in A: 0", "only in B: 3"]
    code, out, err = run(capsys, "diff", "-a", str(base), "-b", str(extended), "--json", "--limit", "0",
                         "--text", str(tmp_path / "lines.txt"))
    data = json.loads(out)
    assert [p["id"] for group in data["only_b"]["by_script"].values() for p in group["pieces"]] == [264, 265, 263]
    assert (data["lines"]["compared"], data["lines"]["differing"], data["lines"]["shown"][0]["line"]) == (2, 1, 2)


def test_the_diff_command_fails_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = tmp_path / "base.json"
    byte_bpe(MERGES).save(base)
    code, out, err = run(capsys, "diff", "-a", str(base), "-b", str(tmp_path / "missing.json"))
    assert (code, out) == (1, "") and err.startswith("tokenforge diff: error: ") and "missing.json" in err
    assert err.count("\n") == 1
    code, _, err = run(capsys, "diff", "-a", str(base), "-b", str(base), "--limit", "-1")
    assert code == 2 and "expected a whole number of pieces (0 for all), not '-1'" in err
