"""The Tokenizer API on a tiny hand-made byte-level BPE: exact ids, special tokens, offsets,
streaming, batches, decoding, the LRU cache, the fast BPE and ASCII split against their
references, and Hypothesis round trips; offsets also through a normalizer and Metaspace."""

from __future__ import annotations

import itertools
import pickle
import random
import re
import tracemalloc
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest
import regex
from hypothesis import given
from hypothesis import strategies as st

from engine import get_pretokenizer
from engine.ascii_split import ASCII_TWINS, fastest_split, splitter_for
from engine.errors import SpecialTokenError, UnknownTokenIdError
from engine.models.bpe import BPE
from engine.offsets import TokenSpan
from engine.pretoken_cache import PreTokenCache
from engine.pretokenizers import PATTERNS, RegexSplit
from engine.tokenizer import CACHE_SIZE, Tokenizer
from tests.engine.bpe_encode_reference import reference_encode
from tests.engine.tiny_bpe import EOT, tiny


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    return tiny()


def ids_of(text: str) -> list[int]:
    return [b + 2 for b in text.encode("utf-8")]


# ----------------------------------------------------------------------------- encode
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("", [], id="empty"),
        pytest.param("the", [259], id="word"),
        pytest.param(" the cat", [260, 263], id="merged-words"),
        pytest.param("the cathe", [259, 262, 259], id="no-merge-across-pretokens"),
        pytest.param("é", [0xC3 + 2, 0xA9 + 2], id="two-bytes"),
    ],
)
def test_encode_exact_ids(tok: Tokenizer, text: str, expected: list[int]) -> None:
    assert tok.encode(text) == expected
    assert tok.encode_ordinary(text) == expected


def test_encode_ordinary_treats_special_tokens_as_text(tok: Tokenizer) -> None:
    assert tok.encode_ordinary(f"a{EOT}") == ids_of(f"a{EOT}")


def test_disallowed_special_token_error_names_token_and_fix(tok: Tokenizer) -> None:
    with pytest.raises(SpecialTokenError) as error:
        tok.encode(f"the {EOT}")
    assert str(error.value) == (
        "The text contains the special token '<|endoftext|>' (at character 4), which is not allowed. "
        "Pass allowed_special={'<|endoftext|>'} (or allowed_special=\"all\") to encode it as a special "
        "token, or disallowed_special=() to encode it as plain text."
    )


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        pytest.param({"allowed_special": "all"}, [259, 0, 259], id="all"),
        pytest.param({"allowed_special": {EOT}}, [259, 0, 259], id="set"),
        pytest.param({"disallowed_special": ()}, [259] + ids_of(EOT) + [259], id="as-text"),
    ],
)
def test_allowed_special(tok: Tokenizer, kwargs: dict[str, object], expected: list[int]) -> None:
    assert tok.encode(f"the{EOT}the", **kwargs) == expected  # type: ignore[arg-type]


def test_unknown_allowed_special_is_rejected(tok: Tokenizer) -> None:
    with pytest.raises(SpecialTokenError, match="'<bos>' is not a special token of this tokenizer"):
        tok.encode("x", allowed_special={"<bos>"})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(EOT * 2, [1], id="double-wins"),
        pytest.param(EOT * 3, [1, 0], id="double-then-single"),
        pytest.param(EOT + "x" + EOT, [0, 122, 0], id="separate"),
    ],
)
def test_overlapping_special_tokens_longest_wins(tok: Tokenizer, text: str, expected: list[int]) -> None:
    assert tok.encode(text, allowed_special="all") == expected


def test_allowing_only_the_short_special_token(tok: Tokenizer) -> None:
    assert tok.encode(EOT * 2, allowed_special={EOT}, disallowed_special=()) == [0, 0]


# ----------------------------------------------------------------------------- decode
def test_decode_family(tok: Tokenizer) -> None:
    ids = [260, 0, 0xC3 + 2]
    assert tok.decode_tokens_bytes(ids) == [b" the", EOT.encode(), b"\xc3"]
    assert tok.decode_bytes(ids) == b" the" + EOT.encode() + b"\xc3"
    assert tok.decode(ids) == f" the{EOT}\ufffd"
    assert tok.decode(ids, skip_special_tokens=True) == " the\ufffd"
    with pytest.raises(UnicodeDecodeError):
        tok.decode(ids, errors="strict")


