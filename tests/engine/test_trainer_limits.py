"""Trainer options that cost processes, memory or time are bounded (issue #11, finding 4).

``opt-num_workers=48`` once took a 2-CPU server from 7 to 56 processes. Every trainer now
refuses such values in its options, so the library, ``tokenforge train`` and the web form all
answer with the same ConfigError naming the value and the limit.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.cli import main
from engine.errors import ConfigError
from engine.limits import MAX_SPECIAL_TOKENS
from engine.trainers import make_options, train
from engine.trainers.counting import count_pretokens
from engine.trainers.limits import (
    MAX_PIECE_LENGTH,
    MAX_SEED_SIZE,
    MAX_SHRINKING_FACTOR,
    MAX_SUB_ITERATIONS,
    MAX_VOCAB,
    MAX_WORKERS,
    cpu_count,
    max_workers,
)


def test_num_workers_above_the_cpus_is_refused_with_the_limit() -> None:
    cpus = cpu_count()
    with pytest.raises(ConfigError) as caught:
        make_options("bpe", {"num_workers": "48"} if cpus < 48 else {"num_workers": str(MAX_WORKERS + 1)})
    if cpus < 48:
        plural = "s" if cpus != 1 else ""
        assert str(caught.value) == (
            f"num_workers=48 must be between 1 and {cpus} (this machine has {cpus} CPU{plural}); "
            "pass a smaller num_workers, or leave it empty for one per CPU.")
    assert make_options("bpe", {"num_workers": str(max_workers())}).num_workers == max_workers()  # type: ignore[attr-defined]


def test_num_workers_has_a_hard_ceiling_whatever_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.sched_getaffinity", lambda _pid: set(range(256)))
    assert max_workers() == MAX_WORKERS
    with pytest.raises(ConfigError, match=rf"^num_workers=100 must be between 1 and {MAX_WORKERS} "
                                          rf"\(the limit is {MAX_WORKERS} processes\)"):
        make_options("bpe", {"num_workers": 100})
    with pytest.raises(ConfigError, match=r"num_workers=123456789012… \(40 digits\) must be between"):
        make_options("bpe", {"num_workers": "1234567890" * 4})


def test_count_pretokens_never_starts_more_than_the_ceiling(tmp_path: Path) -> None:
    path = tmp_path / "c.txt"
    path.write_text("a b c\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=f"num_workers={MAX_WORKERS + 1} must be between 1 and {MAX_WORKERS}"):
        count_pretokens([path], split="whitespace", num_workers=MAX_WORKERS + 1)


@pytest.mark.parametrize(
    ("algorithm", "options", "message"),
    [
        pytest.param("bpe", {"vocab_size": MAX_VOCAB + 1},
                     f"vocab_size={MAX_VOCAB + 1} must be between 257 (the 1 special tokens + 256 bytes) and 1,000,000",
                     id="bpe-vocab"),
        pytest.param("wordpiece", {"vocab_size": 10**12},
                     "vocab_size=1000000000000 is above the limit of 1,000,000; pass vocab_size of at most 1,000,000.",
                     id="wordpiece-vocab"),
        pytest.param("wordlevel", {"vocab_size": MAX_VOCAB + 1},
                     "vocab_size=1000001 is above the limit of 1,000,000", id="wordlevel-vocab"),
        pytest.param("char", {"vocab_size": MAX_VOCAB + 1},
                     "vocab_size=1000001 is above the limit of 1,000,000", id="char-vocab"),
        pytest.param("unigram", {"vocab_size": MAX_VOCAB + 1, "seed_size": MAX_VOCAB + 1},
                     "vocab_size=1000001 is above the limit of 1,000,000", id="unigram-vocab"),
        pytest.param("unigram", {"seed_size": MAX_SEED_SIZE + 1},
                     "seed_size=10000001 is above the limit of 10,000,000; pass seed_size of at most 10,000,000 "
                     "(1,000,000 is sentencepiece's default).", id="unigram-seed"),
        pytest.param("unigram", {"max_piece_length": 10**6},
                     f"max_piece_length=1000000 is above the limit of {MAX_PIECE_LENGTH:,}; pass max_piece_length "
                     f"of at most {MAX_PIECE_LENGTH} (16 is sentencepiece's default).", id="unigram-piece-length"),
        pytest.param("unigram", {"n_sub_iterations": 10**6},
                     f"n_sub_iterations=1000000 is above the limit of {MAX_SUB_ITERATIONS}; pass n_sub_iterations "
                     f"of at most {MAX_SUB_ITERATIONS} (2 is sentencepiece's default).", id="unigram-em-iterations"),
        pytest.param("unigram", {"shrinking_factor": 0.9999},
                     f"shrinking_factor must be above 0 and at most {MAX_SHRINKING_FACTOR:g}, not 0.9999 (closer to 1, "
                     "pruning takes ever more rounds); 0.75 is sentencepiece's default.", id="unigram-shrinking"),
        pytest.param("bpe", {"special_tokens": [f"<s{i}>" for i in range(MAX_SPECIAL_TOKENS + 1)]},
                     "special_tokens lists 8,193 tokens, above the limit of 8,192; keep the special tokens your "
                     "models really use.", id="bpe-specials"),
        pytest.param("unigram", {"special_tokens": [f"<s{i}>" for i in range(MAX_SPECIAL_TOKENS + 1)]},
                     "special_tokens lists 8,193 tokens", id="unigram-specials"),
        pytest.param("byte", {"special_tokens": [f"<s{i}>" for i in range(MAX_SPECIAL_TOKENS + 1)]},
                     "special_tokens lists 8,193 tokens", id="byte-specials"),
    ],
)
def test_costly_options_are_bounded(algorithm: str, options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        make_options(algorithm, options)
    assert str(caught.value).startswith(message)


def test_the_limits_themselves_are_accepted() -> None:
    options = make_options("unigram", {"vocab_size": MAX_VOCAB, "seed_size": MAX_SEED_SIZE,
                                       "max_piece_length": MAX_PIECE_LENGTH, "n_sub_iterations": MAX_SUB_ITERATIONS,
                                       "shrinking_factor": MAX_SHRINKING_FACTOR})
    assert options.max_piece_length == MAX_PIECE_LENGTH  # type: ignore[attr-defined]
    assert make_options("wordpiece", {"vocab_size": MAX_VOCAB}).vocab_size == MAX_VOCAB  # type: ignore[attr-defined]


def test_the_library_refuses_before_reading_the_corpus(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="num_workers=1000 must be between 1 and"):
        train("bpe", [tmp_path / "never-read.txt"], {"num_workers": 1000})


def test_the_cli_reports_the_limit_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("the cat sat on the mat\n" * 20, encoding="utf-8")
    code = main(["train", "--model", "bpe", "--num-workers", "1000", "-o", str(tmp_path / "out"), str(corpus)])
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("tokenforge train: error: --num-workers=1000 must be between 1 and ")  # the flag, not the field
    assert err.count("\n") == 1
    assert not (tmp_path / "out" / "tokenizer.json").exists()
