"""Extending a byte-level BPE (engine/extend, ``tokenforge extend``): the exact merges learned on a
tiny base, base ids unchanged, protected mode leaving text without fallback characters alone,
Hugging Face interop, the bad-input sentences and the command line."""

from __future__ import annotations

import functools
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import ConfigError
from engine.extend import ExtendOptions, Extension, build_report, extend_bpe
from engine.extend.protect import covered_chars
from engine.models.baselines import WordLevel
from engine.presets import byte_level_bpe
from engine.tokenizer import Tokenizer
from tests.engine.cli_run import run
from tests.heldout import declaration_lines

EOT = "<|endoftext|>"
ZH = "中中中 国国 中国 hello hé\n" * 3
ENGLISH = ("The quick brown fox jumps over the lazy dog. Café déjà vu, naïve façade!\n"
           "hello hello hello, the theme: 42 + 17 = 59 \t tabs\r\n<|endoftext|> and more text.\n")


def tiny() -> Tokenizer:
    """256 bytes (id = byte), "he" and "é" merged, and one special token after them."""
    vocab = {b: bytes([b]) for b in range(256)} | {256: b"he", 257: "é".encode()}
    return byte_level_bpe(vocab, [(b"h", b"e"), (b"\xc3", b"\xa9")], special_tokens={EOT: 258})


def extend(base: Tokenizer, tmp_path: Path, text: str, **options: object) -> Extension:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(text, encoding="utf-8")
    return extend_bpe(base, [corpus], ExtendOptions(**options))  # type: ignore[arg-type]


def test_the_exact_merges_on_a_tiny_base(tmp_path: Path) -> None:
    ext = extend(tiny(), tmp_path, ZH, add=8)
    zhong, guo = "中".encode(), "国".encode()
    assert ext.added == [
        (259, zhong[:2]), (260, zhong), (261, guo[:2]), (262, guo),
        (263, zhong * 2), (264, guo * 2), (265, zhong * 3), (266, zhong + guo),
    ]
    # (left, right, merged, count): 中 occurs 12 times, 国 9; ties go to the greatest bytes pair
    # ((e4, b8) before (b8, ad); 国国 before 中中+中 before 中+国).
    assert ext.merges == [(0xE4, 0xB8, 259, 12), (259, 0xAD, 260, 12), (0xE5, 0x9B, 261, 9), (261, 0xBD, 262, 9),
                          (260, 260, 263, 6), (262, 262, 264, 3), (263, 260, 265, 3), (260, 262, 266, 3)]
    assert ext.duplicates_skipped == 0 and ext.unreachable == 0
    tok = ext.tokenizer
    assert tok.encode("中国 中中中") == [266, 32, 265]
    assert tok.decode(tok.encode(ZH)) == ZH


def test_base_ids_and_merges_are_unchanged(tmp_path: Path) -> None:
    base = tiny()
    tok = extend(base, tmp_path, ZH, add=8).tokenizer
    assert tok.vocab_size == base.vocab_size + 8
    for token_id in range(base.vocab_size):
        assert tok.id_to_token(token_id) == base.id_to_token(token_id)
    assert tok.special_tokens == base.special_tokens
    assert tok.model.merges[:2] == base.model.merges  # type: ignore[attr-defined]


def test_protected_learns_nothing_from_english_and_unprotected_does(tmp_path: Path) -> None:
    text = "hello hello hello yellow 中\n" * 4
    protected = extend(tiny(), tmp_path, text, add=3)
    # 中's bytes, then 中 with the space before it: a pair with a new token is always allowed.
    assert [data for _, data in protected.added] == ["中".encode()[:2], "中".encode(), " 中".encode()]
    unprotected = extend(tiny(), tmp_path, text, add=3, protected=False)
    assert [data for _, data in unprotected.added] == [b"lo", b"llo", b"hello"]  # (l, o) ties (l, l) and wins


@settings(max_examples=60, deadline=None)
@given(st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40))
def test_text_without_fallback_characters_keeps_its_ids(text: str) -> None:
    base, tok = _extended()
    covered = covered_chars(base.model)  # type: ignore[arg-type]
    text = "".join(ch for ch in text if ch <= "\x7f" or ch in covered) + " é hé"
    assert tok.encode_ordinary(text) == base.encode_ordinary(text)


