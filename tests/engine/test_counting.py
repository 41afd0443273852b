"""Pre-token counting (engine/trainers/counting.py) against a slow, obviously-correct counter."""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import ConfigError, FormatError, TrainingCancelled
from engine.normalizers import get_normalizer
from engine.pretokenizers import get_pretokenizer
from engine.trainers.base import Reporter
from engine.trainers.counting import count_pretokens
from engine.trainers.limits import max_workers
from engine.trainers.tally import CHAR_PATTERN, split_words

EOT = "<|endoftext|>"
SPECIALS = (EOT, "[SEP]", "[SEP][SEP]")
SPLITS = ["bert", "whitespace", CHAR_PATTERN, "gpt2", "gpt4", "o200k"]
NORMALIZERS = [None, "lowercase", "nfkc,strip_accents,lowercase", "nfd"]


def reference_counts(text: str, split: str, specials: tuple[str, ...] = SPECIALS, normalizer: str | None = None) -> Counter[str]:
    """Obviously correct and slow: walk the text, cutting at the longest special token that
    starts at each position; normalize each stretch and pre-tokenize it whole."""
    longest_first = sorted(specials, key=len, reverse=True)
    stretches, start, i = [], 0, 0
    while i < len(text):
        hit = next((s for s in longest_first if text.startswith(s, i)), None)
        if hit is None:
            i += 1
            continue
        stretches.append(text[start:i])
        i = start = i + len(hit)
    stretches.append(text[start:])
    norm = get_normalizer(normalizer)
    pieces = get_pretokenizer(split).pieces
    counts: Counter[str] = Counter()
    for stretch in stretches:
        counts.update(pieces(norm.normalize(stretch) if norm else stretch))
    return counts


