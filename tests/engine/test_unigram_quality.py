"""Unigram against the real sentencepiece on a real fixture (held-out tokens within 1%), and
lossless defaults: text with tabs trains through the CLI, its .vocab reads back piece for
piece, newlines and tabs never become <unk>, and Hugging Face gives the same ids."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.cli import main
from engine.formats.spm import dumps_vocab, load_vocab, loads_vocab
from engine.models.unigram import BYTE_PIECES, Unigram
from engine.tokenizer import Tokenizer
from engine.trainers import train
from tests.shared_data import cs336_file


@pytest.fixture(scope="module")
def split_corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """corpus.en without every 10th line (for training), and those lines (held out)."""
    lines = cs336_file("corpus.en").read_text(encoding="utf-8").splitlines()
    path = tmp_path_factory.mktemp("unigram") / "train.txt"
    path.write_text("".join(line + "\n" for i, line in enumerate(lines) if i % 10 != 9), encoding="utf-8")
    return path, [line for i, line in enumerate(lines) if i % 10 == 9 and line.strip()]


def test_held_out_tokens_within_one_percent_of_sentencepiece(split_corpus: tuple[Path, list[str]], tmp_path: Path) -> None:
    spm = pytest.importorskip("sentencepiece")
    path, held = split_corpus
    spm.SentencePieceTrainer.train(
        input=str(path), model_prefix=str(tmp_path / "sp"), model_type="unigram", vocab_size=2000,
        character_coverage=0.9995, normalization_rule_name="identity", remove_extra_whitespaces=False,
        byte_fallback=True, num_threads=1, minloglevel=2,
    )
    theirs = spm.SentencePieceProcessor(model_file=str(tmp_path / "sp.model"))
    ours = train("unigram", [path], {"vocab_size": 2000}).tokenizer
    assert ours.vocab_size == theirs.get_piece_size() == 2000
    ours_tokens = sum(len(ours.encode_ordinary(line)) for line in held)
    their_tokens = sum(len(theirs.encode(line)) for line in held)
    assert ours_tokens <= 1.01 * their_tokens, (ours_tokens, their_tokens)
    # sentencepiece's ▁ behaviour: a dummy ▁ before every text, so the first word is "▁word" too,
    # and one before a text that begins with a space as well (" word" is "▁", "▁word").
    first = held[0].split()[0]
    assert theirs.id_to_piece(theirs.encode(" " + first)[0]) == ours.id_to_token(ours.encode_ordinary(" " + first)[0]) == "▁"
    assert ours.encode_ordinary(" " + first)[1:] == ours.encode_ordinary(first)


def test_cli_trains_on_text_with_tabs_and_the_vocab_reads_back(split_corpus: tuple[Path, list[str]], tmp_path: Path) -> None:
    path, _ = split_corpus
    tabbed = tmp_path / "tabbed.txt"
    tabbed.write_text(path.read_text(encoding="utf-8").replace(", ", ",\t").replace(". ", ".\t\t"), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["train", "--model", "unigram", "--vocab-size", "1200", "-o", str(out), str(tabbed)]) == 0
    tokenizer = Tokenizer.from_file(out / "tokenizer.json")
    model = tokenizer.model
    assert isinstance(model, Unigram) and model.byte_fallback
    assert any("\t" in piece for piece, _ in model.pieces())  # e.g. "▁\t": the piece the old writer refused
    assert load_vocab(out / "tokenizer.vocab").pieces() == model.pieces()
    text = "One line,\tthen a tab.\nAnother line\r\nand a rare ☃\n"
    ids = tokenizer.encode(text)
    assert model.unk_id not in ids
    assert tokenizer.decode(ids) == text
    hf = pytest.importorskip("tokenizers").Tokenizer.from_file(str(out / "tokenizer.json"))
    for line in [text, *tabbed.read_text(encoding="utf-8").splitlines()[::25]]:
        assert hf.encode(line, add_special_tokens=False).ids == tokenizer.encode(line)


@pytest.mark.parametrize("piece", ["\t", "▁\t", "a\tb", "\t\t", "x\t"], ids=repr)
def test_vocab_round_trip_with_tabs(piece: str) -> None:
    model = Unigram([("<unk>", 0.0)] + [(b, 0.0) for b in BYTE_PIECES] + [(piece, -1.5), ("a", -2.25)], byte_fallback=True)
    text = dumps_vocab(model)
    assert text.splitlines()[257] == f"{piece}\t-1.5"  # written as it is: split at the last tab
    again = loads_vocab(text)
    assert again.pieces() == model.pieces() and again.byte_fallback and again.unk_id == 0


def test_a_newline_piece_is_refused_with_the_reason() -> None:
    from engine.errors import FormatError

    with pytest.raises(FormatError, match=r"newline, which a \.vocab file cannot hold; export tokenizer.json"):
        dumps_vocab(Unigram([("<unk>", 0.0), ("a\nb", -1.0)]))
