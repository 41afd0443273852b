"""The engine's CLI contract: train writes its files, encode prints one JSON list, import converts,
and every user error is one line on stderr with a non-zero exit, never a traceback. Most tests
run in-process through ``engine.cli.main``; two run the real subprocess."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli_train import _flag
from engine.formats.gpt2 import save_gpt2
from engine.presets import byte_level_bpe
from engine.tokenizer import Tokenizer
from engine.trainers import TRAINERS, option_specs
from tests.engine.cli_run import run

REPO = Path(__file__).resolve().parents[2]
EOT = "<|endoftext|>"
CORPUS = "the cat sat on the mat.\nthe cat ate the rat.\n" * 50


def tiny() -> Tokenizer:
    vocab = {b: bytes([b]) for b in range(256)} | {256: b"th", 257: b"the"}
    return byte_level_bpe(vocab, [(b"t", b"h"), (b"th", b"e")], special_tokens={EOT: 258})


@pytest.fixture()
def tokenizer_json(tmp_path: Path) -> Path:
    path = tmp_path / "tokenizer.json"
    tiny().save(path)
    return path


def test_train_bpe_writes_three_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS, encoding="utf-8")
    code, out, err = run(capsys, "train", "--model", "bpe", "--vocab-size", "270", "--special-token", EOT,
                         "--min-frequency", "2", "--pretokenizer", "gpt2", "-o", str(tmp_path / "out"), str(corpus))
    assert (code, err) == (0, "")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["merges.txt", "tokenizer.json", "vocab.json"]
    assert (tmp_path / "out" / "merges.txt").read_text(encoding="utf-8").startswith("#version: 0.2\n")
    trained = Tokenizer.from_file(tmp_path / "out" / "tokenizer.json")
    assert trained.vocab_size == 270 and trained.special_tokens == {EOT: 0}
    assert "Trained a bpe tokenizer of 270 tokens" in out


def test_encode_prints_one_json_list(tokenizer_json: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "encode", "-t", str(tokenizer_json), "--text", "the") == (0, "[257]\n", "")
    text_file = tmp_path / "in.txt"
    text_file.write_text(f"the{EOT}", encoding="utf-8")
    code, out, err = run(capsys, "encode", "-t", str(tokenizer_json), "--allowed-special", "all", str(text_file))
    assert (code, json.loads(out), err) == (0, [257, 258], "")


def test_import_gpt2_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    save_gpt2(tiny(), tmp_path / "vocab.json", tmp_path / "merges.txt")
    code, out, err = run(capsys, "import", "--vocab", str(tmp_path / "vocab.json"), "--merges", str(tmp_path / "merges.txt"),
                         "--pretokenizer", "gpt2", "--special-token", EOT, "-o", str(tmp_path / "t.json"))
    assert (code, err) == (0, "")
    assert Tokenizer.from_file(tmp_path / "t.json").encode(f"the{EOT}", allowed_special="all") == [257, 258]


def test_import_vocab_txt(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\ncat\n##s\n", encoding="utf-8")
    code, out, err = run(capsys, "import", "--vocab-txt", str(tmp_path / "vocab.txt"), "-o", str(tmp_path / "t.json"))
    assert (code, err) == (0, "")
    assert Tokenizer.from_file(tmp_path / "t.json").encode("The cats") == [2, 4, 5, 6, 3]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["encode", "-t", "TOK", "--text", f"a{EOT}"], "tokenforge encode: error: The text contains the special token '<|endoftext|>'", id="disallowed-special"),
        pytest.param(["encode", "-t", "missing.json", "--text", "a"], "tokenforge encode: error: No such file or directory: missing.json", id="missing-tokenizer"),
        pytest.param(["encode", "-t", "BAD", "--text", "a"], "tokenforge encode: error: line 1: The file is not valid JSON", id="bad-tokenizer"),
        pytest.param(["encode", "-t", "TOK"], "tokenforge encode: error: Give either --text TEXT or a FILE", id="no-input"),
        pytest.param(["train", "--model", "bpe", "--vocab-size", "abc", "-o", "OUT", "CORPUS"], "tokenforge train: error: --vocab-size must be a whole number, not 'abc'.", id="bad-int"),
        pytest.param(["train", "--model", "bpe", "--vocab-size", "10", "-o", "OUT", "CORPUS"], "tokenforge train: error: --vocab-size=10 must be between 257", id="too-small"),
        pytest.param(["train", "--model", "bpe", "-o", "OUT", "nope.txt"], "tokenforge train: error: Corpus file 'nope.txt' does not exist.", id="missing-corpus"),
        pytest.param(["train", "--model", "bpe", "-o", "OUT", "DIR"], "tokenforge train: error: Corpus file 'DIR' is a directory; give the files in it instead.", id="directory-corpus"),
        pytest.param(["train", "--model", "bpe", "-o", "corpus.txt/out", "CORPUS"], "tokenforge train: error: Cannot write the output folder", id="output-under-a-file"),
        pytest.param(["train", "--model", "bpe", "-o", "CORPUS", "CORPUS"], "tokenforge train: error: Output", id="output-is-a-file"),
        pytest.param(["train", "--model", "gpt", "-o", "OUT", "CORPUS"], "tokenforge train: error: argument --model: invalid choice: 'gpt'", id="bad-model"),
        pytest.param(["train", "--model", "bpe", "CORPUS"], "tokenforge train: error: the following arguments are required: -o/--output", id="no-output"),
        pytest.param(["import", "--vocab", "BAD", "--merges", "BAD", "-o", "OUT"], "tokenforge import: error: ", id="bad-vocab"),
        pytest.param(["import", "--vocab", "BAD", "-o", "OUT"], "tokenforge import: error: Give exactly one of", id="vocab-without-merges"),
    ],
)
def test_errors_are_one_line(tmp_path: Path, tokenizer_json: Path, capsys: pytest.CaptureFixture[str],
                             monkeypatch: pytest.MonkeyPatch, argv: list[str], message: str) -> None:
    (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
    (tmp_path / "corpus.txt").write_text(CORPUS, encoding="utf-8")
    (tmp_path / "DIR").mkdir()
    places = {"TOK": str(tokenizer_json), "BAD": str(tmp_path / "bad.json"), "OUT": str(tmp_path / "out"),
              "CORPUS": str(tmp_path / "corpus.txt")}
    monkeypatch.chdir(tmp_path)  # "DIR" is relative, as a user types it
    code, out, err = run(capsys, *[places.get(a, a) for a in argv])
    assert code != 0 and out == ""
    assert err.startswith(message)
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "out").exists()  # a refused run leaves no empty output folder behind


def test_subprocess_train_then_encode(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS, encoding="utf-8")
    command = [sys.executable, "-m", "engine.cli"]
    trained = subprocess.run([*command, "train", "--model", "bpe", "--vocab-size", "265", "-o", str(tmp_path / "o"),
                              str(corpus)], cwd=tmp_path, capture_output=True, text=True, env=_env(), timeout=120)
    assert trained.returncode == 0, trained.stderr
    assert trained.stderr == ""  # no progress bar when stderr is not a terminal
    encoded = subprocess.run([*command, "encode", "-t", str(tmp_path / "o" / "tokenizer.json"), "--text", "the cat"],
                             cwd=tmp_path, capture_output=True, text=True, env=_env(), timeout=60)
    assert encoded.returncode == 0 and isinstance(json.loads(encoded.stdout), list)


def test_subprocess_bad_file_has_no_traceback(tmp_path: Path) -> None:
    (tmp_path / "merges.txt").write_text("a b c\n", encoding="utf-8")
    (tmp_path / "vocab.json").write_text("{}", encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "engine.cli", "import", "--vocab", "vocab.json", "--merges",
                             "merges.txt", "-o", "t.json"], cwd=tmp_path, capture_output=True, text=True,
                            env=_env(), timeout=60)
    assert result.returncode == 1
    assert result.stderr == ("tokenforge import: error: merges.txt, line 1: A merge must be two tokens "
                             "separated by one space, not 'a b c'.\n")


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": str(REPO)}


# --------------------------------------------------------------------------- train --help
FLAG_LINE = re.compile(r"^  (--[a-z-]+)", re.MULTILINE)


def help_of(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code, out, err = run(capsys, "train", *argv)
    assert (code, err) == (0, "")
    return out


def entry(text: str, flag: str) -> str:
    """One option's entry in a help text, unwrapped onto one line."""
    start = re.search(rf"^  {re.escape(flag)}\b", text, re.MULTILINE)
    assert start, f"{flag} is not listed in:\n{text}"
    following = FLAG_LINE.search(text, start.end())
    return " ".join(text[start.start():following.start() if following else len(text)].split())


