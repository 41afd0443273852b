"""``Tokenizer.encode_span_columns``: the spans of ``encode_with_offsets`` as columns.

The byte-level shortcut (``Tokenizer._tiled_columns``) must give exactly the columns of the
general piece-by-piece path, which is checked on a twin whose pre-tokenizer has another type (that
turns the shortcut off); tokenizers that never take the shortcut (byte fallback, a normalizer, a
post-processor's added tokens) must give the columns of their spans.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine import SpanColumns, Tokenizer, TokenSpan
from engine.pretokenizers import RegexSplit
from tests.engine.tiny_bpe import EOT, tiny

# ASCII, accents, CJK, emoji (a ZWJ sequence and a flag), a combining mark, CR LF, tabs, specials.
VARIED = [
    "Hello, world! The cat's 42 tokens.",
    "café naïve résumé",
    "日本語のテキストと漢字",
    "👩‍🚀 and 🇫🇷 flags",
    "e\u0301 combining",
    "line\r\nnext\tline\n\n  indented",
    f"é{EOT} the cat",  # ASCII after a special that follows non-ASCII: character and byte offsets differ
    f"{EOT}{EOT * 2} the{EOT}",
    "",
]


class _PerPieceSplit(RegexSplit):
    """The same split under another type, which turns off the tiled shortcut of offsets."""


def per_piece_twin() -> Tokenizer:
    twin = tiny()
    split = twin.pre_tokenizer
    twin.pre_tokenizer = _PerPieceSplit.__new__(_PerPieceSplit)
    twin.pre_tokenizer.__dict__.update(split.__dict__)
    return twin


def assert_same(tokenizer: Tokenizer, other: Tokenizer, text: str, **kwargs: object) -> None:
    columns = tokenizer.encode_span_columns(text, **kwargs)  # type: ignore[arg-type]
    assert isinstance(columns, SpanColumns)
    assert len({len(column) for column in columns}) == 1
    assert columns == SpanColumns.of(other.encode_with_offsets(text, **kwargs))  # type: ignore[arg-type]
    assert columns.rows() == tokenizer.encode_with_offsets(text, **kwargs)  # type: ignore[arg-type]
    assert columns.ids == tokenizer.encode(text, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("text", VARIED, ids=range(len(VARIED)))
@pytest.mark.parametrize("allowed", ["all", ()], ids=["specials-allowed", "specials-as-text"])
def test_the_tiled_columns_equal_the_per_piece_spans(text: str, allowed: object) -> None:
    assert_same(tiny(), per_piece_twin(), text, allowed_special=allowed, disallowed_special=())


@given(parts=st.lists(st.sampled_from(list("ab Z9é\n\t\r'/.🙃 \u0301日本") + [EOT, "👩‍🚀"]), max_size=40))
def test_the_tiled_columns_equal_the_per_piece_spans_on_random_text(parts: list[str]) -> None:
    text = "".join(parts)
    for allowed in ("all", ()):
        assert_same(tiny(), per_piece_twin(), text, allowed_special=allowed, disallowed_special=())


def test_a_lone_surrogate_is_replaced_as_in_the_spans() -> None:
    tokenizer = tiny()
    assert tokenizer.encode_span_columns("a\ud800b").rows() == tokenizer.encode_with_offsets("a\ud800b")


def _byte_fallback_unigram() -> Tokenizer:
    from engine.models.unigram import Unigram
    from engine.trainers.unigram import UnigramOptions, build_tokenizer

    pieces = ["▁the", "▁cat", "▁", "the", "at", "c", "t", "h", "e", "a"]
    vocab = [("<unk>", 0.0)] + [(p, -1.0 - i / 10) for i, p in enumerate(pieces)]
    vocab += [(f"<0x{b:02X}>", 0.0) for b in range(256)]
    return build_tokenizer(Unigram(vocab, unk_id=0, byte_fallback=True),
                           UnigramOptions(vocab_size=400, byte_fallback=True, special_tokens=("<unk>",)))


def _bert_like() -> Tokenizer:
    from engine.models.wordpiece import WordPiece
    from engine.normalizers import get_normalizer
    from engine.post_processors import TemplateProcessing
    from engine.pretokenizers import BertPreTokenizer

    vocab = ["[UNK]", "[CLS]", "[SEP]", "the", "cat", "ca", "##t", "##s", "é", "##é", "c", "##a", "s", "!"]
    specials = {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2}
    return Tokenizer(WordPiece({t: i for i, t in enumerate(vocab)}, unk_token="[UNK]"),
                     normalizer=get_normalizer("lowercase"), pre_tokenizer=BertPreTokenizer(), special_tokens=specials,
                     post_processor=TemplateProcessing("[CLS] $A [SEP]", specials))


@pytest.mark.parametrize("make", [_byte_fallback_unigram, _bert_like], ids=["unigram-byte-fallback", "wordpiece"])
@pytest.mark.parametrize("text", ["the cat 日本 🙃", "Cats! é É", "", "zz [CLS] the"], ids=range(4))
def test_columns_of_the_general_path(make: object, text: str) -> None:
    tokenizer = make()  # type: ignore[operator]
    for kwargs in ({"disallowed_special": ()}, {"add_special_tokens": False, "disallowed_special": ()},
                   {"allowed_special": "all", "disallowed_special": ()}):
        columns = tokenizer.encode_span_columns(text, **kwargs)
        assert columns == SpanColumns.of(tokenizer.encode_with_offsets(text, **kwargs))
        assert columns.ids == tokenizer.encode(text, **kwargs)


def test_columns_round_trip_and_grow() -> None:
    spans = [TokenSpan(5, 0, 1, 0, 1), TokenSpan(0, 1, 14, 1, 14, True)]
    columns = SpanColumns.of(spans)
    assert columns == SpanColumns([5, 0], [0, 1], [1, 14], [0, 1], [1, 14], [False, True])
    assert columns.rows() == spans and all(type(row) is TokenSpan for row in columns.rows())
    columns.append(TokenSpan(7, 14, 15, 14, 15))
    columns.extend(SpanColumns.of(spans))
    assert columns.rows() == [*spans, TokenSpan(7, 14, 15, 14, 15), *spans]
    assert SpanColumns.of([]) == SpanColumns.empty() and SpanColumns.empty().rows() == []
