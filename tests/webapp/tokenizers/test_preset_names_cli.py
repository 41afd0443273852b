"""``tokenforge encode -t cl100k_base``: the engine's commands take an installed preset's name.

The console script (``webapp/cli.py``) resolves a tokenizer argument that is no file through
``preset_names.by_name`` in ``<TOKENFORGE_DATA_DIR>/presets``: an OpenAI encoding is built from
its table, an open model is its ``tokenizer.json`` (with the chat settings beside it), each
through a snapshot made on its first use. The ids are tiktoken's and Hugging Face's; a file of
that name wins; a preset that is not installed, or a name that is no preset, is one line and
exit 1.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from tests.open_models import open_model_file
from tests.preset_tables import installed_presets_dir, tiktoken_encoding
from webapp.cli import main
from webapp.tokenizers import preset_names

TEXT = "Hello, world! Ünïcödé 日本語 <|endoftext|> 🙂\n  indented"


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data folder whose presets are the test cache's installed files (as `presets install` leaves them)."""
    (tmp_path / "presets").symlink_to(installed_presets_dir(), target_is_directory=True)
    monkeypatch.setenv("TOKENFORGE_DATA_DIR", str(tmp_path))
    return tmp_path


def _ids(argv: list[str], capsys: pytest.CaptureFixture[str]) -> list[int]:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_an_openai_encoding_by_name_gives_tiktokens_ids(name: str, data_dir: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    expected = tiktoken_encoding(data_dir / "presets", name).encode(TEXT, allowed_special="all")
    assert _ids(["encode", "-t", name, "--text", TEXT, "--allowed-special", "all"], capsys) == expected


def test_an_open_model_by_name_gives_hugging_faces_ids(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    hf = tokenizers.Tokenizer.from_file(str(open_model_file("llama3")))
    assert _ids(["encode", "-t", "llama3", "--text", TEXT], capsys) == hf.encode(TEXT).ids


def test_diff_and_extend_take_names_and_extend_keeps_the_models_chat_template(
        data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", "-a", "r50k_base", "-b", "llama3", "--json", "--limit", "1"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["a"]["name"], report["a"]["pieces"]) == ("r50k_base", 50257)
    assert (report["b"]["name"], report["b"]["pieces"]) == ("llama3", 128256)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("Tokenforge tokenizes tokenizers.\n" * 200 + "Ünïcödé ünïcödé\n" * 200, encoding="utf-8")
    out = tmp_path / "out"
    assert main(["extend", "-t", "llama3", "--add", "5", "--unprotected", "-o", str(out), str(corpus)]) == 0
    config = json.loads((out / "tokenizer_config.json").read_text(encoding="utf-8"))
    installed = json.loads(open_model_file("llama3", "tokenizer_config.json").read_text(encoding="utf-8"))
    assert config["chat_template"] == installed["chat_template"]


def test_a_file_of_that_name_wins(data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    Path("llama3").write_text(open_model_file("llama2").read_text(encoding="utf-8"), encoding="utf-8")
    tokenizers = pytest.importorskip("tokenizers")
    llama2 = tokenizers.Tokenizer.from_file(str(open_model_file("llama2")))
    assert _ids(["encode", "-t", "llama3", "--text", TEXT], capsys) == llama2.encode(TEXT).ids


def test_a_preset_not_installed_says_how_to_install_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("TOKENFORGE_DATA_DIR", str(tmp_path))
    assert main(["encode", "-t", "gemma3", "--text", "x"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"the preset 'gemma3' is not installed in {tmp_path / 'presets'}: run `tokenforge presets install`" in err
    assert list(tmp_path.iterdir()) == []  # only the folder was looked at: nothing was written (no secret key)


def test_a_name_that_is_no_preset_is_a_missing_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("TOKENFORGE_DATA_DIR", str(tmp_path))
    assert main(["eval", "-t", "gpt-5", str(tmp_path)]) == 1
    assert capsys.readouterr().err == "tokenforge eval: error: No such file or directory: gpt-5\n"


def test_the_help_lists_the_names(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["encode", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "or an installed preset: r50k_base, p50k_base, cl100k_base, o200k_base, llama2, llama3" in out


@pytest.mark.parametrize("name", ["o200k_base", "llama3"])
def test_a_named_preset_is_built_once_then_loaded_from_its_snapshot(name: str, data_dir: Path,
                                                                    monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    first = _ids(["encode", "-t", name, "--text", TEXT, "--allowed-special", "all"], capsys)
    assert len(list((data_dir / "snapshots").glob("*.npz"))) == 1

    def unbuilt(*args: object) -> None:
        raise AssertionError("built again, though its snapshot is there")

    monkeypatch.setattr(preset_names, "build", unbuilt)
    monkeypatch.setattr(preset_names.Tokenizer, "from_json", unbuilt)
    assert _ids(["encode", "-t", name, "--text", TEXT, "--allowed-special", "all"], capsys) == first


def test_an_encodings_snapshot_is_named_by_everything_it_is_built_from(data_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    # Were a catalogue entry to change (a special token added), the snapshot of the old one must not be read.
    assert _ids(["encode", "-t", "cl100k_base", "--text", "<|x|>"], capsys) == [27, 91, 87, 91, 29]
    encoding = preset_names.TIKTOKEN_ENCODINGS["cl100k_base"]
    changed = dataclasses.replace(encoding, special_tokens={**encoding.special_tokens, "<|x|>": 100300})
    monkeypatch.setitem(preset_names.TIKTOKEN_ENCODINGS, "cl100k_base", changed)
    assert _ids(["encode", "-t", "cl100k_base", "--text", "<|x|>", "--allowed-special", "all"], capsys) == [100300]
    assert len(list((data_dir / "snapshots").glob("*.npz"))) == 2


def test_with_snapshots_off_a_named_preset_is_read_each_time(data_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("TOKENFORGE_SNAPSHOT_BYTES", "0")
    tokenizers = pytest.importorskip("tokenizers")
    hf = tokenizers.Tokenizer.from_file(str(open_model_file("llama3")))
    assert _ids(["encode", "-t", "llama3", "--text", TEXT], capsys) == hf.encode(TEXT).ids
    assert not (data_dir / "snapshots").exists()


def test_another_engine_names_other_snapshots(data_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    # A snapshot stands for the files as this engine reads them: after any change to the engine's
    # code (code_stamp: its source files' sizes and times), the presets are read again.
    first = _ids(["encode", "-t", "llama3", "--text", TEXT], capsys)
    monkeypatch.setattr(preset_names, "_engine_build", lambda: "another engine")
    assert _ids(["encode", "-t", "llama3", "--text", TEXT], capsys) == first
    assert len(list((data_dir / "snapshots").glob("*.npz"))) == 2


def test_the_engines_code_stamp_changes_with_any_source_file(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "bpe.py").write_text("MERGES = 1\n")
    (tmp_path / "notes.txt").write_text("not code")
    stamp = preset_names.code_stamp(tmp_path)
    (tmp_path / "notes.txt").write_text("still not code")
    assert preset_names.code_stamp(tmp_path) == stamp
    (tmp_path / "models" / "bpe.py").write_text("MERGES = 2\n")  # the same size: its time tells
    os.utime(tmp_path / "models" / "bpe.py", ns=(0, 10**18))
    assert preset_names.code_stamp(tmp_path) != stamp
