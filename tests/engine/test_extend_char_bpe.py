"""Extending a character-level BPE (engine/extend/char_bpe.py): the exact new characters and merges
on a tiny Llama-style base, base ids unchanged, protected mode leaving text without opened-script
or fallback characters alone, Hugging Face interop, the refusals, the CLI and the real Llama 2."""

from __future__ import annotations

import functools
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import ConfigError
from engine.extend import ExtendOptions, Extension, build_report, extend_bpe
from engine.models.spm_bpe import SpmBPE
from engine.tokenizer import Tokenizer
from tests.engine.cli_run import run
from tests.heldout import declaration_lines

BYTES = [f"<0x{b:02X}>" for b in range(256)]
ZH = "中国 人 中国人\n" * 3 + "hello\n"
ENGLISH = "hello hole, he sells shoes\nThe lazy dog: 42 + 17 = 59!\n  two  spaces\n"


def tiny_json() -> dict[str, Any]:
    """A Llama 2 style tokenizer.json: byte fallback, ▁ for spaces, 中 but not 国 or 人."""
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2} | {piece: 3 + b for b, piece in enumerate(BYTES)}
    for token in ("▁", "h", "e", "l", "o", "中", "he", "▁he"):
        vocab[token] = len(vocab)
    specials = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
                 "special": True} for i, t in enumerate(["<unk>", "<s>", "</s>"])]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": specials,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
        "pre_tokenizer": None, "post_processor": None,
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"},
            {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": vocab, "merges": [["h", "e"], ["▁", "he"]]},
    }


def tiny() -> Tokenizer:
    return Tokenizer.from_json(json.dumps(tiny_json()))


def extend(base: Tokenizer, tmp_path: Path, text: str, **options: Any) -> Extension:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(text, encoding="utf-8")
    return extend_bpe(base, [corpus], ExtendOptions(**options))


def test_the_exact_characters_and_merges(tmp_path: Path) -> None:
    ext = extend(tiny(), tmp_path, ZH, add=6)
    # 人 and 国 (6 each; ties by code point) are new characters; Han is opened (2 of its 3 characters
    # are missing), so 中 may merge; (中, 国) ties (▁, 中) at 6 and wins, being the greater bytes.
    assert [(i, data.decode()) for i, data in ext.added] == [
        (267, "人"), (268, "国"), (269, "中国"), (270, "▁中国"), (271, "▁中国人"), (272, "▁人")]
    assert ext.merges == [(264, 268, 269, 6), (259, 269, 270, 6), (270, 267, 271, 3), (259, 267, 272, 3)]
    assert ext.symbols_added == (267, 268) and ext.unreachable == 0 and ext.duplicates_skipped == 0
    tok = ext.tokenizer
    assert tok.encode("中国人 人国", add_special_tokens=False) == [271, 272, 268]
    for line in ZH.splitlines():
        assert tok.decode(tok.encode(line, add_special_tokens=False)) == line


def test_base_ids_and_merges_are_unchanged(tmp_path: Path) -> None:
    base = tiny()
    tok = extend(base, tmp_path, ZH, add=6).tokenizer
    assert tok.vocab_size == base.vocab_size + 6
    assert all(tok.id_to_token(i) == base.id_to_token(i) for i in range(base.vocab_size))
    assert tok.special_tokens == base.special_tokens
    assert tok.model.merges[:2] == base.model.merges  # type: ignore[attr-defined]


def test_coverage_picks_the_most_frequent_characters(tmp_path: Path) -> None:
    text = "国国国 人\n" * 4  # 国 12 times, 人 4: 国 alone covers 75%
    assert [d.decode() for _, d in extend(tiny(), tmp_path, text, add=1).added] == ["国"]
    small = extend(tiny(), tmp_path, text, add=2, character_coverage=0.7)
    assert [d.decode() for _, d in small.added] == ["国", "国国"]
    capped = extend(tiny(), tmp_path, text, add=2)  # characters take at most half of the new tokens
    assert [d.decode() for _, d in capped.added] == ["国", "国国"]
    full = extend(tiny(), tmp_path, text, add=4)
    assert [d.decode() for _, d in full.added][:2] == ["国", "人"]


def test_unprotected_merges_english_too(tmp_path: Path) -> None:
    protected = extend(tiny(), tmp_path, "hello hello\n" * 4 + "国\n", add=3)
    assert [d.decode() for _, d in protected.added] == ["国"]
    unprotected = extend(tiny(), tmp_path, "hello hello\n" * 4 + "国\n", add=3, protected=False)
    # (▁he, l), (l, l) and (l, o) tie at 8: "▁he" starts with the greatest byte (0xE2).
    assert [d.decode() for _, d in unprotected.added] == ["国", "▁hel", "▁hell"]


_COVERED = st.text(st.sampled_from("helo XYZ?9\t\u200b"), max_size=40)  # covered, or never added


@settings(max_examples=60, deadline=None)
@given(_COVERED)
def test_text_without_opened_or_fallback_characters_keeps_its_ids(text: str) -> None:
    base, tok = _extended()
    assert tok.encode(text, add_special_tokens=False) == base.encode(text, add_special_tokens=False)


