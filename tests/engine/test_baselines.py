"""The baselines: word-level, character-level, byte-level and FMM/BMM maximum matching."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import ConfigError, FormatError
from engine.models.baselines import ByteLevel, CharLevel, MaxMatch, WordLevel
from engine.tokenizer import Tokenizer
from engine.trainers import option_specs, train
from engine.trainers.baselines import CharOptions, WordLevelOptions, maxmatch_tokenizer, vocabulary_words

CORPUS = "the cat sat on the mat. The cat ate!\nthe end, the end.\n<|endoftext|>\nÉtude à deux\n"
DICTIONARY = ["研究", "研究生", "生命", "命", "科学", "学"]


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text(CORPUS, encoding="utf-8")
    return path


# -------------------------------------------------------------------------- maximum matching
@pytest.mark.parametrize(
    ("direction", "pieces"),
    [("forward", ["研究生", "命", "科学"]), ("backward", ["研究", "生命", "科学"])],
    ids=["FMM", "BMM"],
)
def test_maximum_matching_classic_case(direction: str, pieces: list[str]) -> None:
    tokenizer = maxmatch_tokenizer(DICTIONARY, direction=direction)
    ids = tokenizer.encode("研究生命科学")
    assert [tokenizer.id_to_token(i) for i in ids] == pieces
    assert tokenizer.decode(ids) == "研究生命科学"
    spans = tokenizer.encode_with_offsets("研究生命科学")
    assert [(s.char_start, s.char_end) for s in spans] == (
        [(0, 3), (3, 4), (4, 6)] if direction == "forward" else [(0, 2), (2, 4), (4, 6)]
    )


@pytest.mark.parametrize("direction", ["forward", "backward"])
def test_maximum_matching_unknown_characters_are_single_unks(direction: str) -> None:
    tokenizer = maxmatch_tokenizer(DICTIONARY, direction=direction)
    assert [tokenizer.id_to_token(i) for i in tokenizer.encode("X科学Y")] == ["[UNK]", "科学", "[UNK]"]


@pytest.mark.parametrize("direction", ["forward", "backward"])
def test_maximum_matching_round_trips_through_json(direction: str) -> None:
    tokenizer = maxmatch_tokenizer(DICTIONARY, direction=direction)
    again = Tokenizer.from_json(tokenizer.to_json())
    assert again.encode("研究生命科学") == tokenizer.encode("研究生命科学")
    assert again.model.kind == "maxmatch"


def test_maximum_matching_over_a_trained_vocabulary(corpus: Path) -> None:
    words = vocabulary_words(train("wordlevel", [corpus], {}).tokenizer)
    assert words == ["!", ",", ".", "The", "ate", "cat", "deux", "end", "mat", "on", "sat", "the", "Étude", "à"]
    tokenizer = maxmatch_tokenizer(words, direction="forward")
    assert [tokenizer.id_to_token(i) for i in tokenizer.encode("thecat")] == ["the", "cat"]


def test_maxmatch_rejects_an_unknown_direction() -> None:
    with pytest.raises(ConfigError, match="Unknown matching direction 'sideways'; use direction='forward' or 'backward'"):
        MaxMatch({"a": 0}, direction="sideways")


# -------------------------------------------------------------------------- word-level
def test_word_level_vocabulary_is_ordered_by_count_then_text(corpus: Path) -> None:
    tokenizer = train("wordlevel", [corpus], {"vocab_size": 9}).tokenizer
    vocab = sorted(tokenizer.model.vocab().items(), key=lambda kv: kv[1])
    # the 5, . 3, cat 2, end 2; "<|endoftext|>" is a document separator, not text
    assert [t for t, _ in vocab] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", ".", "cat", "end"]
    ids = tokenizer.encode("the cat sat.")
    assert [tokenizer.id_to_token(i) for i in ids] == ["the", "cat", "[UNK]", "."]
    assert tokenizer.decode(tokenizer.encode("the cat .")) == "the cat ."


def test_word_level_loads_in_hugging_face_with_the_same_ids(corpus: Path, tmp_path: Path) -> None:
    tokenizer = train("wordlevel", [corpus], {"lowercase": True}).tokenizer
    path = tmp_path / "tokenizer.json"
    tokenizer.save(path)
    hf = pytest.importorskip("tokenizers")  # Hugging Face's library, to compare with
    theirs = hf.Tokenizer.from_file(str(path))
    for text in ["The cat sat on THE mat!", "étude à trois, the end"]:
        assert tokenizer.encode(text) == theirs.encode(text).ids


# -------------------------------------------------------------------------- char-level
def test_char_level_is_lossless_on_seen_characters(corpus: Path, tmp_path: Path) -> None:
    tokenizer = train("char", [corpus], {}).tokenizer
    text = "the mat ate\nÉtude"
    assert tokenizer.decode(tokenizer.encode(text)) == text
    assert len(tokenizer.encode(text)) == len(text)
    assert [tokenizer.id_to_token(i) for i in tokenizer.encode("tz")] == ["t", "[UNK]"]
    path = tmp_path / "tokenizer.json"
    tokenizer.save(path)
    hf = pytest.importorskip("tokenizers")  # Hugging Face's library, to compare with
    assert hf.Tokenizer.from_file(str(path)).encode(text).ids == tokenizer.encode(text)


def test_char_level_vocab_size_keeps_the_most_frequent(corpus: Path) -> None:
    tokenizer = train("char", [corpus], {"vocab_size": 4}).tokenizer
    # " " 13 times, then "e" and "t" 10 times each: the tie goes to the smaller code point.
    assert sorted(tokenizer.model.vocab(), key=tokenizer.model.vocab().get) == ["[UNK]", " ", "e", "t"]


# -------------------------------------------------------------------------- byte-level
def test_byte_level_ids_are_the_bytes(corpus: Path, tmp_path: Path) -> None:
    tokenizer = train("byte", [corpus], {"special_tokens": ["<|endoftext|>"]}).tokenizer
    assert tokenizer.encode("é!") == [0xC3, 0xA9, 0x21]
    assert tokenizer.encode("<|endoftext|>", allowed_special="all") == [256]
    assert tokenizer.vocab_size == 257
    path = tmp_path / "tokenizer.json"
    tokenizer.save(path)
    hf = pytest.importorskip("tokenizers")  # Hugging Face's library, to compare with
    theirs = hf.Tokenizer.from_file(str(path))
    assert theirs.encode("héllo wörld 🙂").ids == tokenizer.encode("héllo wörld 🙂")


@settings(max_examples=100)
@given(st.text())
def test_byte_level_round_trips_any_text(text: str) -> None:
    from engine.decoders import ByteLevelDecoder

    tokenizer = Tokenizer(ByteLevel(), decoder=ByteLevelDecoder())
    assert tokenizer.decode(tokenizer.encode_ordinary(text)) == text


@settings(max_examples=100)
@given(st.text(alphabet="研究生命科学XY", max_size=20), st.sampled_from(["forward", "backward"]))
def test_maximum_matching_round_trips(text: str, direction: str) -> None:
    tokenizer = maxmatch_tokenizer(DICTIONARY + list("研究生命科学XY"), direction=direction)
    assert tokenizer.decode(tokenizer.encode(text)) == text


@settings(max_examples=100)
@given(st.lists(st.sampled_from(["the", "cat", "sat", "on", "mat", ".", "!"]), max_size=15))
def test_word_level_round_trips_known_words(words: list[str]) -> None:
    model = WordLevel({"[UNK]": 0, "the": 1, "cat": 2, "sat": 3, "on": 4, "mat": 5, ".": 6, "!": 7})
    from engine.decoders import WordPieceDecoder
    from engine.pretokenizers import BertPreTokenizer

    tokenizer = Tokenizer(model, pre_tokenizer=BertPreTokenizer(), decoder=WordPieceDecoder(cleanup=False))
    text = " ".join(words)
    assert tokenizer.decode(tokenizer.encode(text)) == text


@settings(max_examples=100)
@given(st.text(alphabet="abc \n", max_size=30))
def test_char_level_round_trips(text: str) -> None:
    from engine.decoders import ConcatDecoder
    from engine.pretokenizers import RegexSplit
    from engine.trainers.baselines import CHAR_PATTERN

    model = CharLevel({"[UNK]": 0, "a": 1, "b": 2, "c": 3, " ": 4, "\n": 5})
    tokenizer = Tokenizer(model, pre_tokenizer=RegexSplit(CHAR_PATTERN), decoder=ConcatDecoder())
    assert tokenizer.decode(tokenizer.encode(text)) == text


# -------------------------------------------------------------------------- options and errors
@pytest.mark.parametrize(
    ("algorithm", "options", "message"),
    [
        ("wordlevel", {"vocab_size": 5}, r"vocab_size 5 leaves no room after the 5 special tokens; use vocab_size of at least 6"),
        ("wordlevel", {"normalizer": "nfq"}, r"Unknown normalizer 'nfq'"),
        ("char", {"unk_token": "<unk>"}, r"The unknown token '<unk>' is not among special_tokens"),
        ("char", {"min_frequency": 0}, r"min_frequency must be at least 1, not 0"),
        ("byte", {"special_tokens": ["a", "a"]}, r"special_tokens must be distinct"),
    ],
    ids=["word-too-small", "word-normalizer", "char-unk", "char-min-frequency", "byte-duplicates"],
)
def test_bad_options(corpus: Path, algorithm: str, options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        train(algorithm, [corpus], options)


def test_bad_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(b"ok \xff\xfe")
    with pytest.raises(FormatError, match=r"bad.txt: The corpus is not UTF-8 text \(byte 3 cannot be decoded\)"):
        train("char", [path], {})


def test_a_hf_wordlevel_without_vocab_is_a_format_error() -> None:
    with pytest.raises(FormatError, match="WordLevel model needs a \"vocab\" object"):
        WordLevel.from_hf({"type": "WordLevel", "vocab": ["a", "b"]})
    with pytest.raises(FormatError, match="The id of token 'a' must be a non-negative integer, not 'zero'"):
        WordLevel.from_hf({"type": "WordLevel", "vocab": {"a": "zero"}})


@pytest.mark.parametrize("algorithm", ["wordlevel", "char", "byte"])
def test_options_describe_themselves(algorithm: str) -> None:
    specs = {spec.name: spec for spec in option_specs(algorithm)}
    assert "special_tokens" in specs and all(spec.help for spec in specs.values())


def test_options_dataclasses_are_frozen() -> None:
    with pytest.raises(AttributeError):
        WordLevelOptions().vocab_size = 3  # type: ignore[misc]
    assert CharOptions().vocab_size is None
