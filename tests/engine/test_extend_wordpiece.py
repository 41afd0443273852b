"""Extending a WordPiece base (engine/extend/wordpiece.py): new tokens take the [unused…] slots'
ids first, then are appended; the base's other ids unchanged; protected mode leaving English
alone; Hugging Face interop; the refusals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import ConfigError
from engine.extend import ExtendOptions, Extension, build_report, check_extendable, extend_bpe, report_lines
from engine.tokenizer import Tokenizer
from engine.trainers import train

ENGLISH = "the cat sat on the mat\nthe dog sat on the log\nthe cat and the dog\n"
ZH = "中国人民 中国 人民\n中国人 人民 中国\n" * 5 + "the cat\n"
SPECIALS = ["[PAD]", *(f"[unused{i}]" for i in range(10)), "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def tiny_bert(tmp_path: Path) -> Tokenizer:
    """A BERT-like base trained on English: [PAD], [unused0..9] (plain vocabulary entries, as in
    BERT's tokenizer.json), [UNK], [CLS], [SEP], [MASK], then the alphabet and merges."""
    corpus = tmp_path / "en.txt"
    corpus.write_text(ENGLISH * 20, encoding="utf-8")
    doc = json.loads(train("wordpiece", [corpus], {"vocab_size": 70, "special_tokens": SPECIALS}).tokenizer.to_json())
    doc["added_tokens"] = [t for t in doc["added_tokens"] if not t["content"].startswith("[unused")]
    return Tokenizer.from_json(json.dumps(doc))


def extend(base: Tokenizer, tmp_path: Path, text: str, **options: Any) -> Extension:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(text, encoding="utf-8")
    return extend_bpe(base, [corpus], ExtendOptions(**options))


def test_new_tokens_fill_the_unused_slots_first(tmp_path: Path) -> None:
    base = tiny_bert(tmp_path)
    assert [base.id_to_token(i) for i in range(1, 11)] == [f"[unused{i}]" for i in range(10)]
    ext = extend(base, tmp_path, ZH, add=8)
    got = [(i, data.decode()) for i, data in ext.added]
    assert got == EXPECTED_SLOTS
    assert ext.tokenizer.vocab_size == base.vocab_size == 47  # no new row while slots are left
    assert ext.slots_filled == 7 and ext.unreachable == 0 and ext.symbols_added == (1, 2, 3, 4)
    base_vocab, new_vocab = base.model.vocab(), ext.tokenizer.model.vocab()
    for token, token_id in base_vocab.items():  # only the used slots changed
        if token_id > 7:
            assert new_vocab[token] == token_id
    assert ext.tokenizer.encode("中国人民", add_special_tokens=False) == EXPECTED_ZH_IDS
    report = build_report(ext, base, held_out="中国人民 中国\n", reference=ENGLISH)
    assert report["slots_filled"] == 7 and report["appended"] == 0 and report["new_embedding_rows"] == 0
    assert report["reference"]["lines_changed"] == 0
    assert report["held_out"]["tokens_before"] == 2 and report["held_out"]["tokens_after"] == 2  # [UNK] [UNK]
    assert report["held_out"]["unknown_before"] == 2 and report["held_out"]["unknown_after"] == 0  # readable now
    assert "unknown tokens 2 -> 0;" in report_lines(report)[3]
    assert ext.tokenizer.encode("中国人民 中国", add_special_tokens=False) == [7, 5]
    assert report_lines(report)[0].startswith("Added 7 wordpiece pieces (4 new characters) to a base of 47 tokens: "
                                              "7 took [unused] slots' ids, 0 were appended;")


# The four most frequent missing forms (the budget's half), then the merges, most frequent first.
EXPECTED_SLOTS = [(1, "##国"), (2, "中"), (3, "##民"), (4, "##人"), (5, "中国"), (6, "中国人"), (7, "中国人民")]
EXPECTED_ZH_IDS = [7]


def test_past_the_slots_tokens_are_appended(tmp_path: Path) -> None:
    base = tiny_bert(tmp_path)
    text = "中国人民 中国 人民 北京 大学 北京大学\n" * 6 + "中国人 大学 人民 北京\n" * 4
    ext = extend(base, tmp_path, text, add=14)
    assert [(i, data.decode()) for i, data in ext.added][-2:] == [(10, "中国人"), (47, "中国人民")]
    assert [i for i, _ in ext.added] == [*range(1, 11), 47]
    assert ext.slots_filled == 10 and ext.tokenizer.vocab_size == 48
    report = build_report(ext, base)
    assert (report["slots_filled"], report["appended"], report["new_embedding_rows"]) == (10, 1, 1)


def test_protected_mode_leaves_english_alone(tmp_path: Path) -> None:
    base = tiny_bert(tmp_path)
    ext = extend(base, tmp_path, ZH + ENGLISH * 5, add=8, min_frequency=1)
    assert all(any("\u4e00" <= ch <= "\u9fff" for ch in data.decode()) for _, data in ext.added)
    for line in [*ENGLISH.splitlines(), "a dog and a cat on a log", "unseen words: hat, bat!"]:
        assert ext.tokenizer.encode(line) == base.encode(line)


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="thecatsdogmn ,.!?'", max_size=40))
def test_protected_english_keeps_its_ids(text: str) -> None:
    assert PROTECTED[1].tokenizer.encode(text) == PROTECTED[0].encode(text)


def _protected() -> tuple[Tokenizer, Extension]:
    import tempfile

    with tempfile.TemporaryDirectory() as workdir:
        base = tiny_bert(Path(workdir))
        return base, extend(base, Path(workdir), ZH + ENGLISH * 5, add=8, min_frequency=1)


PROTECTED = _protected()


def test_unprotected_mode_learns_english_merges_too(tmp_path: Path) -> None:
    base = tiny_bert(tmp_path)
    ext = extend(base, tmp_path, ZH + "mango slogan mango\n" * 5, add=12, protected=False)
    assert [data.decode() for _, data in ext.added][-2:] == ["man", "mang"]
    assert ext.tokenizer.encode("mango", add_special_tokens=False) != base.encode("mango", add_special_tokens=False)


def test_hugging_face_gives_the_same_ids(tmp_path: Path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    base = tiny_bert(tmp_path)
    ext = extend(base, tmp_path, ZH, add=12, min_frequency=1)
    hf = tokenizers.Tokenizer.from_str(ext.tokenizer.to_json())
    for line in ["中国人民 中国", "人民中国人", "the cat sat on 中国 mat", "北京 中国"]:
        assert hf.encode(line).ids == ext.tokenizer.encode(line)
        if 11 not in hf.encode(line).ids:  # no [UNK] ("##中" is not in this corpus), which HF's decode skips
            assert hf.decode(hf.encode(line).ids) == ext.tokenizer.decode(ext.tokenizer.encode(line))


def test_nothing_new_is_one_sentence(tmp_path: Path) -> None:
    base = tiny_bert(tmp_path)
    with pytest.raises(ConfigError, match=r"^The corpus has nothing new to learn for this tokenizer: it holds no "
                                          r"character the base lacks .*; turn protection off \(--unprotected\)"):
        extend(base, tmp_path, ENGLISH, add=5)


def test_add_past_the_vocabulary_limit_is_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"add=1,999,954 would take the vocabulary past the engine's limit"):
        extend(tiny_bert(tmp_path), tmp_path, ZH, add=1_999_954)


def test_a_wordpiece_base_is_extendable(tmp_path: Path) -> None:
    assert check_extendable(tiny_bert(tmp_path)).kind == "wordpiece"
