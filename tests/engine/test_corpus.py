"""Corpus streaming and parallel pre-token counting (engine/trainers/corpus.py)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import ConfigError, FormatError, TrainingCancelled
from engine.normalizers import get_normalizer
from engine.pretokenizers import PATTERNS
from engine.trainers.base import Reporter
from engine.trainers.corpus import count_pretokens, iter_documents, split_specials, special_pattern

EOT = "<|endoftext|>"


def direct_counts(text: str, spec: str, specials: tuple[str, ...] = (EOT,)) -> Counter[str]:
    """What counting must give: split the whole text on specials, then pre-tokenize each part."""
    split = regex.compile(PATTERNS[spec]).findall if spec in PATTERNS else regex.compile(r"\S+").findall
    counts: Counter[str] = Counter()
    for part in split_specials(text, special_pattern(specials)):
        counts.update(split(part))
    return counts


def write(tmp_path: Path, text: str, name: str = "corpus.txt") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def test_chunks_end_after_special_tokens(tmp_path: Path) -> None:
    text = "".join(f"document {i} has some words{EOT}" for i in range(50))
    chunks = [chunk for chunk, _ in iter_documents([write(tmp_path, text)], [EOT], max_chunk_chars=100)]
    assert "".join(chunks) == text
    assert len(chunks) > 5
    assert all(chunk.endswith(EOT) for chunk in chunks)


def test_progress_positions_are_bytes_read(tmp_path: Path) -> None:
    files = [write(tmp_path, "é" * 300, "a.txt"), write(tmp_path, "xy", "b.txt")]
    positions = [done for _, done in iter_documents(files, [], max_chunk_chars=64, safe_cuts=False)]
    assert positions == [600, 602]


def test_long_document_is_cut_only_between_letters(tmp_path: Path) -> None:
    text = "word, other words!\n  indented\nline " * 40
    chunks = [c for c, _ in iter_documents([write(tmp_path, text)], [EOT], max_chunk_chars=64)]
    assert "".join(chunks) == text and len(chunks) > 5
    for left, right in zip(chunks, chunks[1:]):
        assert left[-1].isalpha() and right[0] in " \n" and right[1].isalpha()


def test_without_safe_cuts_a_long_document_stays_whole(tmp_path: Path) -> None:
    text = "one two three " * 50
    chunks = [c for c, _ in iter_documents([write(tmp_path, text)], [EOT], max_chunk_chars=64, safe_cuts=False)]
    assert chunks == [text]


def test_special_token_across_a_read_block_is_kept_whole(tmp_path: Path) -> None:
    # The 10-character blocks cut "<|endoftext|>" in the middle; the chunks must not.
    text = f"abcdefg{EOT}hij{EOT}klmnopqrstu{EOT}"
    chunks = [c for c, _ in iter_documents([write(tmp_path, text)], [EOT], max_chunk_chars=10)]
    assert chunks == [f"abcdefg{EOT}", f"hij{EOT}", f"klmnopqrstu{EOT}"]


def test_longest_special_token_wins() -> None:
    both = special_pattern(["<|a|>", "<|a|><|b|>"])
    assert split_specials("x<|a|><|b|>y<|a|>z", both) == ["x", "y", "z"]
    assert split_specials("x<|a|><|b|>y", special_pattern(["<|a|>"])) == ["x", "<|b|>y"]


def test_files_are_separate_documents(tmp_path: Path) -> None:
    files = [write(tmp_path, "ab", "1.txt"), write(tmp_path, "cd", "2.txt")]
    assert count_pretokens(files, split=r"(?s).+") == {"ab": 1, "cd": 1}


def test_crlf_and_bytes_are_kept_as_they_are(tmp_path: Path) -> None:
    path = write(tmp_path, "a\r\nb")
    assert count_pretokens([path], split="gpt2") == {"a": 1, "\r": 1, "\n": 1, "b": 1}  # no newline translation


@pytest.mark.parametrize("spec", ["gpt2", "gpt4", "o200k", "whitespace"])
@pytest.mark.parametrize("chunk", [16, 61, 1000], ids=["chunk16", "chunk61", "chunk1000"])
def test_chunk_cuts_do_not_change_counts(tmp_path: Path, spec: str, chunk: int) -> None:
    text = (
        "Hello world!\n  It's 2024; o'clock.\n\nGrüße, 世界 HELLOworld\tTabs  and   spaces \n"
        f"x.\n/path\n{EOT}Next doc's text?! 12345 ok\r\nend   \n" * 9
    )
    path = write(tmp_path, text)
    assert count_pretokens([path], special_tokens=[EOT], split=spec, max_chunk_chars=chunk) == direct_counts(text, spec)


_TEXT = st.lists(st.sampled_from(list("ab Z9'.,\n\t\r-/é世\xa0") + [" ", "\n", "  ", EOT, "'s"]), max_size=120).map("".join)


@settings(max_examples=60)
@given(text=_TEXT, chunk=st.integers(min_value=14, max_value=80), spec=st.sampled_from(["gpt2", "gpt4", "o200k"]))
def test_counts_match_whole_text_pretokenization(tmp_path_factory: pytest.TempPathFactory, text: str, chunk: int, spec: str) -> None:
    path = write(tmp_path_factory.mktemp("c"), text)
    assert count_pretokens([path], special_tokens=[EOT], split=spec, max_chunk_chars=chunk) == direct_counts(text, spec)


def test_workers_give_the_same_counts(tmp_path: Path) -> None:
    text = "".join(f"Doc {i}: the quick brown fox {i % 7} jumps.\n{EOT}" for i in range(3000))
    path = write(tmp_path, text)
    alone = count_pretokens([path], special_tokens=[EOT], num_workers=1)
    pooled = count_pretokens([path], special_tokens=[EOT], num_workers=2, max_chunk_chars=4096)
    assert pooled == alone == direct_counts(text, "gpt2")


def test_callable_splitter_and_normalizer(tmp_path: Path) -> None:
    path = write(tmp_path, f"Hello HELLO{EOT}hello world")
    counts = count_pretokens(
        [path], special_tokens=[EOT], split=str.split, normalizer=get_normalizer("lowercase"), num_workers=2
    )
    assert counts == {"hello": 3, "world": 1}


def test_bad_pattern_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a valid regex"):
        count_pretokens([write(tmp_path, "x")], split="(unclosed")


def test_non_utf8_file_is_a_format_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"caf\xe9 au lait")
    with pytest.raises(FormatError, match="not UTF-8 near byte 3"):
        count_pretokens([path])


def test_progress_reports_bytes(tmp_path: Path) -> None:
    path = write(tmp_path, "some text " * 100)
    seen: list[tuple[str, int, int]] = []
    count_pretokens([path], reporter=Reporter(lambda *a: seen.append(a)))
    assert seen[0] == ("count", 0, 1000) and seen[-1] == ("count", 1000, 1000)


def test_cancel_stops_the_workers(tmp_path: Path) -> None:
    path = write(tmp_path, f"a few words here{EOT}" * 20000)
    calls = []

    def cancel() -> bool:
        calls.append(1)
        return len(calls) > 1

    with pytest.raises(TrainingCancelled):
        count_pretokens([path], special_tokens=[EOT], num_workers=2, max_chunk_chars=1000,
                        reporter=Reporter(should_cancel=cancel, interval=0.0))
