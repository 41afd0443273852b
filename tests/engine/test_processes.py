"""Process-wide settings the entry points make before any work: one BLAS thread."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from engine.processes import one_blas_thread


def test_one_blas_thread_is_a_default_the_user_may_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    one_blas_thread()
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")
    one_blas_thread()
    assert os.environ["OPENBLAS_NUM_THREADS"] == "4"


def test_the_entry_points_import_no_numpy_before_they_run() -> None:
    """The setting only counts if numpy is imported after it: the two CLIs' modules must not
    import numpy themselves (their commands do, once ``main`` has run)."""
    code = "import sys, webapp.cli, engine.cli; print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "False"


def test_both_entry_points_ask_for_it_first(monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    import engine.cli
    import webapp.cli

    for main in (webapp.cli.main, engine.cli.main):
        monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
        with pytest.raises(SystemExit):
            main(["--no-such-option"])  # refused by the parser, after the setting
        assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
    capsys.readouterr()
