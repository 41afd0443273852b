"""A small run of ``benchmarks/load_test.py``: real server, real training job, 4 users, 0 errors.

The script trains its own small BPE through a job on a corpus generated in ``tmp_path`` (so the
test needs no shared data), keeps a small background training running, and runs the closed
loop of a playground user (page, three htmx encodes, one API encode). Timings are not asserted
(the machine is shared); the full run's figures are in ``docs/benchmarks.md``. This checks
that every kind of request is sent and answered without a single error.
"""

from __future__ import annotations

import importlib.util
import random
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow
SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "load_test.py"
SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in ("a", "e", "i", "o", "u", "é", "ai")]


def run_script(args: list[str]) -> dict[str, Any]:
    spec = importlib.util.spec_from_file_location("load_test", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    # In a thread of its own: when the browser tests ran first, Playwright's sync API leaves an
    # event loop running in this thread, and asyncio.run refuses to start a second one.
    with ThreadPoolExecutor(max_workers=1) as pool:
        return dict(pool.submit(module.main, args).result())


def test_small_load_run_sends_every_kind_of_request_without_errors(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the server's data folder goes here too
    rng = random.Random(0)
    corpus = tmp_path / "corpus.txt"
    words = ["".join(rng.choices(SYLLABLES, k=rng.randint(1, 4))) for _ in range(3000)]
    corpus.write_text("\n".join(" ".join(rng.choices(words, k=30)) for _ in range(3000)), encoding="utf-8")
    report = run_script(["--users", "4", "--seconds", "3", "--warmup", "1", "--corpus", str(corpus),
                         "--vocab-size", "600", "--job-corpus-mb", "2", "--job-vocab-size", "20000",
                         "--workers", "1", "--threads", "4"])
    [measured] = report["rounds"]
    assert (measured["errors"], measured["warmup_errors"]) == (0, 0), measured["error_samples"]
    assert measured["users"] == 4
    latency = measured["latency_ms"]
    for kind in ("page", "htmx_encode", "api_encode"):
        assert latency[kind]["count"] > 0, kind
    # The closed loop sends three htmx encodes for each page it loads (the loop may be cut
    # anywhere at the end of the measurement, so allow one loop's difference per user).
    assert abs(latency["htmx_encode"]["count"] - 3 * latency["page"]["count"]) <= 3 * 4
    assert latency["all"]["count"] == measured["requests"] == sum(latency[k]["count"] for k in
                                                                  ("page", "htmx_encode", "api_encode"))
    # The tokenizer was trained by a job on the server, so its row has a real stats column.
    assert report["tokenizer"]["vocab_size"] == 600
    assert report["tokenizer"]["stats_bytes"] > 1000
    # A background job was queued (it may end during so short a run; the full run reports that).
    job = measured["training_job"]
    assert job["before"].startswith("#") and job["after"].startswith("#"), job
    assert not any(status in job["before"] + job["after"] for status in ("failed", "cancelled")), job
    table = capsys.readouterr().out.splitlines()
    assert table[-2].startswith("|---|")
    assert table[-1].startswith("| 4 | ")