@pytest.fixture
def small_ranges(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ranges of 4 KiB and up instead of 1 MiB, so that a small test corpus is shared out among
    the workers and this process (one range would be counted here alone)."""
    from engine.trainers import byte_ranges

    monkeypatch.setattr(byte_ranges, "MIN_RANGE_BYTES", 4096)


def write(tmp_path: Path, text: str, name: str = "corpus.txt") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


# Letters (with case quirks: final sigma, dotted İ, a combining accent), punctuation, digits,
# CJK, every kind of whitespace (\x1c-\x1f split str.split() but are not \s; \x85 and \u2028
# are \s; \u200b is neither), the specials and a prefix of one.
_ALPHABET = [*"abZ9'.,-/é世", "ΟΔΟΣ", "İ", "e\u0301", "ﬁ", " ", "  ", "\n", "\n\n", "\t", "\r\n",
             "\x1c", "\x1f", "\x85", "\xa0", "\u2028", "\u3000", "\u200b", "'s", "word", *SPECIALS, "[SE"]
_TEXT = st.lists(st.sampled_from(_ALPHABET), max_size=150).map("".join)


@settings(max_examples=150, deadline=None)
@given(
    text=_TEXT,
    chunk=st.integers(min_value=14, max_value=80),
    split=st.sampled_from(SPLITS),
    normalizer=st.sampled_from(NORMALIZERS),
)
def test_counts_equal_the_reference(
    tmp_path_factory: pytest.TempPathFactory, text: str, chunk: int, split: str, normalizer: str | None
) -> None:
    path = write(tmp_path_factory.mktemp("c"), text)
    counts = count_pretokens(
        [path], special_tokens=SPECIALS, split=split, normalizer=get_normalizer(normalizer), max_chunk_chars=chunk
    )
    assert counts == reference_counts(text, split, normalizer=normalizer)


@pytest.mark.parametrize("split", SPLITS, ids=["bert", "whitespace", "char", "gpt2", "gpt4", "o200k"])
def test_workers_give_the_reference_counts(tmp_path: Path, split: str, small_ranges: None) -> None:
    import random

    rng = random.Random(7)
    text = "".join(rng.choice(_ALPHABET) for _ in range(40_000))
    path = write(tmp_path, text)
    normalizer = "nfkc,strip_accents,lowercase"
    pooled = count_pretokens(
        [path], special_tokens=SPECIALS, split=split, normalizer=get_normalizer(normalizer),
        num_workers=2, max_chunk_chars=2048,
    )
    assert pooled == reference_counts(text, split, normalizer=normalizer)


@pytest.mark.parametrize("split", ["gpt2", "gpt4", "o200k", "whitespace", "bert"])
@pytest.mark.parametrize("chunk", [16, 61, 1000], ids=["chunk16", "chunk61", "chunk1000"])
def test_chunk_cuts_do_not_change_counts(tmp_path: Path, split: str, chunk: int) -> None:
    text = (
        "Hello world!\n  It's 2024; o'clock.\n\nGrüße, 世界 HELLOworld\tTabs  and   spaces \n"
        f"x.\n/path\n{EOT}Next doc's text?! 12345 ok\r\nend   \n" * 9
    )
    path = write(tmp_path, text)
    assert count_pretokens([path], special_tokens=[EOT], split=split, max_chunk_chars=chunk) == reference_counts(
        text, split, (EOT,)
    )


def test_split_words_gives_each_piece_its_words_count() -> None:
    bert = get_pretokenizer("bert").pieces
    assert split_words({"hi,": 3, "hi": 2, "(a)": 1}, bert) == {"hi": 5, ",": 3, "(": 1, "a": 1, ")": 1}


def test_files_are_separate_documents(tmp_path: Path) -> None:
    files = [write(tmp_path, "ab", "1.txt"), write(tmp_path, "cd", "2.txt")]
    assert count_pretokens(files, split=r"(?s).+") == {"ab": 1, "cd": 1}


def test_crlf_and_bytes_are_kept_as_they_are(tmp_path: Path) -> None:
    path = write(tmp_path, "a\r\nb")
    assert count_pretokens([path], split="gpt2") == {"a": 1, "\r": 1, "\n": 1, "b": 1}  # no newline translation


def test_callable_splitter_and_normalizer(tmp_path: Path) -> None:
    path = write(tmp_path, f"Hello HELLO{EOT}hello world")
    counts = count_pretokens(
        [path], special_tokens=[EOT], split=str.split, normalizer=get_normalizer("lowercase"), num_workers=2
    )
    assert counts == {"hello": 3, "world": 1}


def test_bad_pattern_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a valid regex"):
        count_pretokens([write(tmp_path, "x")], split="(unclosed")


@pytest.mark.parametrize("workers", [1, 2], ids=["in-process", "workers"])
def test_non_utf8_file_is_a_format_error(tmp_path: Path, workers: int) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"caf\xe9 au lait")
    with pytest.raises(FormatError, match=r"latin1.txt: The corpus is not UTF-8 text \(byte 3 cannot be decoded\)"):
        count_pretokens([path], split="bert", num_workers=workers)


def test_progress_reports_bytes(tmp_path: Path) -> None:
    path = write(tmp_path, "some text " * 100)
    seen: list[tuple[str, int, int]] = []
    count_pretokens([path], reporter=Reporter(lambda *a: seen.append(a)))
    assert seen[0] == ("count", 0, 1000) and seen[-1] == ("count", 1000, 1000)


@pytest.mark.parametrize("split", ["gpt2", "bert"])
def test_cancel_stops_the_workers(tmp_path: Path, split: str, small_ranges: None) -> None:
    path = write(tmp_path, f"a few words here{EOT}" * 20000)
    calls = []

    def cancel() -> bool:
        calls.append(1)
        return len(calls) > 1

    with pytest.raises(TrainingCancelled):
        count_pretokens([path], special_tokens=[EOT], split=split, num_workers=2, max_chunk_chars=1000,
                        reporter=Reporter(should_cancel=cancel, interval=0.0))


_TEST_PROCESS = os.getpid()


def _die(text: str) -> list[str]:
    """Kills a (forked) worker; this process counts on, slowly, so that the worker surely takes a range."""
    if os.getpid() != _TEST_PROCESS:
        os._exit(3)
    time.sleep(0.01)
    return text.split()


def test_a_dead_worker_raises_instead_of_hanging(tmp_path: Path, small_ranges: None) -> None:
    path = write(tmp_path, f"a few words here{EOT}" * 2000)
    with pytest.raises(RuntimeError, match="worker died"):
        count_pretokens([path], special_tokens=[EOT], split=_die, num_workers=2, max_chunk_chars=1000)


def test_counting_leaves_no_thread_behind(tmp_path: Path, small_ranges: None) -> None:
    # A leftover queue thread would make the next count spawn workers instead of forking them.
    import threading

    path = write(tmp_path, f"a few words here{EOT}" * 2000)
    before = set(threading.enumerate())  # an earlier test's thread may end meanwhile: count only new ones
    count_pretokens([path], special_tokens=[EOT], split="bert", num_workers=2, max_chunk_chars=1000)
    assert set(threading.enumerate()) - before == set()


def _counter_pid(text: str) -> list[str]:
    """Which process counted the chunk."""
    return [str(os.getpid())]


def _counter_pid_slow_here(text: str) -> list[str]:
    """Which process counted the chunk; this one slowly, so that a worker surely takes ranges too."""
    if os.getpid() == _TEST_PROCESS:
        time.sleep(0.01)
    return [str(os.getpid())]


@pytest.mark.skipif(max_workers() < 2, reason="one CPU: the default never starts workers")
def test_auto_workers_start_from_in_process_bytes(tmp_path: Path, small_ranges: None) -> None:
    path = write(tmp_path, f"{'a few words here ' * 10}{EOT}" * 200)
    size = path.stat().st_size
    here = count_pretokens([path], special_tokens=[EOT], split=_counter_pid, max_chunk_chars=1000,
                           in_process_bytes=size + 1)
    assert set(here) == {str(os.getpid())}
    there = count_pretokens([path], special_tokens=[EOT], split=_counter_pid_slow_here, max_chunk_chars=1000,
                            in_process_bytes=size)
    assert set(there) - {str(os.getpid())} and sum(there.values()) == sum(here.values())
