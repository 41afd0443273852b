"""The real tiktoken rank tables for preset tests, and tiktoken's own encoding built from them.

``scripts/test.sh`` writes the tables once into ``$TOKENFORGE_TEST_PRESETS_DIR`` with
``tokenforge presets install --dir``, with the open models' files in its ``open/`` (see
``tests/open_models.py``); nothing downloads at test time. Where the folder is not
set, or tiktoken is not installed, the tests that need them skip with the reason. Shared by the
engine's parity tests, the web app's installer tests and the browser's preset pages.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from engine.formats.js_tiktoken import parse_rank_table
from engine.presets import TIKTOKEN_ENCODINGS

PRESETS_ENV = "TOKENFORGE_TEST_PRESETS_DIR"


def folder_from_env(variable: str, what: str) -> Path:
    """The folder named by ``$variable``, or skip the calling test saying how to get ``what``."""
    folder = os.environ.get(variable)
    if not folder or not Path(folder).is_dir():
        pytest.skip(f"set {variable} to {what} (scripts/test.sh does)")
    return Path(folder)


def presets_dir() -> Path:
    """The folder of real rank tables, or skip the calling test saying how to get it."""
    return folder_from_env(PRESETS_ENV, "a folder written by `tokenforge presets install --dir`")


def installed_presets_dir() -> Path:
    """:func:`presets_dir` holding the open models' files too (``open/``), as ``--from`` needs; or skip."""
    folder = presets_dir()
    if not (folder / "open").is_dir():
        pytest.skip(f"{folder} has no open/ (written by an older `tokenforge presets install --dir`); "
                    "run scripts/test.sh again")
    return folder


def tiktoken_encoding(folder: Path, name: str) -> Any:
    """tiktoken's ``Encoding`` for the preset ``name``, from the table in ``folder`` (skips without tiktoken)."""
    tiktoken = pytest.importorskip("tiktoken")
    ranks = parse_rank_table((folder / f"{name}.js").read_text(encoding="utf-8")).ranks()
    encoding = TIKTOKEN_ENCODINGS[name]
    return tiktoken.Encoding(name=name, pat_str=encoding.pat_str, mergeable_ranks=ranks,
                             special_tokens=dict(encoding.special_tokens))
