"""Every job's limits: its memory (``TOKENFORGE_JOB_MEMORY_BYTES``) and a custom pattern's time in
training (``TOKENFORGE_TRAIN_PATTERN_SECONDS_PER_MB``) and in leaderboards (the pair's budget).

A job over a limit fails with a sentence naming the limit and its setting, stores nothing, leaves
no process behind, and the worker goes on to the next job. The job processes read both settings
from the environment they inherit from their worker, so the tests set them there.
"""

from __future__ import annotations

import multiprocessing
import os
import random
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from engine.trainers import train
from tests.hostile_patterns import COMMAS, SLOW
from tests.live import tagged_processes
from tests.webapp.jobs_support import add_job, job_row, session_for
from tests.webapp.training.memory_child import allocate
from webapp.jobs.job_child import GIB
from webapp.jobs.worker import Worker
from webapp.leaderboards.child import evaluate_pairs
from webapp.store.models import Tokenizer
from webapp.web.config import SettingsError, default_job_memory, load_settings

HOSTILE = {"vocab_size": 2000, "split_by_whitespace": False, "split_by_unicode_script": False, "split_by_number": False}


def made_up_lines(megabytes: float) -> str:
    """Lines of 12 made-up words: with ``HOSTILE`` options each line is one distinct word."""
    rng = random.Random(5)
    vocabulary = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(3, 10))) for _ in range(20_000)]
    lines, size = [], 0
    while size < megabytes * 1_000_000:
        lines.append(" ".join(rng.choices(vocabulary, k=12)))
        size += len(lines[-1]) + 1
    return "\n".join(lines) + "\n"