def test_skipping_special_tokens_keeps_the_other_added_tokens(tok: Tokenizer) -> None:
    # Hugging Face's non-special added tokens (Gemma's runs of spaces) are text: skipping the
    # special tokens leaves them, as Hugging Face's decode does.
    added = Tokenizer(tok.model, pre_tokenizer=tok.pre_tokenizer, special_tokens={EOT: 0},
                      added_tokens={"<br>": 1})
    ids = added.encode(f"a<br>b{EOT}", allowed_special="all")
    assert ids == [ord("a") + 2, 1, ord("b") + 2, 0]
    assert added.decode(ids) == f"a<br>b{EOT}"
    assert added.decode(ids, skip_special_tokens=True) == "a<br>b"


def test_decode_unknown_id(tok: Tokenizer) -> None:
    with pytest.raises(UnknownTokenIdError, match="Token id 9999 is not in this tokenizer's vocabulary"):
        tok.decode([9999])


# ----------------------------------------------------------------------------- offsets
def test_encode_with_offsets(tok: Tokenizer) -> None:
    spans = tok.encode_with_offsets(f"the é{EOT}", allowed_special="all")
    assert spans == [
        TokenSpan(259, 0, 3, 0, 3),
        TokenSpan(34, 3, 4, 3, 4),
        TokenSpan(0xC3 + 2, 4, 5, 4, 5),
        TokenSpan(0xA9 + 2, 5, 6, 4, 5),
        TokenSpan(0, 6, 19, 5, 18, True),
    ]


# ----------------------------------------------------------------------------- streaming, batches
@pytest.mark.parametrize("pattern", sorted(PATTERNS))
def test_encode_iterable_equals_encode(pattern: str) -> None:
    tokenizer = tiny(pattern)
    text = "the cat\n// the  cat\n{\n//x\nthe\n\n  cat é\n" * 20
    chunks = [text[i : i + 7] for i in range(0, len(text), 7)]
    assert list(tokenizer.encode_iterable(chunks)) == tokenizer.encode(text)


def test_encode_iterable_does_not_cut_before_a_slash_after_newline_o200k() -> None:
    # o200k joins "{\n//" into one pre-token, so a cut after the newline would split "\n/".
    tokenizer = tiny("o200k")
    assert list(tokenizer.encode_iterable(["a {\n", "//b\n"])) == tokenizer.encode("a {\n//b\n") == [
        99, 34, 125, 264, 49, 100, 12,
    ]


@pytest.mark.slow
def test_encode_iterable_streams_5mb_in_little_memory() -> None:
    tokenizer = tiny()
    rng = random.Random(0)
    words = ["the", "cat", "sat", "on", "a", "mat", "with", "é", "cathe", "42"]
    line = " ".join(rng.choice(words) for _ in range(200)) + "\n"
    repeats = 5_000_000 // len(line)
    sum(1 for _ in tokenizer.encode_iterable(itertools.repeat(line, 10)))  # warm the cache
    tracemalloc.start()
    try:
        count = sum(1 for _ in tokenizer.encode_iterable(itertools.repeat(line, repeats)))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == repeats * len(tokenizer.encode(line))
    assert peak < 3_000_000


def test_encode_batch_matches_encode(tok: Tokenizer) -> None:
    texts = [f"the cat {i} é" for i in range(80)]
    expected = [tok.encode(t) for t in texts]
    assert tok.encode_batch(texts[:3]) == expected[:3]
    assert tok.encode_batch(texts, num_workers=2) == expected


# ----------------------------------------------------------------------------- cache
def test_lru_cache_holds_pre_tokens() -> None:
    tokenizer = tiny()
    tokenizer.encode("the the the cat")
    info = tokenizer._cache.info()
    assert (info.hits, info.misses, info.maxsize, info.currsize) == (1, 3, CACHE_SIZE, 3)


def test_pickle_drops_the_cache_and_still_encodes(tok: Tokenizer) -> None:
    tok.encode("the cat")
    clone = pickle.loads(pickle.dumps(tok))
    assert clone._cache.info().currsize == 0
    assert clone.encode(" the cat") == [260, 263]


def test_cache_drops_the_generation_not_used_since_the_last_rotation() -> None:
    computed: list[str] = []
    cache = PreTokenCache(lambda piece: computed.append(piece) or [len(piece)], maxsize=3)
    assert cache.encode(["a", "bb", "a"]) == [1, 2, 1]
    assert cache.encode(["ccc"]) == [3]
    assert cache.encode(["dddd"]) == [4]  # 4 > 3: rotate, keeping the 3 newest as the old generation
    assert (list(cache._old), list(cache._young)) == (["bb", "ccc", "dddd"], [])
    assert cache.lookup("bb") == (2,)  # found in old: promoted, not recomputed
    assert cache.encode(["e"]) == [1]  # 4 > 3 again: "ccc" and "dddd" were not used since, so they go
    assert (list(cache._old), list(cache._young)) == (["bb", "e"], [])
    assert cache.encode(["ccc", "bb"]) == [3, 2]
    assert computed == ["a", "bb", "ccc", "dddd", "e", "ccc"]
    assert cache.info() == (3, 6, 3, 3)


