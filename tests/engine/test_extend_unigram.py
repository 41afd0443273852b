"""Extending a Unigram base (engine/extend/unigram.py): new pieces after the base's ids with
scores estimated by EM on the corpus (the base's fixed), protected mode leaving English alone,
Hugging Face and sentencepiece interop, the refusals."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import ConfigError
from engine.extend import ExtendOptions, Extension, build_report, check_extendable, extend_bpe
from engine.tokenizer import Tokenizer
from engine.trainers import train

ENGLISH = "the cat sat on the mat\nthe dog sat on the log\nthe cat and the dog\n"
ZH = "中国人民 中国 人民 大学\n北京大学 中国人\n" * 10 + "the cat\n"


def tiny_unigram(tmp_path: Path) -> Tokenizer:
    corpus = tmp_path / "en.txt"
    corpus.write_text(ENGLISH * 20, encoding="utf-8")
    return train("unigram", [corpus], {"vocab_size": 40, "byte_fallback": False}).tokenizer


def extend(base: Tokenizer, tmp_path: Path, text: str, **options: Any) -> Extension:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(text, encoding="utf-8")
    return extend_bpe(base, [corpus], ExtendOptions(**options))


def test_the_exact_pieces_and_estimated_scores(tmp_path: Path) -> None:
    base = tiny_unigram(tmp_path)
    ext = extend(base, tmp_path, ZH, add=8)
    model = ext.tokenizer.model
    assert model.pieces()[:base.vocab_size] == base.model.pieces()  # ids and scores of the base unchanged
    new = model.pieces()[base.vocab_size:]
    assert [p for p, _ in new] == ["▁中国人", "大", "▁中国", "▁人", "▁大", "中", "人", "国"]
    assert [i for i, _ in ext.added] == list(range(24, 32))
    scores = [s for _, s in new]
    assert scores == sorted(scores, reverse=True) and len(set(scores)) > 1  # estimated, not a constant
    assert scores[0] == pytest.approx(-1.90912, abs=1e-4)
    assert scores[-3:] == [scores[-1]] * 3  # 中, 人 and 国 occur equally often
    assert min(s for p, s in base.model.pieces() if not p.startswith("<")) <= min(scores)
    assert ext.symbols_added == (25, 29, 30, 31) and ext.unreachable == 0 and ext.duplicates_skipped == 0
    assert ext.tokenizer.encode("中国人民大学") == [24, 0, 25, 0]  # ▁中国人 <unk> 大 <unk>: 民 and 学 were not added
    assert ext.tokenizer.decode(ext.tokenizer.encode("中国 大")) == "中国 大"


def test_protected_mode_leaves_english_alone(tmp_path: Path) -> None:
    base = tiny_unigram(tmp_path)
    ext = extend(base, tmp_path, ZH + ENGLISH * 5, add=10, min_frequency=1)
    assert all(any("\u4e00" <= ch <= "\u9fff" for ch in data.decode()) for _, data in ext.added)
    report = build_report(ext, base, held_out="中国人 大学\n", reference=ENGLISH + "a dog and a cat on a log\n")
    assert report["reference"]["lines_changed"] == 0 and report["unreachable"] == 0
    assert report["model"] == "unigram" and "slots_filled" not in report


def _protected() -> tuple[Tokenizer, Extension]:
    with tempfile.TemporaryDirectory() as workdir:
        base = tiny_unigram(Path(workdir))
        return base, extend(base, Path(workdir), ZH + ENGLISH * 5, add=10)


PROTECTED = _protected()


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="thecatsdogmn ,.!?'", max_size=40))
def test_protected_english_keeps_its_ids(text: str) -> None:
    assert PROTECTED[1].tokenizer.encode(text) == PROTECTED[0].encode(text)


def test_unprotected_mode_learns_english_pieces_too(tmp_path: Path) -> None:
    base = tiny_unigram(tmp_path)
    ext = extend(base, tmp_path, "mango slogan mango gadget\n" * 5, add=6, protected=False)
    assert [data.decode() for _, data in ext.added] == ["▁mango", "▁gadget", "▁slogan"]  # the rest was never used
    assert ext.tokenizer.encode("mango gadget") == [24, 25]


def test_hugging_face_gives_the_same_ids(tmp_path: Path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    base = tiny_unigram(tmp_path)
    ext = extend(base, tmp_path, ZH, add=12)
    hf = tokenizers.Tokenizer.from_str(ext.tokenizer.to_json())
    for line in ["中国人民 中国", "北京大学 中国人", "the cat sat on 中国 mat", "大 人 国"]:
        assert hf.encode(line).ids == ext.tokenizer.encode(line)


def test_a_sentencepiece_model_extends_into_a_model_sentencepiece_loads(tmp_path: Path) -> None:
    spm = pytest.importorskip("sentencepiece")
    from engine.formats.spm_model import dump_spm_model, load_spm_model

    corpus = tmp_path / "en.txt"
    corpus.write_text(ENGLISH * 20, encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(tmp_path / "m"), vocab_size=290,
                                   model_type="unigram", byte_fallback=True, hard_vocab_limit=False,
                                   minloglevel=2)
    base = load_spm_model((tmp_path / "m.model").read_bytes())
    ext = extend(base, tmp_path, ZH, add=8)
    assert [i for i, _ in ext.added] == list(range(base.vocab_size, base.vocab_size + 8))
    processor = spm.SentencePieceProcessor(model_proto=dump_spm_model(ext.tokenizer))
    assert processor.get_piece_size() == base.vocab_size + 8
    for line in ["中国人民 中国", "北京大学 中国人", "the cat sat on 中国 mat", ENGLISH.splitlines()[1]]:
        assert processor.encode(line) == ext.tokenizer.encode(line)
    assert ext.tokenizer.encode(ENGLISH) == base.encode(ENGLISH)


def test_nothing_new_is_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^The corpus has nothing new to learn for this tokenizer: it holds no "
                                          r"character the base lacks .*; turn protection off \(--unprotected\)"):
        extend(tiny_unigram(tmp_path), tmp_path, ENGLISH, add=5)


def test_add_past_the_vocabulary_limit_is_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"add=1,999,977 would take the vocabulary past the engine's limit"):
        extend(tiny_unigram(tmp_path), tmp_path, ZH, add=1_999_977)


def test_a_unigram_base_is_extendable(tmp_path: Path) -> None:
    assert check_extendable(tiny_unigram(tmp_path)).kind == "unigram"