@functools.cache
def _extended() -> tuple[Tokenizer, Tokenizer]:
    base = tiny()
    with tempfile.TemporaryDirectory() as folder:  # not the working directory
        corpus = Path(folder, "c.txt")
        corpus.write_text(ZH + "é中é国 hé中\n" * 3, encoding="utf-8")
        return base, extend_bpe(base, [corpus], ExtendOptions(add=20)).tokenizer


def test_english_identical_and_report(tmp_path: Path) -> None:
    base = tiny()
    ext = extend(base, tmp_path, ZH, add=8)
    report = build_report(ext, base, held_out="中国中国\n中中", reference=ENGLISH)
    assert report["reference"]["lines_changed"] == 0
    assert report["reference"]["tokens_before"] == report["reference"]["tokens_after"]
    assert report["held_out"] == {"lines": 2, "characters": 6, "tokens_before": 18, "tokens_after": 3,
                                  "tokens_per_char_before": 3.0, "tokens_per_char_after": 0.5, "drop": 0.8333,
                                  "lines_changed": 2, "unknown_before": 0, "unknown_after": 0}
    assert report["new_embedding_rows"] == 8 and report["vocab_size"] == 267 and report["unreachable"] == 0


def test_hugging_face_loads_the_result(tmp_path: Path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    tok = extend(tiny(), tmp_path, ZH, add=8).tokenizer
    hf = tokenizers.Tokenizer.from_str(tok.to_json())
    for line in [*ZH.splitlines(), *ENGLISH.replace(EOT, "").splitlines(), "中国中中国国 hé"]:
        assert hf.encode(line, add_special_tokens=False).ids == tok.encode(line)
        assert hf.decode(tok.encode(line)) == line


def test_nothing_new_is_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^The corpus has nothing new to learn for this tokenizer: it holds no "
                                          r"character the base falls back on; turn protection off"):
        extend(tiny(), tmp_path, "hello hé\n" * 5, add=5)


def test_add_past_the_vocabulary_limit(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"add=1,999,742 would take the vocabulary past the engine's limit of "
                                          r"2,000,000 tokens \(the base has 259\); ask for at most 1,999,741"):
        extend(tiny(), tmp_path, ZH, add=1_999_742)
    with pytest.raises(ConfigError, match="add=0 must be a whole number of new tokens, 1 or more"):
        ExtendOptions(add=0)


@pytest.mark.parametrize("model", [
    pytest.param(WordLevel({"[UNK]": 0, "a": 1}), id="wordlevel"),
])
def test_other_models_are_refused_naming_what_is_supported(model: object, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^Extending a [\w -]+ tokenizer is not supported yet; extend supports "
                                          r"byte-level BPE \(GPT-2, GPT-4 / cl100k, Llama 3 style\), "
                                          r"character-level BPE \(Llama 2, Mistral, Gemma style tokenizer\.json or "
                                          r"sentencepiece \.model\), Unigram \(tokenizer\.json or sentencepiece "
                                          r"\.model\) and WordPiece \(BERT style\) bases\.$"):
        extend(Tokenizer(model), tmp_path, ZH, add=5)  # type: ignore[arg-type]


def test_cli_writes_the_files_and_the_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = tmp_path / "base.json"
    tiny().save(base)
    corpus, reference = tmp_path / "zh.txt", tmp_path / "en.txt"
    corpus.write_text(ZH * 3, encoding="utf-8")
    reference.write_text(ENGLISH, encoding="utf-8")
    code, out, err = run(capsys, "extend", "-t", str(base), "--add", "4", "-o", str(tmp_path / "out"),
                         "--reference", str(reference), str(corpus))
    assert (code, err) == (0, "")
    assert "Added 4 pieces (4 merges) to a base of 259 tokens: ids 259 to 262 are new" in out
    assert "model.resize_token_embeddings(263)" in out
    assert "Reference: 0.8926 -> 0.8926 tokens per character, 0.0% fewer tokens; 0 of 3 lines encode differently." in out
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "merges.txt", "report.json", "tokenizer.json", "tokenizer_config.json", "vocab.json"]
    report = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    assert report["new_embedding_rows"] == 4 and report["reference"]["lines_changed"] == 0
    assert report["held_out"]["lines"] == 1  # the last tenth of the corpus's 9 lines, rounded, at least one
    extended = Tokenizer.from_file(tmp_path / "out" / "tokenizer.json")
    assert extended.encode("中国") == [260, 262]


