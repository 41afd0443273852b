"""Training's own bounds: a custom pattern's time budget per chunk, and Unigram's memory bounds.

A pattern that backtracks without end must fail the count with a sentence naming it, in one
process, in worker processes (the budget travels with the split) and inside a caller's
``pattern_budget``; ordinary patterns give the same counts under the budget as without it.
Unigram skips pre-tokens longer than sentencepiece's ``max_sentence_length`` and refuses, before
seeding, a word table that clearly cannot be seeded in the memory the process may use; that test
runs in a subprocess under a 1 GiB address-space limit, as the web app's jobs are.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from engine.errors import ConfigError
from engine.pretokenizers import HF_BYTELEVEL_PATTERN, get_pretokenizer
from engine.trainers.counting import count_pretokens
from engine.trainers.limits import (
    MAX_SENTENCE_BYTES,
    PATTERN_SECONDS_PER_MB,
    PatternTooSlow,
    chunk_seconds,
    pattern_budget,
    pattern_rate,
)
from engine.trainers.unigram import UnigramOptions, train_on_counts
from engine.trainers.unigram.bounds import skip_long_words, substring_occurrences
from tests.hostile_patterns import COMMAS, SLOW


def test_chunk_budget_grows_with_the_chunk() -> None:
    assert chunk_seconds(100, 10.0) == 10.0  # a short chunk gets a million characters' budget
    assert chunk_seconds(2_500_000, 10.0) == 25.0
    assert pattern_rate() == PATTERN_SECONDS_PER_MB == 10.0
    with pattern_budget(0.5):
        assert pattern_rate() == 0.5
    assert pattern_rate() == 10.0


@pytest.mark.parametrize("bad", [0, -1, float("inf"), True, "1"], ids=["zero", "negative", "inf", "bool", "str"])
def test_pattern_budget_refuses_bad_rates(bad: object) -> None:
    with pytest.raises(ConfigError, match="positive number of seconds per million characters"), pattern_budget(bad):  # type: ignore[arg-type]
        pass


@pytest.mark.parametrize("workers", [1, 2], ids=["in-process", "worker-processes"])
def test_a_backtracking_pattern_fails_the_count_with_its_name(tmp_path: Path, workers: int) -> None:
    corpus = tmp_path / "commas.txt"
    corpus.write_text(COMMAS, encoding="utf-8")
    with pattern_budget(0.2), pytest.raises(PatternTooSlow) as caught:
        count_pretokens([corpus], split=SLOW, num_workers=workers)
    assert str(caught.value) == (
        f"The pre-tokenizer pattern {SLOW!r} took longer than 0.2 s of CPU on a chunk of 30,010 characters of the "
        "corpus (the budget is 0.2 s per million characters, and a million's for a shorter chunk); it backtracks "
        "too much on this text (nested repeats such as (?:.*,){6} do). Simplify the pattern."
    )


def test_ordinary_custom_patterns_count_the_same_under_the_budget(tmp_path: Path) -> None:
    text = "naïve café, 日本語のテキスト; ça va? Привет мир 123 4567 — don't stop\n" * 3000
    corpus = tmp_path / "mixed.txt"
    corpus.write_text(text, encoding="utf-8")
    counts = count_pretokens([corpus], split=HF_BYTELEVEL_PATTERN, num_workers=1)  # the default budget
    assert counts == Counter(get_pretokenizer(HF_BYTELEVEL_PATTERN).pieces(text))
    assert counts[" café"] == 3000


def test_substring_occurrences_match_a_count_of_every_substring() -> None:
    words = {"▁a": 3, "▁the": 1, "x" * 40: 2}
    expected = sum(1 for w in words for i in range(len(w)) for j in range(i + 1, min(len(w), i + 5) + 1))
    assert substring_occurrences(words, max_piece_length=4) == expected == 3 + 10 + (40 + 39 + 38 + 37 + 36)


def test_unigram_skips_pre_tokens_longer_than_max_sentence_length() -> None:
    long = "▁" + "ab" * MAX_SENTENCE_BYTES  # 8,195 characters
    kept, skipped = skip_long_words({"▁hello": 5, long: 1})
    assert (kept, skipped) == ({"▁hello": 5}, 1)
    short = {"▁" + "é" * 2095: 1}  # 4,193 bytes in 2,096 characters: over the cap by its UTF-8 length
    assert skip_long_words(short) == ({}, 1)
    words = {"▁the": 40, "▁cat": 20, "▁sat": 10, long: 1}
    _model, stats = train_on_counts(words, UnigramOptions(vocab_size=270))
    assert stats["skipped_long_words"] == 1
    with pytest.raises(ConfigError, match="Every line of the corpus is longer than 4,192 bytes"):
        train_on_counts({long: 2}, UnigramOptions(vocab_size=270, split_by_whitespace=False))


CHILD = textwrap.dedent("""
    import json, random, resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
    from engine.trainers import train
    stages = []
    try:
        train("unigram", [sys.argv[1]], {"vocab_size": 2000, "split_by_whitespace": False,
              "split_by_unicode_script": False, "split_by_number": False},
              progress=lambda stage, *_: stages.append(stage))
        outcome = "trained"
    except Exception as exc:
        outcome = f"{type(exc).__name__}: {exc}"
    print(json.dumps({"outcome": outcome, "stages": sorted(set(stages))}))
""")


@pytest.mark.parametrize("lines", [38_000, 380_000], ids=["3MB", "30MB"])
def test_hostile_unigram_options_are_refused_before_seeding_under_1_gib(tmp_path: Path, lines: int) -> None:
    # Lines of made-up words: without split_by_whitespace every line is one distinct word, and
    # seeding would count ~50 million substrings in 3 MB. 30 MB is the audit's corpus, which grew
    # past 9 GB before this bound.
    import random

    rng = random.Random(7)
    vocabulary = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(3, 10))) for _ in range(20_000)]
    corpus = tmp_path / "made_up.txt"
    corpus.write_text("\n".join(" ".join(rng.choices(vocabulary, k=12)) for _ in range(lines)) + "\n", encoding="utf-8")
    run = subprocess.run([sys.executable, "-c", CHILD, str(corpus)], capture_output=True, text=True, timeout=300,
                         cwd=tmp_path, env={"PYTHONPATH": str(Path(__file__).resolve().parents[2]), "PATH": ""})
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["stages"] == ["count"]  # refused right after counting: no seeding began
    assert result["outcome"].startswith("NotEnoughMemory: Unigram training on this corpus would need about ")
    assert f"this process may use 1.0 GiB: its {lines:,} distinct lines (each line is one word, since " \
           "split_by_whitespace is off)" in result["outcome"]
    assert result["outcome"].endswith("To train, turn split_by_whitespace on, train on less text or lower max_piece_length.")
