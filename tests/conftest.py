"""Fixtures shared by every test package.

Tests never write into the working directory: Hypothesis keeps no example database (it would
create ``.hypothesis/`` in the current folder), and pytest's cache is off in ``pyproject.toml``.
The real-data fixtures come from ``../shared/data`` beside the repository and skip cleanly
where it is absent (``tests/shared_data.py``). Browser tests run last (``pytest_collection_modifyitems``): Playwright's
sync API leaves two threads running for the rest of the session, and the engine forks its
worker processes only when no other thread runs, so after them the engine's multi-process
paths would silently fall back to one process and go untested.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
import werkzeug.test
from hypothesis import HealthCheck, settings

from tests.shared_data import CS336

settings.register_profile(
    "tokenforge", database=None, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("tokenforge")



def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Move the browser tests to the end, keeping every other order (see the module docstring)."""
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)


@pytest.fixture(scope="session")
def cs336() -> Path:
    """The CS336 fixtures folder (reference merges, GPT-2 files, sample texts)."""
    if not (CS336 / "corpus.en").is_file():
        pytest.skip(f"real test data not found at {CS336}")
    return CS336


@pytest.fixture(scope="module")
def transformers() -> Iterator[ModuleType]:
    """``transformers`` with the Hugging Face hub off (loading a local file must not need the
    network), or skip where it is not installed."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.setenv("TRANSFORMERS_OFFLINE", "1")
        yield pytest.importorskip("transformers")


@pytest.fixture(autouse=True, scope="session")
def _test_client_bodies_in_memory() -> Iterator[None]:
    """Keep the Flask test client's multipart bodies in memory.

    Werkzeug's test client spools request bodies over 500 KB into a temporary file that it never
    closes; with ``filterwarnings = error`` the resulting ResourceWarning fails whichever test the
    garbage collector happens to run in. The server side (our upload handling) is unaffected.
    """
    original = werkzeug.test.stream_encode_multipart
    werkzeug.test.stream_encode_multipart = functools.partial(original, use_tempfile=False)  # type: ignore[assignment]
    yield
    werkzeug.test.stream_encode_multipart = original
