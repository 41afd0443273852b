"""Where the real test data is, and how a test skips cleanly where it is absent.

The fixtures are in ``../shared/data`` beside the repository (CS336's ``corpus.en``, the GPT-2
``gpt2_vocab.json``/``gpt2_merges.txt``, sample texts); they are never copied into the repo.
Tests get the folder from the ``cs336`` fixture (``tests/conftest.py``) or, outside a fixture,
a file from :func:`cs336_file`; either skips the test, naming the missing path.
"""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
CS336 = SHARED_DATA / "cs336"


def cs336_file(name: str) -> Path:
    """``name`` in the CS336 fixtures folder, or skip the calling test."""
    path = CS336 / name
    if not path.is_file():
        pytest.skip(f"real test data not found: {path}")
    return path


def gpt2_files() -> tuple[Path, Path]:
    """GPT-2's vocab.json and merges.txt, or skip the calling test."""
    return cs336_file("gpt2_vocab.json"), cs336_file("gpt2_merges.txt")
