"""A small run of ``benchmarks/load_test.py``: real server, real worker training, 8 users, 0 errors.

Timings are not asserted (the machine is shared); the full run's figures are in
``docs/benchmarks.md``. This checks that concurrent encoding during training never fails.
"""

from __future__ import annotations

import importlib.util
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "load_test.py"


def test_small_load_run_has_no_errors(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("load_test", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["load_test"] = module  # dataclasses look their module up while being defined
    spec.loader.exec_module(module)
    args = ["--users", "8", "--seconds", "4", "--think", "0.3", "--train-vocab", "3000", "--workers", "1", "--threads", "4"]
    # In a thread of its own: when the browser tests ran first, Playwright's sync API leaves an
    # event loop running in this thread, and asyncio.run refuses to start a second one.
    with ThreadPoolExecutor(max_workers=1) as pool:
        summary = pool.submit(module.main, args).result()
    assert summary["errors"] == 0, summary["error_samples"]
    assert summary["requests"] >= 8
    assert "failed" not in summary["training_job"], summary["training_job"]
