"""Unit tests of the display-span grouping: whole graphemes, gaps, specials, whitespace, counts."""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.webapp.playground_samples import EOT, byte_bpe, gpt2, unigram, wordpiece
from webapp.playground import spans
from webapp.playground.spans import PALETTE_SIZE, counts, group_spans, grouped, grouped_plain, show_whitespace


def texts(spans):
    return [s.text for s in spans]


def ids(spans):
    return [[p.id for p in s.parts] for s in spans]


@pytest.mark.parametrize(
    "text, expected",
    [
        pytest.param("👨‍👩‍👧", ["👨‍👩‍👧"], id="emoji-zwj-family"),
        pytest.param("🇫🇷🇩🇪", ["🇫🇷", "🇩🇪"], id="flags"),
        pytest.param("日本語", ["日", "本", "語"], id="cjk"),
        pytest.param("e\u0301a", ["e\u0301", "a"], id="combining-acute"),
        pytest.param("é", ["é"], id="merged-two-byte"),
        pytest.param("\n\n\n", ["\n", "\n", "\n"], id="newline-run"),
        pytest.param("\r\n", ["\r\n"], id="crlf-is-one-grapheme"),
    ],
)
def test_byte_tokens_are_grouped_into_whole_graphemes(text: str, expected: list[str]) -> None:
    tok = byte_bpe()
    spans = group_spans(text, tok.encode_with_offsets(text), tok)
    assert texts(spans) == expected
    assert "".join(texts(spans)) == text
    assert all("\ufffd" not in s.text for s in spans)


def test_zwj_span_lists_every_byte_token_in_hex() -> None:
    tok = byte_bpe()
    spans = group_spans("👨‍👩‍👧", tok.encode_with_offsets("👨‍👩‍👧"), tok)
    (family,) = spans
    assert len(family.parts) == len("👨‍👩‍👧".encode())  # 18 bytes, no merges apply
    assert family.parts[0].hex == "f0" and family.parts[3].hex == "a8"
    assert family.parts[0].title_line == "240  ð  [f0]"
    assert family.indices == " ".join(str(i) for i in range(18))


def test_merged_character_keeps_its_own_span() -> None:
    tok = byte_bpe()
    spans = group_spans("thé", tok.encode_with_offsets("thé"), tok)
    assert texts(spans) == ["th", "é"]
    assert ids(spans) == [[256], [260]]
    assert spans[1].parts[0].hex == "c3 a9"


def test_gpt2_shares_bytes_across_a_space_and_an_emoji() -> None:
    tok = gpt2()
    text = "hi 👋 there"
    spans = group_spans(text, tok.encode_with_offsets(text), tok)
    assert texts(spans) == ["hi", " 👋", " there"]
    assert ids(spans) == [[5303], [50169, 233], [612]]


def test_special_tokens_stand_alone_and_are_marked() -> None:
    tok = byte_bpe()
    text = f"the{EOT}é"
    spans = group_spans(text, tok.encode_with_offsets(text, allowed_special="all"), tok)
    assert texts(spans) == ["the", EOT, "é"]
    assert [s.special for s in spans] == [False, True, False]
    assert spans[1].parts[0].id == 261


def test_added_specials_show_their_name_and_gaps_keep_the_text() -> None:
    tok = wordpiece()
    text = "Hello  unable!"
    spans = group_spans(text, tok.encode_with_offsets(text), tok)
    assert texts(spans) == ["[CLS]", "Hello", "  ", "un", "able", "!", "[SEP]"]
    assert [s.is_gap for s in spans] == [False, False, True, False, False, False, False]
    assert spans[0].special and spans[-1].special
    assert spans[4].parts[0].token == "##able"


def test_unknown_pieces_covering_one_word_become_one_span() -> None:
    tok = unigram()
    text = "the xyz"
    spans = group_spans(text, tok.encode_with_offsets(text), tok)
    assert "".join(texts(spans)) == text
    assert texts(spans)[0] == "the"
    assert any(p.id == 0 for s in spans for p in s.parts)


def test_limit_renders_the_first_tokens_only() -> None:
    tok = byte_bpe()
    text = "abcdef" * 10
    spans = group_spans(text, tok.encode_with_offsets(text), tok, limit=5)
    assert texts(spans) == ["a", "b", "c", "d", "e"]


def test_colours_cycle_through_the_palette_or_follow_ids() -> None:
    tok = byte_bpe()
    text = "abcdefghijklmnopq"
    spans = group_spans(text, tok.encode_with_offsets(text), tok)
    assert [s.colour for s in spans][:14] == [*range(PALETTE_SIZE), 0, 1]
    by_id = group_spans(text, tok.encode_with_offsets(text), tok, colour_by_id=True)
    assert [s.colour for s in by_id][:3] == [ord("a") % PALETTE_SIZE, ord("b") % PALETTE_SIZE, ord("c") % PALETTE_SIZE]