def test_cli_carries_the_chat_template_beside_the_base(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The Hugging Face folder layout: a tokenizer_config.json beside the base's tokenizer.json
    gives the extension's tokenizer_config.json its chat template and end-of-text token."""
    base = tmp_path / "base" / "tokenizer.json"
    base.parent.mkdir()
    tiny().save(base)
    template = "{% for m in messages %}{{ m.content }}<|endoftext|>{% endfor %}"
    (base.parent / "tokenizer_config.json").write_text(json.dumps(
        {"chat_template": template, "eos_token": {"content": "<|endoftext|>"}, "model_max_length": 1024}))
    corpus = tmp_path / "zh.txt"
    corpus.write_text(ZH * 3, encoding="utf-8")
    code, _, err = run(capsys, "extend", "-t", str(base), "--add", "4", "-o", str(tmp_path / "out"), str(corpus))
    assert (code, err) == (0, "")
    config = json.loads((tmp_path / "out" / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert (config["chat_template"], config["eos_token"]) == (template, "<|endoftext|>")
    (base.parent / "tokenizer_config.json").write_text('{"chat_template": 7}')
    code, out, err = run(capsys, "extend", "-t", str(base), "--add", "4", "-o", str(tmp_path / "out2"), str(corpus))
    assert code != 0 and out == "" and "chat_template must be a string" in err and err.count("\n") == 1
    assert not (tmp_path / "out2").exists()
    (base.parent / "tokenizer_config.json").write_bytes(b'{"eos_token": "\xff"}')
    code, out, err = run(capsys, "extend", "-t", str(base), "--add", "4", "-o", str(tmp_path / "out2"), str(corpus))
    assert code != 0 and out == "" and "not UTF-8 text (bad byte at offset 15)" in err and err.count("\n") == 1


@pytest.mark.parametrize(("argv", "message"), [
    (["--add", "5000000"], "--add=5,000,000 would take the vocabulary past the engine's limit"),
    (["--add", "0"], "--add=0 must be a whole number of new tokens, 1 or more."),
    (["--add", "5", "--min-frequency", "0"], "--min-frequency=0 must be 1 or more."),
    (["--add", "x"], "argument --add: expected a whole number of tokens, not 'x'"),
])
def test_cli_bad_input_is_one_line(argv: list[str], message: str, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    base, corpus = tmp_path / "base.json", tmp_path / "zh.txt"
    tiny().save(base)
    corpus.write_text(ZH, encoding="utf-8")
    code, out, err = run(capsys, "extend", "-t", str(base), *argv, "-o", str(tmp_path / "out"), str(corpus))
    assert code != 0 and out == "" and err.count("\n") == 1 and message in err
    assert not (tmp_path / "out").exists()


def test_gpt2_extended_with_chinese(tmp_path: Path) -> None:
    """GPT-2 (r50k) plus 1,000 tokens from the declaration in Chinese: English identical, Chinese shorter."""
    from engine.formats.js_tiktoken import parse_rank_table
    from engine.formats.tiktoken import build_tiktoken
    from engine.presets import TIKTOKEN_ENCODINGS
    from tests.preset_tables import presets_dir

    folder = presets_dir()
    lines = declaration_lines("zh", "zh-Hant")
    encoding = TIKTOKEN_ENCODINGS["r50k_base"]
    base = build_tiktoken(parse_rank_table((folder / "r50k_base.js").read_text(encoding="utf-8")).entries,
                          pattern=encoding.pattern, special_tokens=encoding.special_tokens)
    cut = len(lines) * 9 // 10
    ext = extend(base, tmp_path, "\n".join(lines[:cut]), add=1000)
    code = [line for line in Path(__file__).read_text(encoding="utf-8").splitlines() if line.isascii()]
    english = "\n".join([ENGLISH, *code])  # prose with Latin accents, and Python
    report = build_report(ext, base, held_out="\n".join(lines[cut:]), reference=english)
    assert report["pieces_added"] == 1000 and report["unreachable"] == 0
    assert report["reference"]["lines_changed"] == 0
    assert report["held_out"]["drop"] >= 0.3
    tok = ext.tokenizer
    assert all(tok.id_to_token(i) == base.id_to_token(i) for i in range(base.vocab_size))
    tokenizers = pytest.importorskip("tokenizers")
    hf = tokenizers.Tokenizer.from_str(tok.to_json())
    for line in lines[cut:]:
        ids = tok.encode(line)
        assert hf.encode(line, add_special_tokens=False).ids == ids
        assert tok.decode(ids) == line