@functools.cache
def _extended() -> tuple[Tokenizer, Tokenizer]:
    base = tiny()
    with tempfile.TemporaryDirectory() as folder:  # not the working directory
        corpus = Path(folder, "c.txt")
        corpus.write_text(ZH + "hello 中国, hello 国人!\n" * 3 + "tab\there\n", encoding="utf-8")
        return base, extend_bpe(base, [corpus], ExtendOptions(add=20)).tokenizer


def test_report_and_english_identical(tmp_path: Path) -> None:
    base = tiny()
    report = build_report(extend(base, tmp_path, ZH, add=6), base, held_out="中国人\n人国", reference=ENGLISH)
    assert report["characters_added"] == 2 and report["pieces_added"] == 6 and report["merges_added"] == 4
    assert report["reference"]["lines_changed"] == 0
    # before: ▁ 中 + 3+3 bytes, and ▁ + 3+3 bytes; after: ▁中国人, and ▁人 国
    assert report["held_out"] | {} == {"lines": 2, "characters": 5, "tokens_before": 15, "tokens_after": 3,
                                       "tokens_per_char_before": 3.0, "tokens_per_char_after": 0.6, "drop": 0.8,
                                       "lines_changed": 2, "unknown_before": 0, "unknown_after": 0}


def test_hugging_face_loads_the_result(tmp_path: Path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    tok = extend(tiny(), tmp_path, ZH + "hello 中国, hello 国人!\n" * 3, add=12).tokenizer
    hf = tokenizers.Tokenizer.from_str(tok.to_json())
    for line in [*ZH.splitlines(), *ENGLISH.splitlines(), "中国人人国 hello 国中", "龘 中国 <0x41>"]:
        ids = tok.encode(line, add_special_tokens=False)
        assert hf.encode(line, add_special_tokens=False).ids == ids
        assert hf.decode(ids) == line and tok.decode(ids) == line


def test_nothing_new_and_bad_coverage_are_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^The corpus has nothing new to learn for this tokenizer: it holds no "
                                          r"character the base falls back on; turn protection off"):
        extend(tiny(), tmp_path, "hello 中\n" * 5, add=5)
    with pytest.raises(ConfigError, match=r"^character_coverage=0 must be a fraction above 0 and at most 1"):
        ExtendOptions(add=5, character_coverage=0)


def test_refusals_name_the_way_out(tmp_path: Path) -> None:
    prefixed = tiny_json()
    prefixed["model"]["continuing_subword_prefix"] = "##"
    prefixed["model"]["merges"] = []
    with pytest.raises(ConfigError, match=r"^Extending a character-level BPE with a continuing_subword_prefix "
                                          r"\('##'\) is not supported"):
        extend(Tokenizer.from_json(json.dumps(prefixed)), tmp_path, ZH, add=5)
    spm = Tokenizer(SpmBPE([("<unk>", 0.0), ("a", -1.0)], unk_id=0))
    with pytest.raises(ConfigError, match=r"^This sentencepiece BPE has no \.model to append to; extend its "
                                          r"tokenizer\.json form"):
        extend(spm, tmp_path, ZH, add=5)


def test_cli_extends_a_char_level_base(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, corpus = tmp_path / "base.json", tmp_path / "zh.txt"
    tiny().save(base)
    corpus.write_text(ZH * 3, encoding="utf-8")
    code, out, err = run(capsys, "extend", "-t", str(base), "--add", "4", "-o", str(tmp_path / "out"),
                         "--character-coverage", "0.9", str(corpus))
    assert (code, err) == (0, "")
    assert "Added 4 pieces (2 new characters, 2 merges) to a base of 267 tokens" in out
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["report.json", "tokenizer.json",
                                                                   "tokenizer_config.json"]
    extended = Tokenizer.from_file(tmp_path / "out" / "tokenizer.json")
    assert extended.encode("中国", add_special_tokens=False) == [270]


def test_llama2_extended_with_chinese(tmp_path: Path) -> None:
    """Llama 2 plus 1,000 tokens from the declaration in Chinese: English identical, Chinese shorter."""
    from tests.open_models import open_model_file

    base = Tokenizer.from_file(open_model_file("llama2"))
    lines = declaration_lines("zh", "zh-Hant")
    cut = len(lines) * 9 // 10
    ext = extend(base, tmp_path, "\n".join(lines[:cut]), add=1000)
    english = "\n".join([ENGLISH, *[line for line in Path(__file__).read_text(encoding="utf-8").splitlines()
                                    if line.isascii()]])
    report = build_report(ext, base, held_out="\n".join(lines[cut:]), reference=english)
    assert report["unreachable"] == 0 and report["characters_added"] > 0
    assert report["reference"]["lines_changed"] == 0
    assert report["held_out"]["drop"] >= 0.1  # 0.1355 measured: a small corpus, few merges occur twice
    tok = ext.tokenizer
    assert all(tok.id_to_token(i) == base.id_to_token(i) for i in range(base.vocab_size))
    tokenizers = pytest.importorskip("tokenizers")
    hf = tokenizers.Tokenizer.from_str(tok.to_json())
    for line in lines[cut:]:
        ids = tok.encode(line, add_special_tokens=False)
        assert hf.encode(line, add_special_tokens=False).ids == ids
        assert tok.decode(ids) == line