@pytest.mark.parametrize(
    ("model", "special_tokens"),
    [
        pytest.param("bpe", "<|endoftext|>", id="bpe"),
        pytest.param("wordpiece", "[PAD] [UNK] [CLS] [SEP] [MASK]", id="wordpiece"),
        pytest.param("wordlevel", "[PAD] [UNK] [CLS] [SEP] [MASK]", id="wordlevel"),
        pytest.param("char", "[UNK]", id="char"),
        pytest.param("byte", "none", id="byte"),
    ],
)
def test_each_model_help_shows_its_own_special_tokens(capsys: pytest.CaptureFixture[str], model: str,
                                                      special_tokens: str) -> None:
    text = help_of(capsys, "--model", model, "--help")
    assert text.startswith(f"usage: tokenforge train --model {model} -o OUTDIR")
    assert entry(text, "--special-token").endswith(f"Repeat the flag for each. (default: {special_tokens})")


def test_vocab_size_help_is_each_models_own(capsys: pytest.CaptureFixture[str]) -> None:
    assert entry(help_of(capsys, "--model", "bpe", "-h"), "--vocab-size") == (
        "--vocab-size INT Vocabulary size: special tokens + the alphabet (256 bytes; at char level the unknown "
        "token and the characters seen) + merges. (default: 32000)")
    assert entry(help_of(capsys, "--model", "wordlevel", "-h"), "--vocab-size") == (
        "--vocab-size INT Vocabulary size, special tokens included. (default: 30000)")
    assert entry(help_of(capsys, "--model", "char", "-h"), "--vocab-size") == (
        "--vocab-size INT Keep the most frequent characters. (default: all)")