def test_cache_serves_a_call_larger_than_itself() -> None:
    cache = PreTokenCache(lambda piece: [ord(piece)], maxsize=2)
    assert cache.encode(list("abcab")) == [97, 98, 99, 97, 98]
    assert list(cache._old) == ["b", "c"]


def test_cache_is_exact_under_threads(tok: Tokenizer) -> None:
    texts = [" ".join(f"w{(i * 7 + j) % 50}é" for j in range(40)) for i in range(40)]
    expected = [tok.encode(text) for text in texts]
    tokenizer = tiny()
    tokenizer._cache = PreTokenCache(tokenizer.model.tokenize, maxsize=16)  # constant eviction
    with ThreadPoolExecutor(max_workers=4) as pool:
        assert list(pool.map(tokenizer.encode, texts * 3)) == expected * 3


# ----------------------------------------------------------------------------- the merge loop vs the reference
@given(st.binary(max_size=40))
def test_the_merge_loop_equals_the_reference(data: bytes) -> None:
    model = tiny().model
    assert isinstance(model, BPE)
    assert model.encode_bytes(data) == reference_encode(model, data)


@pytest.mark.parametrize("data", [b"", b"t", b"the", b"tthe the", b"cacat", b"\n//"], ids=repr)
def test_the_merge_loop_equals_the_reference_examples(tok: Tokenizer, data: bytes) -> None:
    assert isinstance(tok.model, BPE)
    assert tok.model.encode_bytes(data) == reference_encode(tok.model, data)


ASCII_ALPHABET = "aBsl'1 \n\r\t\x0b\x1c/!"  # each character behaves differently in some pattern


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_ascii_twin_equals_pattern_on_every_short_string(name: str) -> None:
    twin, original = re.compile(ASCII_TWINS[PATTERNS[name]]), regex.compile(PATTERNS[name])
    for length in range(1, 5):
        for chars in itertools.product(ASCII_ALPHABET, repeat=length):
            text = "".join(chars)
            assert twin.findall(text) == original.findall(text), text


@pytest.mark.parametrize("name", sorted(PATTERNS))
@given(text=st.text(st.characters(max_codepoint=127), max_size=60))
def test_ascii_twin_equals_pattern_on_random_ascii(name: str, text: str) -> None:
    assert re.findall(ASCII_TWINS[PATTERNS[name]], text) == regex.findall(PATTERNS[name], text)


LINE = st.text(st.sampled_from(list("ab 'Z1/{\n\x1c\t") + ["é", "🙃", "中", "\u00a0", "\u2028"]), max_size=30)


@pytest.mark.parametrize("name", sorted(PATTERNS))
@given(lines=st.lists(LINE, min_size=1, max_size=300))
def test_fast_split_equals_regex_on_mixed_text(name: str, lines: list[str]) -> None:
    text = "x\n".join(lines) * 4  # long enough (> 2048 characters, often) to take the cutting path
    assert splitter_for(PATTERNS[name])(text) == regex.findall(PATTERNS[name], text)  # type: ignore[misc]


ASCII_WORD = st.text(st.sampled_from(list("ab 'Z1/{.\n\t\r")), max_size=12)
RARE = st.sampled_from(["é", "🙃", "中", "\u00a0", "\u2028", "\u3000", "\x85"])


@pytest.mark.parametrize("name", sorted(PATTERNS))
@given(parts=st.lists(st.tuples(ASCII_WORD, RARE, ASCII_WORD), min_size=1, max_size=8))
def test_fast_split_equals_regex_with_sparse_non_ascii(name: str, parts: list[tuple[str, str, str]]) -> None:
    # Mostly ASCII, so the text is cut (at spaces and newlines) rather than given to regex whole.
    filler = "the cat's {1/2}\n  sat. " * 30
    text = filler + filler.join(left + rare + right for left, rare, right in parts) + filler
    assert splitter_for(PATTERNS[name])(text) == regex.findall(PATTERNS[name], text)  # type: ignore[misc]


def test_fast_split_only_for_named_patterns() -> None:
    assert splitter_for(r"\S+") is None
    assert splitter_for(None) is None


@pytest.mark.parametrize("spec", ["gpt2", "gpt4", "whitespace", "metaspace", r"\w+"])
def test_fastest_split_is_the_twin_or_the_pre_tokenizer_itself(spec: str) -> None:
    pre = get_pretokenizer(spec)
    split = fastest_split(pre)
    if spec in PATTERNS:  # the fast split, behind the check for characters newer than tiktoken's tables
        assert split.args[0] is splitter_for(PATTERNS[spec])  # type: ignore[attr-defined]
    else:
        assert split == pre.pieces
    text = "The cat's 12 naïve  words,\n中文 too."
    assert split(text) == pre.pieces(text)


