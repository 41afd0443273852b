"""Reading corpora as chunks of whole documents (engine/trainers/corpus.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import FormatError
from engine.normalizers import get_normalizer
from engine.trainers.corpus import cuts_are_safe, iter_documents, special_pattern, split_specials

EOT = "<|endoftext|>"


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


@pytest.mark.parametrize(
    ("data", "offset"),
    [(b"x" * 100 + b"caf\xe9 au lait", 103), (b"x" * 15 + b"\xc3", 15), (b"caf\xe9", 3), (b"x" * 15 + b"\xe4\xb8|", 15)],
    ids=["middle", "at-a-block-end", "at-the-file-end", "across-blocks"],
)
def test_non_utf8_file_is_a_format_error_naming_the_byte(tmp_path: Path, data: bytes, offset: int) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes(data)
    message = rf"latin1.txt: The corpus is not UTF-8 text \(byte {offset} cannot be decoded\)"
    with pytest.raises(FormatError, match=message):
        list(iter_documents([path], max_chunk_chars=16))


@pytest.mark.parametrize(
    ("split", "normalizer", "safe"),
    [
        ("gpt2", None, True),
        ("bert", None, True),
        ("bert", "nfkc,strip_accents,lowercase", True),
        ("whitespace", "nfd", True),
        ("gpt2", "lowercase", False),  # a normalizer may turn the letters around the cut into others
        (r"\w+", None, False),
        (str.split, None, False),
    ],
    ids=["gpt2", "bert", "bert-normalized", "whitespace-nfd", "gpt2-normalized", "custom-regex", "callable"],
)
def test_which_splits_allow_safe_cuts(split: object, normalizer: str | None, safe: bool) -> None:
    assert cuts_are_safe(split, get_normalizer(normalizer)) is safe
