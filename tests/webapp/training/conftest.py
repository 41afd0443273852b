"""Fixtures of the job tests: a process tag that leaves no process behind."""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Iterator

import pytest

from tests.live import TAG_VARIABLE, tagged_processes


@pytest.fixture
def tag(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A tag in the environment that every process started from here on inherits; whatever
    still carries it at the end is killed, so a failing test leaves no process either."""
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()  # the worker's own helper, untagged: it outlives any job
    tag = uuid.uuid4().hex
    monkeypatch.setenv(TAG_VARIABLE, tag)
    yield tag
    for pid in tagged_processes(tag):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
