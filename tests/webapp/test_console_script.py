"""The ``tokenforge`` console script: its own options, and one-line errors for every command."""

from __future__ import annotations

import gc
import importlib.metadata
import tomllib
from pathlib import Path

import pytest

from webapp import cli
from webapp.cli import main


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    assert stopped.value.code == 0
    assert capsys.readouterr().out == f"tokenforge {importlib.metadata.version('tokenforge')}\n"


@pytest.mark.parametrize("argv", [["nosuch"], ["train", "--model", "bpe", "--bogus", "3", "-o", "out", "f.txt"],
                                  ["serve", "--port", "abc"]], ids=["unknown-command", "unknown-flag", "bad-port"])
def test_the_console_script_reports_bad_arguments_in_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error:" in err and "usage:" not in err


def test_train_help_per_model_through_the_console_script(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["train", "--model", "byte", "--help"])
    assert stopped.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: tokenforge train --model byte -o OUTDIR [OPTION ...] FILE [FILE ...]\n")
    assert "--vocab-size" not in out  # the byte model has no vocabulary size to choose


def test_the_console_script_runs_main_then_freezes_the_heap_for_its_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["scripts"] == {"tokenforge": "webapp.cli:console"}
    monkeypatch.setattr(cli, "main", lambda: 3)
    assert gc.get_freeze_count() == 0
    try:
        assert cli.console() == 3
        assert gc.get_freeze_count() > 0  # the exit's collections skip the frozen heap (engine/processes.py)
    finally:
        gc.unfreeze()
