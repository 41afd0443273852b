"""A pre-tokenizer pattern a user writes need not match every character. What it leaves out is
kept as pieces of its own (Hugging Face's ``Split`` with "Isolated", which our tokenizer.json
names), so nothing is lost; a tiktoken file's pattern keeps tiktoken's meaning (only the matches).
Each export says which, and the real ``tokenizers`` and ``tiktoken`` give our ids."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from engine.formats.tiktoken import dumps_ranks, dumps_sidecar, loads_tiktoken
from engine.pretokenizers import RegexSplit, get_pretokenizer
from engine.tokenizer import Tokenizer
from engine.trainers import train

TEXT = "the cat sat on the mat 12 times!\n\tthe end"
HELD_OUT = ["the cat 12!", "  spaces  and\ttabs\n", "ÄÖÜ naïve 日本", "x"]


@pytest.fixture
def trained(tmp_path: Path) -> Tokenizer:
    corpus = tmp_path / "c.txt"
    corpus.write_text(TEXT * 30, encoding="utf-8")
    return train("bpe", [corpus], {"vocab_size": 300, "pretokenizer": "[a-z]+", "special_tokens": []}).tokenizer


def test_the_text_between_matches_is_kept_as_pieces() -> None:
    split = get_pretokenizer("[a-z]+")
    assert split.pieces("the cat 12!") == ["the", " ", "cat", " 12!"]
    assert [(p.text, p.start, p.end) for p in split.split("12 ab")] == [("12 ", 0, 3), ("ab", 3, 5)]
    assert get_pretokenizer("[a-z]+", keep_gaps=False).pieces("the cat 12!") == ["the", "cat"]
    # An empty match (a lookahead the pattern check's sample never triggers) makes no piece.
    assert get_pretokenizer("(?=x)").pieces("a x b") == ["a x b"]


def test_a_custom_pattern_loses_no_text_and_hugging_face_agrees(trained: Tokenizer) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    theirs = tokenizers.Tokenizer.from_str(trained.to_json())
    for text in HELD_OUT:
        ids = trained.encode(text)
        assert trained.decode(ids) == text
        assert theirs.encode(text, add_special_tokens=False).ids == ids


def test_its_tiktoken_files_give_our_ids_in_tiktoken(trained: Tokenizer) -> None:
    tiktoken = pytest.importorskip("tiktoken")
    sidecar = json.loads(dumps_sidecar(trained))
    ranks = {base64.b64decode(token): int(rank) for token, rank in
             (line.split() for line in dumps_ranks(trained).splitlines())}
    theirs = tiktoken.Encoding(name="custom", pat_str=sidecar["pat_str"], mergeable_ranks=ranks, special_tokens={})
    for text in HELD_OUT:
        assert theirs.encode(text) == trained.encode(text)
    again = loads_tiktoken(dumps_ranks(trained), dumps_sidecar(trained))  # read back: the same pieces
    assert [again.encode(text) for text in HELD_OUT] == [trained.encode(text) for text in HELD_OUT]


def test_a_tiktoken_pattern_keeps_only_its_matches_and_hugging_face_reads_it_so() -> None:
    tokenizers = pytest.importorskip("tokenizers")
    ranks = "".join(f"{base64.b64encode(bytes([b])).decode()} {b}\n" for b in range(256))
    sidecar = json.dumps({"name": "letters", "pat_str": "[a-z]+", "special_tokens": {}})
    ours = loads_tiktoken(ranks, sidecar)
    assert ours.decode(ours.encode("the cat 12!")) == "thecat"  # as tiktoken itself: the rest is not encoded
    document = json.loads(ours.to_json())
    split = document["pre_tokenizer"]["pretokenizers"][0]
    assert (split["behavior"], split["invert"]) == ("Removed", True)
    theirs = tokenizers.Tokenizer.from_str(ours.to_json())
    assert theirs.encode("the cat 12!", add_special_tokens=False).ids == ours.encode("the cat 12!")
    assert Tokenizer.from_json(ours.to_json()).encode("the cat 12!") == ours.encode("the cat 12!")


def test_the_named_patterns_cover_all_text_so_their_exports_are_unchanged() -> None:
    for name in ("gpt2", "gpt4", "o200k"):
        split = get_pretokenizer(name)
        assert isinstance(split, RegexSplit) and not split.keep_gaps
        assert split.findall_pattern() == split.pattern
        assert (split.to_hf()["behavior"], split.to_hf()["invert"]) == ("Isolated", False)
