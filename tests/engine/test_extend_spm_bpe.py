"""Extending a sentencepiece BPE .model (engine/extend/spm_bpe.py): pieces appended to the proto with
scores below the base's, the base's pieces and scores unchanged, protected English exact, the
written .model giving our ids in sentencepiece, and Chinese in far fewer tokens."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.extend import ExtendOptions, build_report, extend_bpe
from engine.formats.spm_model import dump_spm_model, load_spm_model
from engine.formats.spm_proto import NORMAL
from tests.engine.spm_samples import chinese, english, train_spm

spm = pytest.importorskip("sentencepiece")


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return train_spm(tmp_path_factory.mktemp("spm_bpe"), "en", english(3000, 1), model_type="bpe", vocab_size=330,
                     byte_fallback=True)


@pytest.mark.parametrize("protected", [True, False], ids=["protected", "unprotected"])
def test_a_model_base_grows_its_proto_and_sentencepiece_agrees(base: bytes, tmp_path: Path, protected: bool) -> None:
    tokenizer = load_spm_model(base)
    corpus = tmp_path / "zh.txt"
    corpus.write_text("\n".join(chinese(2000, 2) + english(200, 7)), encoding="utf-8")
    ext = extend_bpe(tokenizer, [corpus], ExtendOptions(add=40, protected=protected, character_coverage=1.0))
    proto = ext.tokenizer.spm_proto  # type: ignore[attr-defined]
    old = tokenizer.spm_proto  # type: ignore[attr-defined]
    assert proto.pieces[:len(old.pieces)] == old.pieces  # the base's pieces, types and scores
    new = proto.pieces[len(old.pieces):]
    assert [p.piece for p in new] == [data.decode() for _, data in ext.added] and len(new) == 40
    assert all(p.type == NORMAL for p in new)
    lowest = min(p.score for p in old.pieces if p.type == NORMAL)
    assert [p.score for p in new] == [lowest - 1 - k for k in range(40)]  # after every base piece, in order
    assert ext.unreachable == 0
    data = dump_spm_model(ext.tokenizer)
    reference = spm.SentencePieceProcessor(model_proto=data)
    held_out = english(200, 3) + chinese(200, 4) + ["人工智能是计算机科学、心理学、哲学等学科融合的交叉学科。"]
    for line in held_out:
        assert ext.tokenizer.encode_ordinary(line) == reference.encode(line), line
        assert ext.tokenizer.decode(reference.encode(line)) == line
    report = build_report(ext, tokenizer, reference="\n".join(english(200, 3)), held_out="\n".join(chinese(200, 4)))
    if protected:
        assert all(any("\u4e00" <= c <= "\u9fff" for c in data.decode()) for _, data in ext.added)
        assert report["reference"]["lines_changed"] == 0
    assert report["held_out"]["drop"] >= 0.4


def test_a_base_with_the_mark_after_words_learns_pieces_that_end_with_it(tmp_path: Path) -> None:
    # treat_whitespace_as_suffix: "the cat" is "the▁cat▁", so words are cut after each ▁, and a
    # new piece holds a ▁ only at its end, as the base's own pieces do (before, "▁cat" pieces).
    data = train_spm(tmp_path, "suffix", english(3000, 1), model_type="bpe", vocab_size=330, byte_fallback=True,
                     treat_whitespace_as_suffix=True)
    tokenizer = load_spm_model(data)
    corpus = tmp_path / "more.txt"
    corpus.write_text("\n".join(english(2000, 5) + ["a tall green tree by the park"] * 200), encoding="utf-8")
    ext = extend_bpe(tokenizer, [corpus], ExtendOptions(add=20, protected=False))
    added = [piece.decode() for _, piece in ext.added]
    assert any(p.endswith("▁") for p in added) and not any("▁" in p[:-1] for p in added)
    reference = spm.SentencePieceProcessor(model_proto=dump_spm_model(ext.tokenizer))
    for line in english(100, 6) + ["a tall green tree by the park"]:
        assert ext.tokenizer.encode_ordinary(line) == reference.encode(line), line
