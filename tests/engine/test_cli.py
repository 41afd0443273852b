"""The engine's CLI contract: train writes its files, encode prints one JSON list, import converts,
and every user error is one line on stderr with a non-zero exit, never a traceback. Most tests
run in-process through ``engine.cli.main``; two run the real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli import main
from engine.formats.gpt2 import save_gpt2
from engine.presets import byte_level_bpe
from engine.tokenizer import Tokenizer

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


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse errors exit
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


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
        pytest.param(["train", "--model", "bpe", "--vocab-size", "10", "-o", "OUT", "CORPUS"], "tokenforge train: error: vocab_size=10 must be between 257", id="too-small"),
        pytest.param(["train", "--model", "bpe", "-o", "OUT", "nope.txt"], "tokenforge train: error: Corpus file 'nope.txt' does not exist.", id="missing-corpus"),
        pytest.param(["train", "--model", "gpt", "-o", "OUT", "CORPUS"], "tokenforge train: error: argument --model: invalid choice: 'gpt'", id="bad-model"),
        pytest.param(["train", "--model", "bpe", "CORPUS"], "tokenforge train: error: the following arguments are required: -o/--output", id="no-output"),
        pytest.param(["import", "--vocab", "BAD", "--merges", "BAD", "-o", "OUT"], "tokenforge import: error: ", id="bad-vocab"),
        pytest.param(["import", "--vocab", "BAD", "-o", "OUT"], "tokenforge import: error: Give exactly one of", id="vocab-without-merges"),
    ],
)
def test_errors_are_one_line(tmp_path: Path, tokenizer_json: Path, capsys: pytest.CaptureFixture[str],
                             argv: list[str], message: str) -> None:
    (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
    (tmp_path / "corpus.txt").write_text(CORPUS, encoding="utf-8")
    places = {"TOK": str(tokenizer_json), "BAD": str(tmp_path / "bad.json"), "OUT": str(tmp_path / "out"),
              "CORPUS": str(tmp_path / "corpus.txt")}
    code, out, err = run(capsys, *[places.get(a, a) for a in argv])
    assert code != 0 and out == ""
    assert err.startswith(message)
    assert err.count("\n") == 1 and "Traceback" not in err


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


@pytest.mark.parametrize("argv", [["nosuch"], ["train", "--model", "bpe", "--bogus", "3", "-o", "out", "f.txt"],
                                  ["serve", "--port", "abc"]], ids=["unknown-command", "unknown-flag", "bad-port"])
def test_the_console_script_reports_bad_arguments_in_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from webapp.cli import main as console_main

    with pytest.raises(SystemExit) as exit_info:
        console_main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error:" in err and "usage:" not in err