def test_the_memory_setting_defaults_to_half_the_machine_and_refuses_nonsense() -> None:
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert default_job_memory() >= 2 * GIB
    assert default_job_memory() <= max(2 * GIB, physical // 2)
    assert load_settings({})["JOB_MEMORY_BYTES"] == default_job_memory()
    assert load_settings({"TOKENFORGE_JOB_MEMORY_BYTES": str(GIB)})["JOB_MEMORY_BYTES"] == GIB
    assert load_settings({})["TRAIN_PATTERN_SECONDS_PER_MB"] == 10.0
    for bad in ("1000", "1e9", "-5", "٢٠٠٠٠٠٠٠٠٠", "lots"):
        with pytest.raises(SettingsError, match="TOKENFORGE_JOB_MEMORY_BYTES must be a whole number of bytes"):
            load_settings({"TOKENFORGE_JOB_MEMORY_BYTES": bad})
    with pytest.raises(SettingsError, match="TOKENFORGE_TRAIN_PATTERN_SECONDS_PER_MB must be greater than 0"):
        load_settings({"TOKENFORGE_TRAIN_PATTERN_SECONDS_PER_MB": "0"})


def test_a_child_over_its_memory_limit_reports_the_limit_and_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKENFORGE_JOB_MEMORY_BYTES", str(GIB))
    ctx = multiprocessing.get_context("spawn")
    parent, child_end = ctx.Pipe()
    child = ctx.Process(target=allocate, args=(child_end, os.getpid(), 2 * GIB))
    child.start()
    child_end.close()
    assert parent.poll(60)
    message = parent.recv()
    child.join(30)
    assert child.exitcode == 0
    assert message == ("error", "Training needed more than 1 GiB of memory, the limit of one job, and was stopped. "
                                "Nothing was saved. Try a smaller corpus or vocabulary. An administrator can raise "
                                "TOKENFORGE_JOB_MEMORY_BYTES (now 1,073,741,824 bytes).")


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_hostile_unigram_options_fail_cleanly_under_1_gib_and_the_worker_goes_on(
        db_app: Flask, tag: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The audit's case, 3 MB instead of 30: without split_by_whitespace each line is one word, and
    # seeding would count every substring of each (the 30 MB corpus grew past 9 GB).
    monkeypatch.setenv("TOKENFORGE_JOB_MEMORY_BYTES", str(GIB))
    corpus = made_up_lines(3)
    lines = corpus.splitlines()
    hostile = add_job(db_app, "unigram", corpus, HOSTILE)
    ordinary = add_job(db_app, "unigram", made_up_lines(1), {"vocab_size": 2000})  # trains within 1 GiB
    worker = Worker(dict(db_app.config), worker_id="test-worker")
    worker.run(once=True)
    worker.engine.dispose()
    failed, succeeded = job_row(db_app, hostile), job_row(db_app, ordinary)
    assert (failed.status, succeeded.status, succeeded.error) == ("failed", "succeeded", None)
    assert failed.error.startswith("Unigram training on this corpus would need about ")
    assert failed.error.endswith(
        f"GiB of memory, and this process may use 1.0 GiB: its {len(lines):,} distinct lines (each line is one word, "
        f"since split_by_whitespace is off) have {sum(map(len, lines)) + len(lines):,} characters, and seeding counts "
        "every substring of up to 17 "
        "characters of each. To train, turn split_by_whitespace on, train on less text or lower max_piece_length. "
        "An administrator can raise TOKENFORGE_JOB_MEMORY_BYTES (now 1,073,741,824 bytes).")
    with session_for(db_app) as session:
        assert [t.job_id for t in session.query(Tokenizer)] == [ordinary]
    assert tagged_processes(tag) == []


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_backtracking_pattern_fails_a_training_within_its_budget(
        db_app: Flask, tag: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKENFORGE_TRAIN_PATTERN_SECONDS_PER_MB", "0.2")
    job_id = add_job(db_app, "bpe", COMMAS, {"vocab_size": 300, "pretokenizer": SLOW})
    worker = Worker(dict(db_app.config), worker_id="test-worker")
    worker.run(once=True)
    worker.engine.dispose()
    job = job_row(db_app, job_id)
    assert (job.status, job.error) == ("failed", (
        f"The pre-tokenizer pattern {SLOW!r} took longer than 0.2 s of CPU on a chunk of 30,010 characters of the "
        "corpus (the budget is 0.2 s per million characters, and a million's for a shorter chunk); it backtracks "
        "too much on this text (nested repeats such as (?:.*,){6} do). Simplify the pattern. An administrator can "
        "raise TOKENFORGE_TRAIN_PATTERN_SECONDS_PER_MB (now 0.2)."))
    with session_for(db_app) as session:
        assert session.query(Tokenizer).count() == 0
    assert tagged_processes(tag) == []


def test_a_backtracking_pattern_fails_its_leaderboard_pair_and_the_others_go_on(tmp_path: Path) -> None:
    # The plain pair needs ~0.04 s of CPU. The budget is 50 times that because a busy CI host
    # (where CPU steal is charged as the process's CPU time) once made it take over 0.5 s.
    plain = tmp_path / "plain.txt"
    plain.write_text("the quick brown fox jumps over the lazy dog\n" * 200, encoding="utf-8")
    commas = tmp_path / "commas.txt"
    commas.write_text(COMMAS, encoding="utf-8")
    document = train("bpe", [plain], {"vocab_size": 300, "pretokenizer": SLOW}).tokenizer.to_json()
    results: dict[str, dict[str, Any]] = {}
    finished = evaluate_pairs([(1, str(commas)), (2, str(plain))], [7], load=lambda _id: document,
                              max_bytes=1 << 20, pair_seconds=2.0, report=results.__setitem__,
                              progress=lambda *_: None, should_cancel=lambda: False)
    assert finished
    assert results["1:7"] == {"error": (
        "The pre-tokenizer pattern took longer than 2 s on this text; it backtracks too much on this input "
        "(nested repeats such as (?:.*,){6} do). Simplify the pattern, or encode a shorter text.")}
    assert "error" not in results["2:7"] and results["2:7"]["tokens"] > 0
