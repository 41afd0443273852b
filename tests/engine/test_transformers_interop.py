"""The ``tokenizer.json`` we export loads in ``transformers`` and encodes held-out text to our ids.

A BPE and a WordPiece are trained by us on the source of one standard-library module and
compared on text they never saw (another module's source, and a few hand-picked lines with
accents, CJK, emoji, odd spacing and a special token). ``transformers`` reads the file through
``PreTrainedTokenizerFast(tokenizer_file=...)``, the way a user loads it, with the hub switched
off so nothing is ever downloaded.
"""

from __future__ import annotations

import argparse
import inspect
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

from engine.tokenizer import Tokenizer
from engine.trainers import train

HELD_OUT = [
    "The quick brown fox jumps over the lazy dog.",
    "Ünïcödé  ACCENTS, naïve café: déjà vu!",
    "中文字符 and 日本語 mixed with English.",
    "emoji 🙂🚀 and tabs\tand  double  spaces\nnew lines\n\n",
    "numbers 1234567 3.14159 and symbols #$%&*(){}[]",
    "x",
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """About 100 KB of English prose and code: the source of ``argparse``."""
    path = tmp_path_factory.mktemp("interop") / "corpus.txt"
    path.write_text(inspect.getsource(argparse), encoding="utf-8")
    return path


def held_out() -> list[str]:
    """Text the trainers never saw: ``textwrap``'s source, in lines, and the hand-picked lines."""
    return [line for line in inspect.getsource(textwrap).splitlines(keepends=True) if line.strip()][:200] + HELD_OUT


def load_in_transformers(transformers: ModuleType, tokenizer: Tokenizer, folder: Path) -> object:
    path = folder / "tokenizer.json"
    tokenizer.save(path)
    return transformers.PreTrainedTokenizerFast(tokenizer_file=str(path))


def test_bpe_gives_the_same_ids_in_transformers(transformers: ModuleType, corpus: Path, tmp_path: Path) -> None:
    ours = train("bpe", [corpus], {"vocab_size": 600, "special_tokens": ["<|endoftext|>"]}).tokenizer
    theirs = load_in_transformers(transformers, ours, tmp_path)
    assert theirs.vocab_size + len(theirs.added_tokens_decoder) >= ours.vocab_size  # type: ignore[attr-defined]
    merged = 0
    for text in held_out():
        ids = ours.encode(text)
        assert theirs.encode(text, add_special_tokens=False) == ids, text  # type: ignore[attr-defined]
        assert theirs.decode(ids) == ours.decode(ids) == text  # type: ignore[attr-defined]
        merged += len(text.encode()) - len(ids)
    assert merged > 1000  # the merges were used, not just the 256 bytes
    with_special = "end of one story<|endoftext|>Once upon a time"
    assert theirs.encode(with_special, add_special_tokens=False) == ours.encode(  # type: ignore[attr-defined]
        with_special, allowed_special="all")
    assert ours.encode("<|endoftext|>", allowed_special="all") == [ours.token_to_id("<|endoftext|>")]


def test_wordpiece_gives_the_same_ids_in_transformers(transformers: ModuleType, corpus: Path,
                                                      tmp_path: Path) -> None:
    ours = train("wordpiece", [corpus], {"vocab_size": 400, "template": "[CLS] $A [SEP]"}).tokenizer
    theirs = load_in_transformers(transformers, ours, tmp_path)
    unknown = ours.token_to_id("[UNK]")
    pieces = 0
    for text in held_out():
        ids = ours.encode(text)
        assert theirs.encode(text) == ids, text  # type: ignore[attr-defined]
        assert theirs.encode(text, add_special_tokens=False) == ours.encode(text, add_special_tokens=False), text  # type: ignore[attr-defined]
        assert ids[0] == ours.token_to_id("[CLS]") and ids[-1] == ours.token_to_id("[SEP]")
        pieces += sum(1 for i in ids if i != unknown)
    assert pieces > 1000


def test_wordpiece_decodes_as_in_transformers(transformers: ModuleType, corpus: Path, tmp_path: Path) -> None:
    ours = train("wordpiece", [corpus], {"vocab_size": 400}).tokenizer
    theirs = load_in_transformers(transformers, ours, tmp_path)
    ids = ours.encode("The parser's Usage: message, don't.")
    assert theirs.decode(ids) == ours.decode(ids)  # type: ignore[attr-defined]


def test_unigram_with_its_default_byte_fallback_gives_the_same_ids_and_text_in_transformers(
        transformers: ModuleType, corpus: Path, tmp_path: Path) -> None:
    # The byte pieces spell what the corpus never had (accents, CJK, emoji): transformers must turn
    # them back into those characters, not print "<0xC3><0xA9>".
    ours = train("unigram", [corpus], {"vocab_size": 800}).tokenizer
    theirs = load_in_transformers(transformers, ours, tmp_path)
    bytes_used = 0
    for text in held_out():
        ids = ours.encode(text)
        assert theirs.encode(text, add_special_tokens=False) == ids, text  # type: ignore[attr-defined]
        assert theirs.decode(ids) == ours.decode(ids), text  # type: ignore[attr-defined]
        bytes_used += sum(1 for i in ids if ours.id_to_token(i).startswith("<0x"))
    assert ours.decode(ours.encode("café 日本")) == "café 日本" and bytes_used > 20


def test_the_wordpiece_decoder_follows_hugging_face_token_by_token() -> None:
    decoders = pytest.importorskip("tokenizers.decoders")
    from engine.decoders import WordPieceDecoder

    tokens = ["##a", "b", "##c", "'", "s", "do", "not", ".", "x", "n't", " do not", "?", "##!"]
    assert WordPieceDecoder().decode([t.encode() for t in tokens]).decode() == decoders.WordPiece().decode(tokens)
    assert WordPieceDecoder(cleanup=False).decode([t.encode() for t in tokens]).decode() == \
        decoders.WordPiece(cleanup=False).decode(tokens)
