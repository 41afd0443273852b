"""Corpus statistics: the streaming accumulators against a whole-text reference.

The reference computes each figure the obvious way on the whole text at once (``regex``'s
``\\S+`` and the GPT-2 pattern, ``str.split`` on the separator); the accumulators must agree
however the text is chunked, and their fast word counting must agree with the ``regex`` one.
"""

from __future__ import annotations

from typing import Any

import pytest
import regex
from hypothesis import given
from hypothesis import strategies as st

from engine.pretokenizers import GPT2_PATTERN
from webapp.corpora import stats as corpus_stats
from webapp.corpora.stats import DOCUMENT_SEPARATOR, StatsAccumulator, TextFacts, is_analysed

# Spaces of every kind, including the four that str.isspace() has and regex's \s has not.
ALPHABET = st.sampled_from(list("ab é漢1'.") + ["\n", "\t", "\x1c", "\x1f", "\xa0", "\u2028",
                                                 DOCUMENT_SEPARATOR, "\r\n"])
TEXTS = st.lists(ALPHABET, max_size=60).map("".join)


def reference(text: str) -> dict[str, Any]:
    parts = text.split(DOCUMENT_SEPARATOR)
    runs = [len(m) for part in parts for m in regex.findall(r"\S+", part)]
    return {
        "chars": len(text),
        "lines": text.count("\n") + (1 if text and not text.endswith("\n") else 0),
        "documents": sum(1 for part in parts if part.strip()),
        "distinct_pretokens": len({p for part in parts for p in regex.findall(GPT2_PATTERN, part)}),
        "longest_word": max(runs, default=0),
        "preview": text[: corpus_stats.PREVIEW_CHARS],
    }


def feed(text: str, cuts: list[int]) -> dict[str, Any]:
    accumulator = StatsAccumulator()
    start = 0
    for cut in sorted(c % (len(text) + 1) for c in cuts) + [len(text)]:
        accumulator.feed(text[start:cut])
        start = max(start, cut)
    return accumulator.finish()


@given(TEXTS, st.lists(st.integers(min_value=0), max_size=5))
def test_statistics_match_the_whole_text_reference(text: str, cuts: list[int]) -> None:
    stats = feed(text, cuts)
    assert {key: stats[key] for key in reference(text)} == reference(text)


@given(st.lists(TEXTS, min_size=1, max_size=8))
def test_fast_word_runs_equal_the_regex_runs_across_parts(parts: list[str]) -> None:
    fast, slow = StatsAccumulator(), StatsAccumulator()
    for part in parts:
        if not any(c in part for c in corpus_stats._ISSPACE_ONLY):
            fast._count_words(part)
            slow._count_words_reference(part)
            assert (fast.longest_word, fast._run) == (slow.longest_word, slow._run)


def test_segments_cut_inside_long_words_still_join_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(corpus_stats, "_SEGMENT_CHARS", 64)
    text = "short words " + "x" * 1000 + " and " + "y" * 300 + DOCUMENT_SEPARATOR + "z" * 200
    stats = feed(text, [100, 333, 700, 1200])
    assert stats["longest_word"] == 1000
    assert stats["documents"] == 2


def test_pinned_figures_and_the_long_word_warning() -> None:
    text = "the cat sat\non the mat<|endoftext|>the dog\n" + "w" * 100_000
    stats = feed(text, [7, 30])
    assert (stats["chars"], stats["lines"], stats["documents"]) == (len(text), 3, 2)
    assert stats["distinct_pretokens"] == 9  # the, " cat", " sat", "\n", on, " the", " mat", " dog", w…
    assert stats["longest_word"] == 100_000
    assert stats["warnings"] == [
        "The longest run of text without whitespace is 100,000 characters. Trainers treat it as a single word, "
        "which is slow and rarely what you want; check that this is really natural-language text."]
    assert is_analysed(stats)


def test_text_facts_are_the_cheap_subset() -> None:
    facts = TextFacts()
    for chunk in ("first line\nsec", "ond", ""):
        facts.feed(chunk)
    assert facts.finish() == {"chars": 17, "lines": 2, "preview": "first line\nsecond"}
    assert not is_analysed(facts.finish())


def test_too_many_distinct_pretokens_are_reported_as_more_than(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(corpus_stats, "MAX_DISTINCT_PRETOKENS", 5)
    stats = feed(" ".join(f"w{i}" for i in range(20)), [])
    assert (stats["distinct_pretokens"], stats["distinct_pretokens_over"]) == (None, 5)
