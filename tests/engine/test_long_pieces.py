"""One long pre-token costs seconds at most, whatever the model and its vocabulary.

A custom pattern such as ``[\\s\\S]+`` (or no pre-tokenizer) hands the model a whole
200,000-character text as one piece, and an imported vocabulary may hold tokens of up to
``MAX_TOKEN_LENGTH`` (1,024) characters. BPE then took 90 s (a quadratic merge loop), Unigram
37 s (1,024 lookups per position) and WordPiece with a raised ``max_input_chars_per_word`` 20 s.
Now BPE merges long pieces with a heap, Unigram looks up only the lengths its pieces have, and
what still grows with the token length is charged to the encode's time budget
(``engine.limits.work_meter``) and refused with ``EncodeTimeout``. CPU-time bounds here are
generous on purpose: they tell seconds from minutes, nothing finer.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import EncodeTimeout
from engine.limits import MAX_TOKEN_LENGTH, time_budget, work_meter
from engine.models.baselines import MaxMatch
from engine.models.unigram import Unigram
from engine.models.wordpiece import WordPiece
from engine.presets import byte_level_bpe
from engine.pretokenizers import get_pretokenizer
from engine.tokenizer import Tokenizer

N = 200_000  # the playground's and the API's longest text (TOKENFORGE_MAX_ENCODE_CHARS)
CPU_BOUND = 10.0  # seconds: minutes before, well under a second now
WHOLE_TEXT = r"[\s\S]+"  # a custom pattern that makes the whole text one piece
LONG = "q" * (MAX_TOKEN_LENGTH - 1) + "z"  # a token at the import limit


@contextmanager
def cpu_seconds_below(bound: float) -> Iterator[None]:
    started = time.process_time()
    yield
    spent = time.process_time() - started
    assert spent < bound, f"{spent:.1f} s of CPU"


def letters(n: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice("abcdefghijklmnop") for _ in range(n))


# ----------------------------------------------------------------------------- BPE
def test_bpe_merges_a_200000_byte_piece_in_seconds() -> None:
    merges = [(b"a", b"a"), (b"aa", b"aa"), (b"b", b"c")]
    vocab = {b: bytes([b]) for b in range(256)} | {256 + i: left + right for i, (left, right) in enumerate(merges)}
    tokenizer = byte_level_bpe(vocab, merges, pretokenizer=WHOLE_TEXT)
    with cpu_seconds_below(CPU_BOUND), time_budget(60):
        ids = tokenizer.encode("a" * N)
        mixed = tokenizer.encode("bca" * (N // 3))
    assert ids == [257] * (N // 4)  # "aaaa" 50,000 times
    assert mixed == [258, ord("a")] * (N // 3)


# ----------------------------------------------------------------------------- WordPiece
def wordpiece(max_input_chars_per_word: int) -> Tokenizer:
    vocab = ["[UNK]", LONG, "##" + LONG[:-1] + "y"] + list("abcdefghijklmnop") + ["##" + c for c in "abcdefghijklmnop"]
    model = WordPiece({t: i for i, t in enumerate(vocab)}, max_input_chars_per_word=max_input_chars_per_word)
    return Tokenizer(model, pre_tokenizer=get_pretokenizer("whitespace"), special_tokens={"[UNK]": 0})


def test_wordpiece_honours_max_input_chars_per_word() -> None:
    tokenizer = wordpiece(100)
    with cpu_seconds_below(CPU_BOUND):
        assert tokenizer.encode(letters(N)) == [0]  # longer than 100 characters: one [UNK]
    assert tokenizer.encode("abc") == [3, 3 + 16 + 1, 3 + 16 + 2]  # a ##b ##c


def test_wordpiece_long_word_with_a_raised_limit_is_refused_within_the_budget() -> None:
    tokenizer = wordpiece(10**9)  # an imported file may raise it; then every position tries 1,024 lengths
    with cpu_seconds_below(CPU_BOUND), time_budget(0.5), pytest.raises(EncodeTimeout) as error:
        tokenizer.encode(letters(N))
    assert str(error.value) == (
        "WordPiece on a 200,000-character word took longer than 0.5 s on this text; split the text into shorter "
        "words with a pre-tokenizer, or lower max_input_chars_per_word (now 1,000,000,000; Hugging Face's default "
        "is 100).")


def test_wordpiece_long_word_encodes_exactly_when_it_fits_the_budget() -> None:
    tokenizer = wordpiece(10**9)
    with time_budget(60):
        assert tokenizer.encode("a" + LONG[:-1] + "y" + "b" * 300) == [3, 2] + [3 + 16 + 1] * 300


# ----------------------------------------------------------------------------- Unigram
def unigram(pieces: list[tuple[str, float]]) -> Tokenizer:
    return Tokenizer(Unigram([("<unk>", 0.0), *pieces], unk_id=0), pre_tokenizer=get_pretokenizer(WHOLE_TEXT))


def test_unigram_200000_character_piece_with_one_1024_character_piece() -> None:
    # The lattice looks up only the lengths the vocabulary has (1, 2 and 1,024), not all 1,024.
    alphabet = "abcdefghijklmnop"
    pairs = [a + b for a in alphabet for b in alphabet]
    tokenizer = unigram([(c, -5.0) for c in alphabet] + [(p, -6.0) for p in pairs] + [(LONG, -1.0), ("q", -5.0), ("z", -5.0)])
    text = letters(N // 2) + LONG + letters(N // 2, seed=1)[: N // 2 - len(LONG)]
    with cpu_seconds_below(CPU_BOUND):
        ids = tokenizer.encode(text)
    assert len(text) == N
    assert ids.count(1 + len(alphabet) + len(pairs)) == 1  # the long piece, matched once
    assert len(ids) == N // 4 + 1 + (N // 2 - len(LONG)) // 2  # pairs (-6) beat two letters (-10)
    assert tokenizer.decode(ids) == text


def test_unigram_with_pieces_of_every_length_is_refused_within_the_budget() -> None:
    # Every length from 1 to 1,024 matches at every position: 200 million lattice edges.
    tokenizer = unigram([("q" * k, -float(k)) for k in range(1, MAX_TOKEN_LENGTH + 1)])
    with cpu_seconds_below(CPU_BOUND), time_budget(0.5), pytest.raises(EncodeTimeout) as error:
        tokenizer.encode("q" * N)
    assert str(error.value) == (
        "The Unigram lattice of a 200,000-character piece took longer than 0.5 s on this text; split the text into "
        "shorter pieces with a pre-tokenizer (metaspace or whitespace), or encode less at once; this model's pieces "
        "are up to 1,024 characters long.")


@st.composite
def pieces_and_text(draw: st.DrawFn) -> tuple[list[tuple[str, float]], str]:
    """Pieces over "abc" whose lengths leave gaps (1, 3, 7 but no 2), scores drawn at random."""
    lengths = draw(st.sets(st.sampled_from([1, 2, 3, 5, 7, 12]), min_size=1))
    words = st.text(st.sampled_from("abc"), min_size=1, max_size=12).filter(lambda w: len(w) in lengths)
    chosen = draw(st.lists(words, min_size=1, max_size=25, unique=True))
    scores = draw(st.lists(st.floats(-20, -0.5), min_size=len(chosen), max_size=len(chosen), unique=True))
    text = draw(st.text(st.sampled_from("abcd"), min_size=1, max_size=200))  # "d" is in no piece
    return list(zip(chosen, scores)), text


@settings(max_examples=80, deadline=None)
@given(case=pieces_and_text())
def test_unigram_equals_hugging_face_when_lengths_have_gaps(case: tuple[list[tuple[str, float]], str]) -> None:
    """The same ids, or (where two segmentations score exactly the same, "aa a" and "a aa" of "aaa")
    another tiling of the same text with the same score: HF breaks such ties otherwise (docs/formats.md)."""
    tokenizers = pytest.importorskip("tokenizers")
    pieces, text = case
    model = Unigram([("<unk>", 0.0), *pieces], unk_id=0)
    hf = tokenizers.Tokenizer(tokenizers.models.Unigram([("<unk>", 0.0), *pieces], unk_id=0, byte_fallback=False))
    ours, theirs = model.tokenize(text), hf.encode(text, add_special_tokens=False).ids
    if ours != theirs:
        scores = dict(enumerate([0.0, *(score for _, score in pieces)]))
        assert ours.count(0) == theirs.count(0)  # the same unknown stretches
        assert sum(scores[i] for i in ours) == pytest.approx(sum(scores[i] for i in theirs), abs=1e-9)


# ----------------------------------------------------------------------------- the meter
def test_work_meter_charges_the_budget_and_refuses_once_it_is_spent() -> None:
    assert work_meter("X", "y.") is None  # no budget: nothing to charge
    with time_budget(1e-6):
        meter = work_meter("Scanning the text", "scan less.")
        assert meter is not None
        sum(range(100_000))  # any real work outlasts a microsecond
        with pytest.raises(EncodeTimeout, match=r"^Scanning the text took longer than 1e-06 s on this text; scan less\.$"):
            meter.tick()


@pytest.mark.parametrize("make", [
    lambda: wordpiece(10**9).model.tokenize("ab" * 200),
    lambda: Unigram([("<unk>", 0.0), ("a", -1.0)]).tokenize("a" * 200),
    lambda: MaxMatch({"[UNK]": 0, "a": 1}).tokenize("a" * 200),
], ids=["wordpiece", "unigram", "maxmatch"])
def test_long_pieces_are_metered(make: Callable[[], list[int]]) -> None:
    with time_budget(1e-9), pytest.raises(EncodeTimeout):
        make()


def test_short_pieces_are_not_metered() -> None:
    with time_budget(1e-9):  # nothing charged, so even a spent budget lets short pieces through
        assert wordpiece(10**9).model.tokenize("abab") == [3, 20, 19, 20]
        assert Unigram([("<unk>", 0.0), ("a", -1.0)]).tokenize("a" * 16) == [1] * 16


# ----------------------------------------------------------------------------- MaxMatch
def max_match_reference(vocab: dict[str, int], piece: str, direction: str) -> list[int]:
    """Try every length from the longest token down at each position (the old loop)."""
    longest, ids = max(map(len, vocab)), []
    if direction == "forward":
        start = 0
        while start < len(piece):
            end = next((e for e in range(min(len(piece), start + longest), start, -1)
                        if piece[start:e] in vocab), start + 1)
            ids.append(vocab.get(piece[start:end], 0))
            start = end
        return ids
    end = len(piece)
    while end > 0:
        start = next((s for s in range(max(0, end - longest), end) if piece[s:end] in vocab), end - 1)
        ids.append(vocab.get(piece[start:end], 0))
        end = start
    return ids[::-1]


@pytest.mark.parametrize("direction", ["forward", "backward"])
def test_max_match_200000_character_piece_with_one_1024_character_token(direction: str) -> None:
    # Only the lengths the vocabulary has are tried (1, 2 and 1,024), not every length to 1,024.
    alphabet = "abcdefghijklmnop"
    vocab = {"[UNK]": 0} | {t: i for i, t in enumerate([*alphabet, *(a + b for a in alphabet for b in alphabet), LONG], 1)}
    model = MaxMatch(vocab, direction=direction)
    text = letters(N // 2) + LONG + letters(N // 2, seed=1)[: N // 2 - len(LONG)]
    with cpu_seconds_below(CPU_BOUND), time_budget(60):
        ids = model.tokenize(text)
    assert ids.count(vocab[LONG]) == 1 and len(ids) == 1 + (N - len(LONG)) // 2
    assert ids[:2000] == max_match_reference(vocab, text[:4000], direction)[:2000]


@pytest.mark.parametrize("direction", ["forward", "backward"])
def test_max_match_agrees_with_the_exhaustive_loop(direction: str) -> None:
    vocab = {"[UNK]": 0, "a": 1, "ab": 2, "abc": 3, "abcab": 4, "ca": 5, "d": 6}
    model = MaxMatch(vocab, direction=direction)
    for seed in range(50):
        text = "".join(random.Random(seed).choice("abcde") for _ in range(300))
        assert model.tokenize(text) == max_match_reference(vocab, text, direction)


def test_max_match_with_tokens_of_every_length_is_refused_within_the_budget() -> None:
    vocab = {"[UNK]": 0} | {"q" * k + "z": k for k in range(1, MAX_TOKEN_LENGTH)}  # never matches "q" * N
    with cpu_seconds_below(CPU_BOUND), time_budget(0.5), pytest.raises(EncodeTimeout) as error:
        MaxMatch(vocab).tokenize("q" * N)
    assert str(error.value).startswith("Maximum matching on a 200,000-character piece took longer than 0.5 s")
