"""BERT vocab.txt: reading, writing, and a BERT tokenizer that matches Hugging Face's."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import FormatError
from engine.formats.vocab_txt import load_bert_tokenizer, read_vocab_txt, write_vocab_txt

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "hug", "##s", "un", "##able", "a", "b", "c", "中", "!", "."]


def test_write_then_read_gives_the_same_vocabulary(tmp_path: Path) -> None:
    path = tmp_path / "vocab.txt"
    write_vocab_txt({t: i for i, t in enumerate(VOCAB)}, path)
    assert path.read_text(encoding="utf-8") == "".join(f"{t}\n" for t in VOCAB)
    assert read_vocab_txt(path) == {t: i for i, t in enumerate(VOCAB)}


def test_crlf_line_ends_and_a_missing_final_newline_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "vocab.txt"
    path.write_bytes(b"[UNK]\r\na b\r\nc")
    assert read_vocab_txt(path) == {"[UNK]": 0, "a b": 1, "c": 2}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"a\n\nb\n", r"vocab.txt, line 2: The line is empty; vocab.txt has one token per line."),
        (b"a\nb\na\n", r"vocab.txt, line 3: The token 'a' already appeared on line 1; each token must appear once."),
        (b"a\n\xff\n", r"vocab.txt: The file is not UTF-8 \(byte 2 cannot be decoded\)."),
        (b"", r"vocab.txt: The file has no tokens."),
    ],
    ids=["empty-line", "duplicate", "not-utf8", "empty-file"],
)
def test_bad_files_name_the_line(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "vocab.txt"
    path.write_bytes(content)
    with pytest.raises(FormatError, match=message):
        read_vocab_txt(path)


@pytest.mark.parametrize(
    ("vocab", "message"),
    [
        ({"a": 0, "b": 2}, r"id 1 is missing \(the next token, 'b', has id 2\)"),
        ({"a": 0, "b\nc": 1}, r"The token 'b\\nc' \(id 1\) cannot be written on one vocab.txt line"),
    ],
    ids=["gap", "newline"],
)
def test_unwritable_vocabularies(tmp_path: Path, vocab: dict[str, int], message: str) -> None:
    with pytest.raises(FormatError, match=message):
        write_vocab_txt(vocab, tmp_path / "vocab.txt")


@pytest.mark.parametrize("lowercase", [True, False], ids=["uncased", "cased"])
def test_bert_tokenizer_matches_hugging_face(tmp_path: Path, lowercase: bool) -> None:
    path = tmp_path / "vocab.txt"
    write_vocab_txt({t: i for i, t in enumerate(VOCAB)}, path)
    ours = load_bert_tokenizer(path, lowercase=lowercase)
    hf = pytest.importorskip("tokenizers")  # Hugging Face's library, to compare with
    theirs = hf.BertWordPieceTokenizer(str(path), lowercase=lowercase)
    for text in ["The hugs! unable.", "THE Hugs 中中 abc", "Ünable\tthe\u00a0hug", "x"]:
        assert ours.encode(text) == theirs.encode(text).ids
    assert ours.decode(ours.encode("the hugs!"), skip_special_tokens=True) == ("the hugs!" if lowercase else "the hugs!")


def test_a_vocabulary_without_unk_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "vocab.txt"
    path.write_text("a\nb\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"has no \[UNK\] token, which WordPiece needs"):
        load_bert_tokenizer(path)
