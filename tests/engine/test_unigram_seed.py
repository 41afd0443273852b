"""The Unigram seed against a slow, obviously-correct reference: same pieces, scores and order,
on random word tables (counts above one, ties in count × length, both script options); and the
segment regex against ``segments``."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.trainers.packed import CountedWords, PackedStrings
from engine.trainers.unigram import seed
from engine.trainers.unigram import segments as segments_module
from engine.trainers.unigram.scripts import INHERITED, char_class
from engine.trainers.unigram.seed import seed_pieces
from engine.trainers.unigram.suffixes import top_substrings
from tests.engine.unigram_reference import segments

SPACE = "\u2581"
# Latin, Common (punctuation, digits), Greek, Han, kana, a combining mark, ▁, and "☃", which is
# never a required character.
ALPHABET = "abcab.,(1)9βγ年中のー" + SPACE + "\u0301☃"
OPTIONS = [(True, True), (True, False), (False, True)]
OPTION_IDS = ["scripts+numbers", "scripts", "no-scripts"]


def reference_seed(
    word_counts: Mapping[str, int], required: Mapping[str, int], *, seed_size: int, max_piece_length: int,
    split_by_unicode_script: bool = True, split_by_number: bool = True, split_by_whitespace: bool = True,
) -> list[tuple[str, float]]:
    """Count every substring of every segment, keep the right-branching valid ones, sort them all."""
    classes = {c: char_class(c, split_by_unicode_script=split_by_unicode_script, split_by_number=split_by_number) for c in required}
    found: Counter[str] = Counter()
    for word, count in word_counts.items():
        for seg in segments(word, classes, SPACE, split_by_whitespace):
            found[seg] += count
    ranked = brute_top_substrings(found, max_piece_length, None, no_last=None if split_by_whitespace else SPACE)
    pieces = [(c, float(n)) for c, n in sorted(required.items(), key=lambda kv: (-kv[1], kv[0]))]
    return pieces + [(s, float(-score)) for s, score in ranked[: max(0, seed_size - len(required))]]


def random_table(seed: int) -> tuple[Counter[str], dict[str, int]]:
    rng = random.Random(seed)
    letters = rng.choice([ALPHABET, "ab" + SPACE, "abc.1" + SPACE + "\u0301"])
    words: Counter[str] = Counter()
    for _ in range(rng.randint(1, 60)):
        word = "".join(rng.choice(letters) for _ in range(rng.randint(1, 12)))
        words[(SPACE if rng.random() < 0.7 else "") + word] += rng.choice([1, 1, 1, 2, 2, 3, 4, 7, 40])
    required = Counter("".join(w * c for w, c in words.items()))
    del required["☃"]
    if rng.random() < 0.2:  # ▁ outside the required set: it ends segments like any such character
        del required[SPACE]
    return words, dict(required)


@pytest.mark.parametrize("split_by_whitespace", [True, False], ids=["split-by-space", "pieces-cross-spaces"])
@pytest.mark.parametrize(("split_by_unicode_script", "split_by_number"), OPTIONS, ids=OPTION_IDS)
@pytest.mark.parametrize("seed", range(25), ids=lambda s: f"table{s}")
def test_seed_matches_reference(seed: int, split_by_unicode_script: bool, split_by_number: bool,
                                split_by_whitespace: bool) -> None:
    words, required = random_table(seed)
    rng = random.Random(seed)
    seed_size = rng.choice([len(required), len(required) + 5, len(required) + 40, 10_000])
    max_piece_length = rng.choice([1, 2, 3, 4, 6, 16])
    kwargs = dict(seed_size=seed_size, max_piece_length=max_piece_length, split_by_whitespace=split_by_whitespace,
                  split_by_unicode_script=split_by_unicode_script, split_by_number=split_by_number)
    assert seed_pieces(words, required, **kwargs) == reference_seed(words, required, **kwargs)


def test_ties_go_to_the_smaller_string() -> None:
    # "ab" (count 3, length 2) and "▁ab" (count 2, length 3) tie at 6, and "a" < "▁"; "▁a" is
    # always followed by "b", so it is not right-branching.
    words = Counter({"▁ab": 2, "ba": 1, "bab": 1})
    required = {"a": 5, "b": 5, SPACE: 2}
    seed = seed_pieces(words, required, seed_size=100, max_piece_length=16)
    assert seed == reference_seed(words, required, seed_size=100, max_piece_length=16)
    assert seed[3:] == [("ab", 6.0), ("▁ab", 6.0), ("ba", 4.0)]


@pytest.mark.parametrize(("split_by_unicode_script", "split_by_number"), OPTIONS, ids=OPTION_IDS)
@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=ALPHABET + "\n", max_size=40))
def test_segment_regex_matches_segments(text: str, split_by_unicode_script: bool, split_by_number: bool) -> None:
    classes = {c: char_class(c, split_by_unicode_script=split_by_unicode_script, split_by_number=split_by_number) for c in ALPHABET[:-1]}
    pattern = segments_module.segment_pattern(classes, SPACE)
    assert [s for s in pattern.findall(text) if s] == list(segments(text, classes, SPACE))
    inside = {**classes, SPACE: INHERITED}  # how seed_pieces classes ▁ without split_by_whitespace
    pattern = segments_module.segment_pattern(inside, SPACE)
    assert segments_module.sharing_spaces(pattern, text, SPACE) == list(segments(text, classes, SPACE, split_by_whitespace=False))


@pytest.mark.parametrize(("split_by_unicode_script", "split_by_number"), OPTIONS, ids=OPTION_IDS)
@pytest.mark.parametrize("split_by_whitespace", [True, False], ids=["space-first", "space-inside"])
@settings(max_examples=200, deadline=None)
@given(word_counts=st.dictionaries(st.text(alphabet=ALPHABET, max_size=8), st.integers(1, 5), max_size=12))
def test_segment_counts_sum_each_words_segments(word_counts: dict[str, int], split_by_unicode_script: bool,
                                                split_by_number: bool, split_by_whitespace: bool) -> None:
    """The numpy shortcut for words of one script and the regex for the rest give, together, every
    word's reference segments of two characters or more, weighted by the word's count."""
    classes = {c: char_class(c, split_by_unicode_script=split_by_unicode_script, split_by_number=split_by_number)
               for c in ALPHABET[:-1]}
    expected: Counter[str] = Counter()
    for word, count in word_counts.items():
        for seg in segments(word, classes, SPACE, split_by_whitespace):
            if len(seg) >= 2:
                expected[seg] += count
    if not split_by_whitespace:
        classes[SPACE] = INHERITED
    assert segments_module.segment_counts(CountedWords.of(word_counts), classes, SPACE) == expected
    # A prefix read before every word (sentencepiece-style BPE's words come without their ▁)
    # counts as if each word had it: words that collide once prefixed add up.
    marked: Counter[str] = Counter()
    for word, count in word_counts.items():
        marked[SPACE + word] += count
    assert segments_module.segment_counts(CountedWords.of(word_counts, prefix=SPACE), classes, SPACE) == \
        segments_module.segment_counts(CountedWords.of(marked), classes, SPACE)


def reference_required_chars(word_counts: Mapping[str, int], coverage: float) -> dict[str, int]:
    """Count every character but NUL (never a piece in sentencepiece), then take them by descending
    count (ties: code point) past ``coverage``."""
    chars: Counter[str] = Counter()
    for word, count in word_counts.items():
        for char in word:
            if char != "\x00":
                chars[char] += count
    threshold = sum(chars.values()) * coverage
    required: dict[str, int] = {}
    covered = 0
    for char, n in sorted(chars.items(), key=lambda kv: (-kv[1], kv[0])):
        if covered > threshold:
            break
        covered += n
        required[char] = n
    return required


@settings(max_examples=300, deadline=None)
@given(word_counts=st.dictionaries(st.text(max_size=6) | st.text(ALPHABET, max_size=6),
                                   st.integers(0, 10**12), max_size=20),
       coverage=st.sampled_from([0.0, 0.5, 0.9995, 1.0]))
def test_required_chars_match_reference(word_counts: dict[str, int], coverage: float) -> None:
    assert list(seed.required_chars(CountedWords.of(word_counts), coverage).items()) == \
        list(reference_required_chars(word_counts, coverage).items())
    marked = {SPACE + word: count for word, count in word_counts.items()}
    assert list(seed.required_chars(CountedWords.of(word_counts, prefix=SPACE), coverage).items()) == \
        list(reference_required_chars(marked, coverage).items())


def brute_top_substrings(segments: Mapping[str, int], max_piece_length: int, want: int | None, *,
                         no_last: str | None = None) -> list[tuple[str, int]]:
    """Every substring of every segment counted one by one; the right-branching ones, none ending
    with ``no_last``, ranked with their negated scores (the best ``want``, or all)."""
    counts: Counter[str] = Counter()
    for seg, count in segments.items():
        for i in range(len(seg)):
            for j in range(i + 2, min(len(seg), i + max_piece_length + 1) + 1):
                counts[seg[i:j]] += count
    most_extended: Counter[str] = Counter()
    for s, n in counts.items():
        most_extended[s[:-1]] = max(most_extended[s[:-1]], n)
    kept = sorted((-n * len(s), s) for s, n in counts.items()
                  if len(s) <= max_piece_length and n >= 2 and n > most_extended[s] and (no_last is None or s[-1] != no_last))
    return [(s, score) for score, s in kept[:want]]


@pytest.mark.parametrize("alphabet_size", [3, 300, 70_000], ids=["2-bit ids", "9-bit ids", "17-bit ids"])
def test_sorted_suffixes_count_like_one_by_one(alphabet_size: int) -> None:
    """The suffix sort packs as many character ids into a 64-bit key as fit (32, 7 or 3 here), and
    past 65,535 characters the ids take 32 bits: each packing ranks exactly as a brute count."""
    rng = random.Random(alphabet_size)
    common = [chr(0x4E00 + i) for i in range(6)]  # frequent characters, so that long substrings repeat
    rare = [chr(0x4E00 + 6 + i) for i in range(alphabet_size)]
    segments: Counter[str] = Counter()
    for _ in range(300):
        seg = "".join(rng.choice(common) if rng.random() < 0.8 else rng.choice(rare) for _ in range(rng.randint(2, 14)))
        segments[seg] += rng.choice([1, 1, 2, 3, 9])
    for i in range(0, len(rare) - 1, 2):  # every rare character occurs, so the ids need all their bits
        segments[rare[i] + rare[i + 1] + common[i % 6]] += 1 + i % 3
    for length in (2, 5, 16):
        for want in (10, 10_000):
            pieces, scores = top_substrings(PackedStrings.of(list(segments)), list(segments.values()), length, want)
            assert list(zip(pieces, scores)) == brute_top_substrings(segments, length, want)
