"""The ``tokenforge`` console script's own options."""

from __future__ import annotations

import importlib.metadata

import pytest

from webapp.cli import main


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    assert stopped.value.code == 0
    assert capsys.readouterr().out == f"tokenforge {importlib.metadata.version('tokenforge')}\n"
