"""GPT-2 parity: CS336's gpt2_vocab.json + gpt2_merges.txt imported with the gpt2 pattern give
exactly tiktoken's ids. tiktoken cannot download here, so its Encoding is built from the same two
files. The merges file has no ``#version`` header (its first line is a real merge)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.byte_unicode import symbols_to_bytes
from engine.formats.gpt2 import load_gpt2
from engine.models.bpe import BPE
from engine.pretokenizers import GPT2_PATTERN
from engine.tokenizer import Tokenizer
from tests.engine.bpe_encode_reference import reference_encode
from tests.shared_data import cs336_file, gpt2_files

tiktoken = pytest.importorskip("tiktoken")

EOT = "<|endoftext|>"


@pytest.fixture(scope="module")
def files() -> tuple[Path, Path]:
    return gpt2_files()


@pytest.fixture(scope="module")
def ours(files: tuple[Path, Path]) -> Tokenizer:
    return load_gpt2(*files, pretokenizer="gpt2", special_tokens=[EOT])


@pytest.fixture(scope="module")
def reference(files: tuple[Path, Path]) -> object:
    vocab = json.loads(files[0].read_text(encoding="utf-8"))
    ranks = {symbols_to_bytes(token): i for token, i in vocab.items() if token != EOT}
    return tiktoken.Encoding("gpt2-local", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={EOT: vocab[EOT]})


def test_merges_file_has_no_header(files: tuple[Path, Path], ours: Tokenizer) -> None:
    assert files[1].read_text(encoding="utf-8").split("\n", 1)[0] == "Ġ t"
    assert ours.model.merges[0] == (b" ", b"t")  # type: ignore[attr-defined]
    assert len(ours.model.merges) == 50000  # type: ignore[attr-defined]
    assert ours.vocab_size == 50257
    assert ours.special_tokens == {EOT: 50256}


@pytest.mark.parametrize("name", ["address.txt", "german.txt", "tinystories_sample.txt"])
def test_files_match_tiktoken(ours: Tokenizer, reference: object, name: str) -> None:
    text = cs336_file(name).read_text(encoding="utf-8")
    expected = reference.encode(text, allowed_special="all")  # type: ignore[attr-defined]
    assert ours.encode(text, allowed_special="all") == expected
    assert ours.decode(expected) == text


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("🙃", id="emoji"),
        pytest.param("Héllò hôw are ü? 🙃", id="accents"),
        pytest.param("  leading, trailing   \n\n\tand\r\nmixed  whitespace  ", id="whitespace"),
        pytest.param("I'm sure they'll've  can't 12345 6.7e-8 $$$ 中文字符", id="contractions-numbers"),
        pytest.param("\x1c\x1d\x1e\x1f separators \x85 \u2028", id="odd-separators"),
    ],
)
def test_strings_match_tiktoken(ours: Tokenizer, reference: object, text: str) -> None:
    assert ours.encode(text) == reference.encode(text)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(f"Hello{EOT}world", id="inside"),
        pytest.param(f"{EOT}{EOT} x {EOT}", id="repeated"),
        pytest.param(f"<|endoftext{EOT}|>", id="nested-lookalike"),
    ],
)
def test_special_tokens_match_tiktoken(ours: Tokenizer, reference: object, text: str) -> None:
    expected = reference.encode(text, allowed_special="all")  # type: ignore[attr-defined]
    assert ours.encode(text, allowed_special="all") == expected
    assert ours.encode(text, disallowed_special=()) == reference.encode(text, disallowed_special=())  # type: ignore[attr-defined]
    assert EOT in text and reference.encode(EOT, allowed_special="all") == [50256]  # type: ignore[attr-defined]


def test_disallowed_special_raises_like_tiktoken(ours: Tokenizer, reference: object) -> None:
    with pytest.raises(ValueError):
        reference.encode(f"a{EOT}")  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match=re.escape("special token '<|endoftext|>'")):
        ours.encode(f"a{EOT}")


# The fast paths against their references on GPT-2's real vocabulary (50,000 merges), not only on
# the tiny hand-made one of test_tokenizer.py: the merge loop against the slow reference,
# and the whole pipeline (ASCII split, pre-token cache) against tiktoken.
@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=40) | st.text(max_size=20).map(lambda text: text.encode("utf-8", "replace")))
def test_the_merge_loop_equals_the_reference_on_gpt2(ours: Tokenizer, data: bytes) -> None:
    assert isinstance(ours.model, BPE)
    assert ours.model.encode_bytes(data) == reference_encode(ours.model, data)


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=200) | st.text(st.sampled_from(list("abcdeABC 123.,'\n\té中")), max_size=300))
def test_random_text_matches_tiktoken(ours: Tokenizer, reference: object, text: str) -> None:
    assert ours.encode_ordinary(text) == reference.encode_ordinary(text)  # type: ignore[attr-defined]