def test_whitespace_markers() -> None:
    assert show_whitespace("a b\tc\nd\r\ne") == "a·b→c↵\nd↵\ne"


def test_counts() -> None:
    c = counts("héllo", [1, 2, 0, 0], unk_id=0)
    assert (c.tokens, c.chars, c.bytes, c.unk) == (4, 5, 6, 2)
    assert c.chars_per_token == 1.25 and c.bytes_per_token == 1.5
    assert counts("", [], None).as_dict() == {"tokens": 0, "chars": 0, "bytes": 0, "unk": 0,
                                              "chars_per_token": 0.0, "bytes_per_token": 0.0}


@given(st.text(max_size=40))
def test_spans_tile_the_text_and_never_show_replacement_characters(text: str) -> None:
    tok = byte_bpe()
    spans = group_spans(text, tok.encode_with_offsets(text), tok)
    assert "".join(s.text for s in spans) == text
    assert [p.index for s in spans for p in s.parts] == list(range(len(tok.encode(text))))
    for s in spans:
        assert "\ufffd" not in s.text or "\ufffd" in text


def test_token_descriptions_are_memoised_per_tokenizer() -> None:
    merged, other = byte_bpe("merged"), byte_bpe("other", merges=[(b"a", b"b")])
    first = group_spans("th", merged.encode_with_offsets("th"), merged)
    second = group_spans("ab", other.encode_with_offsets("ab"), other)
    assert first[0].parts[0].id == second[0].parts[0].id == 256
    assert first[0].parts[0].title_line == "256  th  [74 68]" and second[0].parts[0].title_line == "256  ab  [61 62]"


@st.composite
def plain_tokens(draw: st.DrawFn) -> tuple[list[tuple[int, int]], set[int], int]:
    """Ordinary tokens as an encoder gives them (starts never go back, each covers some text),
    with gaps and overlaps, positions inside graphemes, and the text's length."""
    tokens, start = [], draw(st.integers(0, 3))
    for _ in range(draw(st.integers(1, 30))):
        end = start + draw(st.integers(1, 4))
        tokens.append((start, end))
        start = max(0, draw(st.integers(start, end + 2)))
    length = max(end for _, end in tokens) + draw(st.integers(0, 3))
    inside = set(draw(st.lists(st.integers(1, length), max_size=8)))
    return tokens, inside, length


@given(plain_tokens(), st.booleans())
def test_the_vectorised_grouping_equals_the_step_by_step_one(case: tuple[list[tuple[int, int]], set[int], int],
                                                            trailing: bool) -> None:
    tokens, inside, length = case
    stop = length if trailing else min(length, tokens[-1][1] + 2)
    expected = grouped([s for s, _ in tokens], [e for _, e in tokens], [False] * len(tokens), inside, stop,
                       trailing=trailing, text_end=length)
    with mock.patch.object(spans, "NUMPY_FROM", 0):  # the numpy passes, whatever the number of tokens
        assert grouped_plain([s for s, _ in tokens], [e for _, e in tokens], inside, stop,
                             trailing=trailing, text_end=length) == expected
    assert grouped_plain([s for s, _ in tokens], [e for _, e in tokens], inside, stop,
                         trailing=trailing, text_end=length) == expected


@st.composite
def tiling_tokens(draw: st.DrawFn) -> tuple[list[tuple[int, int]], set[int], int]:
    """Tokens that tile the text (each starts where the one before ends), maybe after a gap, with
    positions inside graphemes that sometimes fall on the tokens' ends and sometimes not."""
    start = draw(st.integers(0, 3))
    tokens = []
    for _ in range(draw(st.integers(1, 30))):
        tokens.append((start, start + draw(st.integers(1, 4))))
        start = tokens[-1][1]
    length = start + draw(st.integers(0, 3))
    inside = set(draw(st.lists(st.integers(1, length), max_size=4)))
    return tokens, inside, length


@given(tiling_tokens(), st.booleans())
def test_the_grouping_of_tiling_tokens_equals_the_step_by_step_one(case: tuple[list[tuple[int, int]], set[int], int],
                                                                   trailing: bool) -> None:
    tokens, inside, length = case
    stop = length if trailing else min(length, tokens[-1][1] + 2)
    starts, ends = [s for s, _ in tokens], [e for _, e in tokens]
    expected = grouped(starts, ends, [False] * len(tokens), inside, stop, trailing=trailing, text_end=length)
    assert grouped_plain(starts, ends, inside, stop, trailing=trailing, text_end=length) == expected