# ----------------------------------------------------------------------------- round trips
@pytest.mark.parametrize("name", sorted(PATTERNS))
@given(text=st.text(max_size=80))
def test_decode_encode_round_trip(name: str, text: str) -> None:
    tokenizer = tiny(name)
    assert tokenizer.decode(tokenizer.encode_ordinary(text)) == text
    assert tokenizer.decode(tokenizer.encode(text, disallowed_special=())) == text


@given(parts=st.lists(st.sampled_from(["the", " cat", EOT, EOT * 2, "é", "\n"]), max_size=12))
def test_round_trip_with_special_tokens(tok: Tokenizer, parts: list[str]) -> None:
    text = "".join(parts)
    assert tok.decode(tok.encode(text, allowed_special="all")) == text


@pytest.mark.parametrize("pretokenizer", ["gpt2", "gpt4", "o200k", "whitespace", r"\d+|[a-z]+"])
@given(text=st.text(alphabet=st.sampled_from(list("ab Z9é\n\t\r'/.🙃 ")), max_size=40))
def test_offsets_from_the_fast_split_equal_the_regex_spans(pretokenizer: str, text: str) -> None:
    tokenizer = tiny(pretokenizer)
    assert tokenizer._split_with_offsets(text, aligned=False) == tokenizer.pre_tokenizer.split(text)


class _PerPieceSplit(RegexSplit):
    """The same split under another type, which turns off the tiled shortcut of offsets."""


@pytest.mark.parametrize("pretokenizer", ["gpt2", "whitespace", r"\d+|[a-z]+"])
@given(parts=st.lists(st.sampled_from(list("ab Z9é\n\t'/.🙃 \u0301") + [EOT]), max_size=40))
def test_tiled_offsets_equal_the_per_piece_offsets(pretokenizer: str, parts: list[str]) -> None:
    text = "".join(parts)
    tiled = tiny(pretokenizer)
    per_piece = tiny(pretokenizer)
    split = per_piece.pre_tokenizer
    per_piece.pre_tokenizer = _PerPieceSplit.__new__(_PerPieceSplit)
    per_piece.pre_tokenizer.__dict__.update(split.__dict__)
    for allowed in ("all", ()):
        kwargs = {"allowed_special": allowed, "disallowed_special": ()}
        assert tiled.encode_with_offsets(text, **kwargs) == per_piece.encode_with_offsets(text, **kwargs)


def _unigram_tokenizer() -> Tokenizer:
    from engine.models.unigram import Unigram
    from engine.trainers.unigram import UnigramOptions, build_tokenizer

    pieces = ["▁the", "▁cat", "▁", "the", "at", "c", "t", "h", "e", "a", "é", "s"]
    vocab = [("<unk>", 0.0)] + [(p, -1.0 - i / 10) for i, p in enumerate(pieces)]
    return build_tokenizer(Unigram(vocab, unk_id=0), UnigramOptions(vocab_size=100, byte_fallback=False, special_tokens=("<unk>",)))


def _wordpiece_tokenizer() -> Tokenizer:
    from engine.models.wordpiece import WordPiece
    from engine.normalizers import get_normalizer
    from engine.pretokenizers import BertPreTokenizer

    vocab = ["[UNK]", "the", "cat", "ca", "##t", "##s", "é", "##é", "c", "##a", "s", "!"]
    return Tokenizer(WordPiece({t: i for i, t in enumerate(vocab)}, unk_token="[UNK]"),
                     normalizer=get_normalizer("lowercase"), pre_tokenizer=BertPreTokenizer(), special_tokens={"[UNK]": 0})


@pytest.mark.parametrize("make", [_unigram_tokenizer, _wordpiece_tokenizer], ids=["unigram-metaspace", "wordpiece-lowercase"])
@given(parts=st.lists(st.sampled_from(["the", " cat", "  ", "Cats", "é", "É", "!", "\n", "zz", "İ"]), max_size=12))
def test_byte_spans_are_the_utf8_offsets_of_the_character_spans(make: Callable[[], Tokenizer], parts: list[str]) -> None:
    # No byte-level tokens here, so every token covers whole characters of the input.
    text = "".join(parts)
    tokenizer = make()
    spans = tokenizer.encode_with_offsets(text, add_special_tokens=False)
    assert [s.id for s in spans] == tokenizer.encode_ordinary(text)
    for span in spans:
        assert span.byte_start == len(text[: span.char_start].encode()), span
        assert span.byte_end == len(text[: span.char_end].encode()), span
