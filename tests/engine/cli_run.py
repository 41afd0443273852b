"""Run the engine's command line in-process, as the CLI tests do: (exit code, stdout, stderr)."""

from __future__ import annotations

import pytest

from engine.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse errors exit
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err
