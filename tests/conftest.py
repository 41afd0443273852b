"""Fixtures shared by every test package.

Tests never write into the working directory: Hypothesis keeps no example database (it would
create ``.hypothesis/`` in the current folder), and pytest's cache is off in ``pyproject.toml``.
The real-data fixtures come from ``../shared/data`` beside the repository and skip cleanly
where it is absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "tokenforge", database=None, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("tokenforge")

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
CS336 = SHARED_DATA / "cs336"


@pytest.fixture(scope="session")
def cs336() -> Path:
    """The CS336 fixtures folder (reference merges, GPT-2 files, sample texts)."""
    if not (CS336 / "corpus.en").is_file():
        pytest.skip(f"real test data not found at {CS336}")
    return CS336
