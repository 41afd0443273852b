"""Trainer options are validated in one pass, and every problem names its option (issue #13, item 2).

The web form puts each message beside its field and the CLI names the flag, both from
``ConfigError.option``: neither reads the sentence to find the field.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.cli import main
from engine.errors import ConfigError
from engine.trainers import make_options
from engine.trainers.bpe import BpeOptions
from engine.trainers.unigram.options import UnigramOptions
from engine.trainers.wordpiece_options import WordPieceOptions


def _problems(algorithm: str, values: dict[str, object]) -> dict[str | None, str]:
    with pytest.raises(ConfigError) as caught:
        make_options(algorithm, values)
    return {problem.option: str(problem) for problem in caught.value.problems}


def test_one_pass_reports_every_bad_option_with_its_name() -> None:
    problems = _problems("bpe", {"vocab_size": "ten", "min_frequency": "-1", "level": "word",
                                 "max_token_length": "0"})
    assert problems == {
        "vocab_size": "Option vocab_size must be a whole number, not 'ten'.",
        "min_frequency": "min_frequency=-1 must be 0 or more.",
        "level": "level='word' must be one of: byte, char, spm.",
        "max_token_length": "max_token_length=0 must be 1 or more (or empty).",
    }


def test_the_error_joins_the_messages_and_a_single_problem_is_the_error_itself() -> None:
    with pytest.raises(ConfigError) as caught:
        make_options("wordpiece", {"min_frequency": -1, "max_input_chars_per_word": 0})
    assert str(caught.value) == ("min_frequency must be 0 or more, not -1. "
                                 "max_input_chars_per_word must be at least 1, not 0.")
    with pytest.raises(ConfigError) as single:
        make_options("wordpiece", {"min_frequency": -1})
    assert single.value.problems == (single.value,)
    assert single.value.option == "min_frequency"


@pytest.mark.parametrize(("options", "option", "message"), [
    pytest.param(lambda: WordPieceOptions(vocab_size=4), "vocab_size",
                 "vocab_size 4 is smaller than the 5 special tokens plus the alphabet; use vocab_size of at least 6.",
                 id="wordpiece-vocab-below-alphabet"),
    pytest.param(lambda: BpeOptions(vocab_size=100), "vocab_size",
                 "vocab_size=100 must be between 257 (the 1 special tokens + 256 bytes) and 1,000,000; "
                 "pass a vocab_size in that range.", id="bpe-vocab-below-bytes"),
    pytest.param(lambda: UnigramOptions(vocab_size=5000, seed_size=4000), "seed_size",
                 "seed_size 4000 is smaller than vocab_size 5000; raise seed_size.", id="unigram-seed-below-vocab"),
    pytest.param(lambda: WordPieceOptions(unk_token="<unk>"), "unk_token",
                 "The unknown token '<unk>' is not among special_tokens "
                 "['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']; add it.", id="wordpiece-unk-not-special"),
])
def test_a_rule_across_fields_names_the_field_to_change(options: object, option: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        options()  # type: ignore[operator]
    assert (caught.value.option, str(caught.value)) == (option, message)


def test_a_bad_regex_names_the_pretokenizer_field() -> None:
    with pytest.raises(ConfigError) as caught:
        make_options("bpe", {"pretokenizer": "(unclosed"})
    assert caught.value.option == "pretokenizer"
    assert "not a valid regex" in str(caught.value)


def test_an_unreadable_value_gets_one_problem_and_the_rest_are_still_checked() -> None:
    with pytest.raises(ConfigError) as caught:
        make_options("unigram", {"vocab_size": "lots", "seed_size": "100", "n_sub_iterations": "0"})
    assert [(p.option, str(p)) for p in caught.value.problems] == [
        ("vocab_size", "Option vocab_size must be a whole number, not 'lots'."),
        ("n_sub_iterations", "n_sub_iterations must be at least 1, not 0."),
        ("seed_size", "seed_size 100 is smaller than vocab_size 8000; raise seed_size."),  # the default stood in
    ]


def test_every_single_field_check_of_every_trainer_names_its_option() -> None:
    cases = {
        "bpe": {"special_tokens": ["a", "a"], "unk_token": "", "end_of_word_suffix": "", "num_workers": 10**6},
        "wordpiece": {"score": "x", "normalizer": "x", "limit_alphabet": 0, "continuing_subword_prefix": "",
                      "template": "[CLS] [SEP]"},
        "unigram": {"character_coverage": 2.0, "shrinking_factor": 0.0, "max_piece_length": 0, "n_sub_iterations": 0},
        "wordlevel": {"min_frequency": 0, "normalizer": "x", "vocab_size": 2},
        "char": {"unk_token": "<unk>"},
        "byte": {"special_tokens": ["", "x"]},
    }
    for algorithm, values in cases.items():
        assert set(_problems(algorithm, values)) == set(values), algorithm


def test_the_cli_names_the_flag_of_each_bad_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("the cat sat on the mat\n" * 20, encoding="utf-8")
    code = main(["train", "--model", "bpe", "--vocab-size", "10", "--min-frequency", "-1",
                 "--special-token", "<s>", "--special-token", "<s>", "-o", str(tmp_path / "out"), str(corpus)])
    assert code == 1
    assert capsys.readouterr().err == (
        "tokenforge train: error: --vocab-size=10 must be between 258 (the 2 special tokens + 256 bytes) and "
        "1,000,000; pass a --vocab-size in that range. The special tokens ['<s>', '<s>'] must be distinct and "
        "non-empty. --min-frequency=-1 must be 0 or more.\n")


@pytest.mark.parametrize("algorithm", ["bpe", "byte"])
def test_an_empty_list_field_means_no_items_not_a_missing_value(algorithm: str) -> None:
    # The web form sends a cleared "Special tokens" box as an empty string.
    assert make_options(algorithm, {"special_tokens": ""}).special_tokens == ()
    assert make_options(algorithm, {"special_tokens": "<|a|>\n\n<|b|>\n"}).special_tokens == ("<|a|>", "<|b|>")


def test_an_empty_special_tokens_field_is_judged_by_the_trainers_own_rule() -> None:
    with pytest.raises(ConfigError) as error:
        make_options("wordpiece", {"special_tokens": ""})
    assert (error.value.option, str(error.value)) == (
        "unk_token", "The unknown token '[UNK]' is not among special_tokens []; add it.")
