"""Classic character-level BPE (``level="char"``): exact merges, unknown characters, and ids
identical to Hugging Face ``tokenizers`` loading our ``tokenizer.json``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.cli import main
from engine.errors import ConfigError
from engine.tokenizer import Tokenizer
from engine.trainers import train
from engine.trainers.bpe import BpeOptions, learn_chars
from engine.trainers.bpe_char import char_words

EOT = "<|endoftext|>"
# Sennrich et al.'s example: low x5, lower x2, newest x6, widest x3.
SENNRICH = {"low": 5, "lower": 2, "newest": 6, "widest": 3}
ALPHABET = ["d", "e", "i", "l", "n", "o", "r</w>", "s", "t</w>", "w", "w</w>"]


def char_options(**options: object) -> BpeOptions:
    options.setdefault("special_tokens", ())
    options.setdefault("min_frequency", 1)
    return BpeOptions(level="char", **options)  # type: ignore[arg-type]


def test_textbook_merges_with_the_tie_break() -> None:
    # (e s) and (s t</w>) both occur 9 times: the greater pair, (s, t</w>), goes first. Later
    # (w est</w>), (n e) and (e w) tie at 6 and are taken greatest first, as the rule says.
    vocab, merges, stats = learn_chars(SENNRICH, char_options(vocab_size=1 + len(ALPHABET) + 7))
    assert merges == [("s", "t</w>"), ("e", "st</w>"), ("l", "o"), ("w", "est</w>"), ("n", "e"),
                      ("ne", "west</w>"), ("lo", "w</w>")]
    assert [count for _, _, count, _ in stats] == [9, 9, 7, 6, 6, 6, 5]
    assert list(vocab) == ["<unk>", *ALPHABET, "st</w>", "est</w>", "lo", "west</w>", "ne", "newest</w>", "low</w>"]
    assert list(vocab.values()) == list(range(len(vocab)))


def test_the_alphabet_keeps_the_most_frequent_symbols_when_it_does_not_fit() -> None:
    # Room for the unknown token and 3 symbols: e 17, w 11, then s and t</w> tie at 9 (the
    # smaller string stays); the kept ones are numbered in code-point order.
    vocab, merges, _ = learn_chars(SENNRICH, char_options(vocab_size=4))
    assert list(vocab) == ["<unk>", "e", "s", "w"]
    assert merges == []


def test_a_dropped_symbol_splits_the_word_in_training() -> None:
    # Without x in the alphabet, "yxab" is the runs "y" and "a b</w>", counted with "ab".
    words, freqs = char_words({"yxab": 1, "ab": 2, "x": 5}, ["a", "b</w>", "y"], "</w>")
    assert dict(zip(words, freqs)) == {"\x02": 1, "\x00\x01": 3}


def test_encode_decode_and_unknown_runs(tmp_path: Path) -> None:
    path = tmp_path / "c.txt"
    path.write_text("low lower newest widest " * 20 + EOT + " low", encoding="utf-8")
    tokenizer = train("bpe", [path], {"level": "char", "vocab_size": 40, "min_frequency": 2}).tokenizer
    unk = tokenizer.token_to_id("<unk>")
    assert unk == 1 and tokenizer.special_tokens == {EOT: 0}
    ids = tokenizer.encode("lowest ☃☃x low")
    tokens = [tokenizer.id_to_token(i) for i in ids]
    assert tokens[:2] == ["lo", "west</w>"]  # (w est</w>) was learned before (lo w)
    assert tokens[2] == "<unk>" and tokens[3:] == ["low</w>"]  # "☃☃x</w>": one unknown token
    assert tokenizer.decode(ids) == "lowest <unk>low"
    assert tokenizer.decode(tokenizer.encode("newest widest")) == "newest widest"
    spans = tokenizer.encode_with_offsets("lowest ☃☃x low")
    assert [(s.char_start, s.char_end) for s in spans] == [(0, 2), (2, 6), (7, 10), (11, 14)]
    again = Tokenizer.from_json(tokenizer.to_json())
    assert again.encode("lowest ☃☃x low") == ids and again.decode(ids) == tokenizer.decode(ids)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        pytest.param({"level": "word"}, "level='word' must be one of: byte, char, spm", id="level"),
        pytest.param({"level": "char", "vocab_size": 2}, "vocab_size=2 must be between 3", id="floor"),
        pytest.param({"level": "char", "unk_token": ""}, "unk_token='' must be 1 to", id="unk"),
        pytest.param({"level": "char", "end_of_word_suffix": ""}, "end_of_word_suffix='' must be 1 to", id="suffix"),
    ],
)
def test_bad_options(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as error:
        BpeOptions(**options)  # type: ignore[arg-type]
    assert str(error.value).startswith(message)


def test_an_empty_pretokenizer_is_the_levels_default() -> None:
    assert BpeOptions(level="char", pretokenizer="").split == "whitespace"
    assert BpeOptions(pretokenizer="").split == "gpt2"
    assert BpeOptions(level="char", pretokenizer="bert").split == "bert"


def test_an_imported_pair_listed_twice_has_its_later_rank_as_in_hugging_face(tmp_path: Path) -> None:
    hf = pytest.importorskip("tokenizers")
    path = tmp_path / "c.txt"
    path.write_text("abc " * 20, encoding="utf-8")
    data = json.loads(train("bpe", [path], {"level": "char", "vocab_size": 40, "special_tokens": []}).tokenizer.to_json())
    # (b, c</w>) at ranks 0 and 2, (a, b) at rank 1: the later rank counts, so "ab" forms first.
    data["model"]["vocab"] = {"<unk>": 0, "a": 1, "b": 2, "c</w>": 3, "ab": 4, "bc</w>": 5}
    data["model"]["merges"] = [["b", "c</w>"], ["a", "b"], ["b", "c</w>"]]
    text = "abc xabc"
    assert Tokenizer.from_json(json.dumps(data)).encode(text) == hf.Tokenizer.from_str(json.dumps(data)).encode(text).ids
    assert Tokenizer.from_json(json.dumps(data)).encode(text) == [4, 3, 0, 4, 3]


def test_hugging_face_loads_it_with_identical_ids(cs336: Path, tmp_path: Path) -> None:
    hf = pytest.importorskip("tokenizers")
    result = train("bpe", [cs336 / "tinystories_sample.txt"], {"level": "char", "vocab_size": 400})
    ours = result.tokenizer
    assert ours.vocab_size == 400 and not result.stats["stopped_early"]
    theirs = hf.Tokenizer.from_str(ours.to_json())
    held_out = (cs336 / "corpus.en").read_text(encoding="utf-8")[:100_000] + " ☃ naïve 日本語 " + EOT
    ids = ours.encode(held_out, allowed_special="all")
    assert ids == theirs.encode(held_out).ids
    assert ours.token_to_id("<unk>") in ids  # corpus.en has characters the stories never use
    assert ours.decode(ids[:500]) == theirs.decode(ids[:500], skip_special_tokens=False)


def test_the_cli_trains_char_level_and_writes_tokenizer_json(cs336: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    code = main(["train", "--model", "bpe", "--level", "char", "--vocab-size", "500", "-o", str(out),
                 str(cs336 / "tinystories_sample.txt")])
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == ["tokenizer.json"]  # vocab.json/merges.txt are byte-level files
    model = json.loads((out / "tokenizer.json").read_text(encoding="utf-8"))["model"]
    assert (model["end_of_word_suffix"], model["unk_token"], model["fuse_unk"]) == ("</w>", "<unk>", True)
