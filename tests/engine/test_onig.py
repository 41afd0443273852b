"""Onig's regexes (Hugging Face's) against the regex module's (ours), through the real ``tokenizers``:
a tokenizer.json's pattern is read as Onig reads it, and the patterns we write are read by Onig
as we mean them (engine/onig.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.decoders import decoder_from_hf
from engine.errors import ConfigError, FormatError
from engine.formats.js_tiktoken import parse_rank_table
from engine.formats.tiktoken import build_tiktoken
from engine.normalizers import normalizer_from_hf
from engine.onig import from_onig, to_onig
from engine.presets import TIKTOKEN_ENCODINGS
from engine.pretokenizers import GPT2_PATTERN, GPT4_PATTERN, O200K_PATTERN, RegexSplit
from engine.pretokenizers_hf import pretokenizer_from_hf
from engine.trainers import train
from tests.preset_tables import presets_dir, tiktoken_encoding

tokenizers = pytest.importorskip("tokenizers")

TEXTS = ["aaaaa ababab abc pL PN", "In 1999, 2001 and 10000000 people\n  x = 1234;\r\n\n  ", "ab  \ncd \nxy\n",
         "0.9999999: 1e-7 ", "日本語 123456 ｱｲｳ\n"]
# Read differently by the two engines before (nested intervals, anchors), and a few that never were.
ONIG_PATTERNS = [r"\p{N}{1,3}+", r"a{2}+", r"a{1,2}+", r"a{1,}+", r"a{2}?b", r"a{2}*b", r"a{1,2}{2}", r"(?:ab){1,2}+",
                 r"[ab]{1,2}+c", r"a{1,2}++", r"a{1,2}?", r"\s+$", r"^\w", r"\w+$|\s+", r"\w+\Z", r"\w+\z",
                 r"[{]{1,2}", r"\p{N}{1,3}", GPT2_PATTERN, GPT4_PATTERN, O200K_PATTERN,
                 r"a*", r"b?|\s",  # empty matches cut the text too
                 r"\pL+|\PN", r"[\pL]"]  # Onig's \p without braces is a letter p
OUR_PATTERNS = [GPT2_PATTERN, GPT4_PATTERN, O200K_PATTERN, r"\p{N}{1,3}+", r"a{2}?", r"\s+$", r"^\w|\w",
                r"(?:ab){1,2}+", r"[0-9]{3}+|\s+\Z", r"a{1,2}?b"]


def _hf_pieces(pattern: str, text: str) -> list[str]:
    split = tokenizers.pre_tokenizers.Split(tokenizers.Regex(pattern), "isolated")
    return [piece for piece, _ in split.pre_tokenize_str(text)]


@pytest.mark.parametrize("pattern", ONIG_PATTERNS)
def test_a_tokenizer_json_pattern_splits_as_hugging_face_splits(pattern: str) -> None:
    for behavior, invert in (("Isolated", False), ("Removed", True), ("MergedWithNext", False)):
        ours = pretokenizer_from_hf({"type": "Split", "pattern": {"Regex": pattern}, "behavior": behavior,
                                     "invert": invert})
        split = tokenizers.pre_tokenizers.Split(tokenizers.Regex(pattern), behavior.lower()
                                                if behavior != "MergedWithNext" else "merged_with_next", invert=invert)
        for text in TEXTS:
            assert ours.pieces(text) == [piece for piece, _ in split.pre_tokenize_str(text)], (behavior, text)


@pytest.mark.parametrize("pattern", OUR_PATTERNS)
def test_the_patterns_we_write_split_in_hugging_face_as_here(pattern: str) -> None:
    ours = RegexSplit(pattern)
    written = ours.to_hf()["pattern"]["Regex"]
    for text in TEXTS:
        assert _hf_pieces(written, text) == ours.pieces(text), text
    again = pretokenizer_from_hf(ours.to_hf())
    assert isinstance(again, RegexSplit) and [again.pieces(t) for t in TEXTS] == [ours.pieces(t) for t in TEXTS]


def test_the_translations() -> None:
    assert from_onig(r"\p{N}{1,3}+") == r"(?:\p{N}{1,3})+"
    assert from_onig(r"x{2}?|y{1,2}?") == r"(?:x{2})?|y{1,2}?"
    assert from_onig(r"[a{]{2}+\}") == r"(?:[a{]{2})+\}"
    assert from_onig(r"^a\Z") == r"(?m)^(?!\z)a(?=\n?\z)"
    # POSIX brackets Onig reads with all decimal digits, and with symbols as punctuation.
    assert from_onig(r"[[:digit:]_][^[:alnum:]][[:^digit:]x]") == r"[\p{Nd}_][^\p{Alnum}][\P{Nd}x]"
    assert from_onig(r"[[:punct:]]|[[:^punct:]]|[^[:^punct:]]") == r"[\p{P}\p{S}]|[^\p{P}\p{S}]|[\p{P}\p{S}]"
    assert to_onig(GPT4_PATTERN).count(r"(?>\p{N}{1,3})") == 1 and r"\s++\Z" in to_onig(GPT4_PATTERN)
    assert to_onig(r"^a{2}?$") == r"\Aa{2}\Z"
    # Our named patterns, written and read back, are themselves again (with their fast split).
    for name, pattern in (("gpt2", GPT2_PATTERN), ("gpt4", GPT4_PATTERN), ("o200k", O200K_PATTERN)):
        assert RegexSplit(to_onig(pattern), onig=True).name == name
    # The GPT-4 pattern as tiktoken writes it means something else in a tokenizer.json.
    assert RegexSplit(GPT4_PATTERN, onig=True).name == "custom"


@pytest.mark.parametrize(("pattern", "message"), [(r"\h+", "hex digit"), (r"(?m)a.b", "dot-all"),
                                                  (r"(?s:.)", "option group"), (r"[a-z&&[^aeiou]]+", "set operation"),
                                                  (r"[a[bc]]", "nested set"),
                                                  (r"[a[:^punct:]]", r"\[:\^punct:\] beside other members")])
def test_patterns_onig_reads_otherwise_are_refused(pattern: str, message: str) -> None:
    with pytest.raises(FormatError, match=message):
        pretokenizer_from_hf({"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False})
    with pytest.raises(ConfigError, match="option group"):
        RegexSplit(r"(?s).+").to_hf()


def test_a_gpt4_pattern_tokenizer_json_gives_our_ids_in_hugging_face(tmp_path) -> None:
    # Numbers of four digits or more were one pre-token in Hugging Face (\p{N}{1,3}+ read as a
    # repeat), three at most here and in tiktoken.
    corpus = tmp_path / "numbers.txt"
    corpus.write_text("\n".join(f"In {1900 + i % 130} we counted {i * 7919} of {i * 104729 % 99991} items."
                                for i in range(3000)), encoding="utf-8")
    ours = train("bpe", [corpus], {"vocab_size": 400, "pretokenizer": "gpt4", "num_workers": 1}).tokenizer
    hf = tokenizers.Tokenizer.from_str(ours.to_json())
    for text in TEXTS + ["In 1999 we counted 123456789 of 10000 items."]:
        assert hf.encode(text, add_special_tokens=False).ids == ours.encode_ordinary(text), text


def test_the_gpt4_presets_tokenizer_json_gives_tiktokens_ids_in_hugging_face() -> None:
    folder = presets_dir()
    table = parse_rank_table((folder / "cl100k_base.js").read_text(encoding="utf-8"))
    encoding = TIKTOKEN_ENCODINGS["cl100k_base"]
    ours = build_tiktoken(table.entries, pattern=encoding.pattern, special_tokens=encoding.special_tokens)
    hf = tokenizers.Tokenizer.from_str(ours.to_json())
    theirs = tiktoken_encoding(folder, "cl100k_base")
    for text in TEXTS + ["x = 1234;\n", "0.9999999 and 123456789"]:
        assert hf.encode(text, add_special_tokens=False).ids == theirs.encode_ordinary(text), text


_SNAKE = {"Isolated": "isolated", "Removed": "removed", "MergedWithPrevious": "merged_with_previous",
          "MergedWithNext": "merged_with_next", "Contiguous": "contiguous"}
_ATOMS = ["a", "b", r"\d", "[ab]", "(?:ab)", "(a|b)", ".", r"\s", "[^a]"]
_QUANTIFIERS = ["", "*", "+", "?", "{2}", "{1,2}", "{2,}", "{,2}", "*+", "++", "?+", "*?", "+?"]
_TAILS = ["", "+", "?", "*", "{2}"]  # after an interval: what Onig nests


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(st.tuples(st.sampled_from(_ATOMS), st.sampled_from(_QUANTIFIERS), st.sampled_from(_TAILS)),
                      min_size=1, max_size=4),
       anchors=st.tuples(st.sampled_from(["", "^", r"\A", "(?:^|x)"]),
                         st.sampled_from(["", "$", r"\z", r"\Z", "(?:$|y)"])),
       behavior=st.sampled_from(["Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous"]),
       invert=st.booleans(), text=st.text(alphabet="ab1 \n", max_size=24))
def test_random_patterns_split_as_hugging_face_splits(parts: list[tuple[str, str, str]], anchors: tuple[str, str],
                                                      behavior: str, invert: bool, text: str) -> None:
    body = "".join(atom + quantifier + (tail if quantifier.startswith("{") else "") for atom, quantifier, tail in parts)
    pattern = anchors[0] + body + anchors[1]
    try:
        split = tokenizers.pre_tokenizers.Split(tokenizers.Regex(pattern), _SNAKE[behavior], invert=invert)
    except Exception:  # noqa: BLE001 - a pattern Onig refuses says nothing here
        return
    try:
        ours = pretokenizer_from_hf({"type": "Split", "pattern": {"Regex": pattern}, "behavior": behavior,
                                     "invert": invert})
    except FormatError:  # a pattern the regex module cannot compile once translated: refused, not misread
        return
    theirs = split.pre_tokenize_str(text)
    assert ours.pieces(text) == [piece for piece, _ in theirs], pattern
    assert [(piece.text, piece.start, piece.end) for piece in ours.split(text)] == [
        (piece, start, end) for piece, (start, end) in theirs], pattern


@settings(max_examples=200, deadline=None)
@given(pattern=st.sampled_from(["a*", "b?", "x", r"\s+", "^a", "a$", "(?:ab)*", r"\p{N}{1,3}+", "a{2}?", r"\Z"]),
       tokens=st.lists(st.text(alphabet="ab1 x\n", max_size=6), min_size=1, max_size=4))
def test_the_replace_decoder_replaces_as_hugging_face_does(pattern: str, tokens: list[str]) -> None:
    # Empty matches as Onig finds them, and none in an empty token (Python's sub replaces both).
    ours = decoder_from_hf({"type": "Replace", "pattern": {"Regex": pattern}, "content": "-"}, None)
    theirs = tokenizers.decoders.Replace(tokenizers.Regex(pattern), "-")
    assert ours.decode([token.encode() for token in tokens]).decode() == theirs.decode(tokens)


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(st.tuples(st.sampled_from(_ATOMS), st.sampled_from(_QUANTIFIERS), st.sampled_from(_TAILS)),
                      min_size=1, max_size=3),
       anchors=st.tuples(st.sampled_from(["", "^", r"\A", "(?:^|x)"]), st.sampled_from(["", "$", r"\z", r"\Z", "(?:$|y)"])),
       text=st.text(alphabet="ab1 \n", max_size=16))
def test_random_patterns_replace_as_hugging_face_replaces(parts: list[tuple[str, str, str]], anchors: tuple[str, str],
                                                          text: str) -> None:
    # Onig's ^ sees no line start after a final newline; its $ sees every line's end.
    body = "".join(atom + quantifier + (tail if quantifier.startswith("{") else "") for atom, quantifier, tail in parts)
    pattern = anchors[0] + body + anchors[1]
    try:
        theirs = tokenizers.normalizers.Replace(tokenizers.Regex(pattern), "-")
    except Exception:  # noqa: BLE001 - a pattern Onig refuses says nothing here
        return
    ours = normalizer_from_hf({"type": "Replace", "pattern": {"Regex": pattern}, "content": "-"})
    assert ours.normalize(text) == theirs.normalize_str(text), pattern


@pytest.mark.parametrize(("pattern", "behavior", "invert", "text"), [
    (r"^b*[^a]*?$", "Isolated", False, "  1\n\nb"),  # after an empty match Onig moves on one character
    (r"^(?:ab)*+$", "Isolated", False, "bbbb\nb1 \n\nab 11b bba"),  # an empty match cuts the gap
    (r"^\d?$", "Removed", True, "\n aa"),  # and is no piece
    (r"^.{,2}$", "Removed", True, " 1 \n\na "),
])
def test_empty_matches_of_the_fast_split_as_hugging_face(pattern: str, behavior: str, invert: bool, text: str) -> None:
    # Isolated, and Removed with invert, take the fast RegexSplit, whose probe finds no empty match here.
    ours = pretokenizer_from_hf({"type": "Split", "pattern": {"Regex": pattern}, "behavior": behavior, "invert": invert})
    assert isinstance(ours, RegexSplit)
    split = tokenizers.pre_tokenizers.Split(tokenizers.Regex(pattern), _SNAKE[behavior], invert=invert)
    assert [(p.text, p.start, p.end) for p in ours.split(text)] == [
        (piece, start, end) for piece, (start, end) in split.pre_tokenize_str(text)]
    assert ours.pieces(text) == [piece for piece, _ in split.pre_tokenize_str(text)]