def test_form_wording_becomes_command_line_wording(capsys: pytest.CaptureFixture[str]) -> None:
    bpe = help_of(capsys, "--model", "bpe", "--help")
    assert entry(bpe, "--max-token-length") == (
        "--max-token-length INT Never create a token longer than this many bytes, or characters at char level. "
        "(default: no limit)")
    assert entry(bpe, "--special-token").startswith("--special-token TOKEN Special tokens; they get ids 0, 1")
    wordpiece = help_of(capsys, "--model", "wordpiece", "--help")
    assert entry(wordpiece, "--template") == (
        "--template STR Post-processing template, e.g. '[CLS] $A [SEP]'. (default: none)")
    assert entry(wordpiece, "--lowercase").endswith("(default: on)")
    assert entry(help_of(capsys, "--model", "char", "--help"), "--lowercase").endswith("(default: off)")
    assert entry(wordpiece, "--normalizer").startswith("--normalizer {none,nfc,nfkc,nfd,nfkd} ")


@pytest.mark.parametrize("model", list(TRAINERS))
def test_each_model_help_lists_exactly_its_options(capsys: pytest.CaptureFixture[str], model: str) -> None:
    try:
        specs = option_specs(model)
    except ImportError as exc:  # a trainer that does not import has no flags, and no help of its own
        pytest.skip(f"the {model} trainer does not import: {exc}")
    text = help_of(capsys, "--model", model, "--help")
    listed = set(FLAG_LINE.findall(text)) - {"--output", "--dask-scheduler"}  # the fixed flags
    expected = {_flag(spec.name, spec.type) for spec in specs}
    expected |= {"--no-" + spec.name.replace("_", "-") for spec in specs if spec.type == "list"}
    assert listed == expected
    for bad in ("one per line", "(empty:", "default: ]", "(e.g. "):
        assert bad not in text
    assert " ".join(text.split()).count("(default: ") == len(specs)


def test_train_help_without_a_model_lists_each_models_flags(capsys: pytest.CaptureFixture[str]) -> None:
    text = help_of(capsys, "--help")
    assert text.startswith("usage: tokenforge train [-h] --model MODEL -o OUTDIR [OPTION ...] FILE [FILE ...]")
    assert "  tokenforge train --model bpe --help\n" in text
    assert re.search(r"^  byte +--special-token$", text, re.MULTILINE)
    assert "(default:" not in text  # defaults differ per model: only a model's own help shows them


def test_a_flag_of_another_model_is_refused_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "train", "--model", "char", "--score", "frequency", "-o", str(tmp_path), "x.txt")
    assert code == 1 and out == ""
    assert err.startswith("tokenforge train: error: --score is not an option of the char trainer; its options are: "
                          "--vocab-size, --min-frequency, --special-token,")
