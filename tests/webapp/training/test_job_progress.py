"""Job progress (issue 24, item 6): stage labels with units, totals that do not jump back, one ETA
for the whole job, and one duration on the job page and in the jobs list."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.webapp.training.job_samples import Clock, add_job
from webapp.jobs import kinds
from webapp.jobs.eta import Progress
from webapp.store import db
from webapp.store.models import Tokenizer
from webapp.training.stages import STAGE_SHARES, Shown, shown


@pytest.mark.parametrize(("row", "options", "expected"), [
    (("count", 81_788_928, 99_988_934), {}, Shown("counted 81.8 of 100.0 MB", 81_788_928 / 99_988_934)),
    (("count", 0, 2_500_000_000), {}, Shown("counted 0.0 of 2.5 GB", 0.0)),
    (("count", 512, 900), {}, Shown("counted 512 of 900 bytes", 512 / 900)),
    (("merge", 1234, 5000), {}, Shown("learned 1,234 of 5,000 merges", 0.2468)),
    (("words", 12_345, 12_345), {}, Shown("prepared 12,345 words", 1.0)),
    (("merges", 700, 1000), {}, Shown("vocabulary: 700 of 1,000 tokens", 0.7)),
    (("seeding", 0, 0), {}, Shown("seeding: choosing the candidate pieces", None)),
    (("lattice", 0, 0), {}, Shown("lattice: splitting the words into candidate pieces", None)),
    (("EM", 0, 24), {}, Shown("EM round 1: estimating and pruning pieces", 0.0)),
    (("EM", 5, 16), {}, Shown("EM round 3: estimating and pruning pieces", 5 / 16)),
    (("EM", 6, 18), {"n_sub_iterations": 3}, Shown("EM round 3: estimating and pruning pieces", 1 / 3)),
    (("EM", 14, 14), {}, Shown("EM and pruning: done after 7 rounds", 1.0)),
    ((None, 0, 0), {}, Shown("starting", None)),
    (("polish", 3, 4), {}, Shown("polish: 3 of 4", 0.75)),
], ids=["count-MB", "count-GB", "count-bytes", "bpe-merge", "wp-words", "wp-merges", "seeding", "lattice",
        "em-first", "em-round-3", "em-3-subs", "em-done", "starting", "unknown-stage"])
def test_each_stage_has_a_label_with_units(row: tuple[str | None, int, int], options: dict[str, int],
                                           expected: Shown) -> None:
    got = shown(*row, options)
    assert got.label == expected.label
    assert got.fraction == pytest.approx(expected.fraction)


def test_unigram_em_never_jumps_backwards() -> None:
    """The user's report: "1 of 24" then "3 of 16"; the rounds and the bar only go forward."""
    rows = [(0, 24), (1, 24), (2, 16), (3, 16), (4, 12), (5, 12), (6, 10), (7, 10), (8, 8)]
    seen = [shown("EM", current, total) for current, total in rows]
    rounds = [int(m.group(1)) for s in seen if (m := re.search(r"round (\d+)", s.label))]
    assert rounds == [1, 1, 2, 2, 3, 3, 4, 4]
    fractions = [s.fraction for s in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0


def test_the_shares_of_each_algorithm_add_up() -> None:
    for algorithm, plan in STAGE_SHARES.items():
        assert sum(share for _, share in plan) == pytest.approx(1.0), algorithm


def test_the_train_kind_gives_the_worker_its_stage_shares(app: Flask) -> None:
    """The queue's ETA knows no trainer: the "train" kind, and its "extend" algorithm, register the
    shares (``JobKind.stages``) that the worker hands to ``Progress``; the other kinds have none."""
    for algorithm in ("bpe", "unigram", "extend"):
        kind = kinds.for_job("train", algorithm)
        assert kind is not None and kind.stages[algorithm] == STAGE_SHARES[algorithm]
    assert kinds.for_job("analyse", None).stages == {}  # type: ignore[union-attr]
    assert Progress(algorithm="bpe").row()["eta_seconds"] is None  # no plans given: no ETA, no error


def simulate(progress: Progress, clock: Clock, stages: list[tuple[str, float, int]]) -> list[tuple[float, float | None]]:
    """Run stages of (name, seconds, total) at a steady pace, a report every 0.2 s (one at the start
    of a stage without numbers); return (true seconds left, ETA) after each report."""
    end = clock.now + sum(seconds for _, seconds, _ in stages)
    out = []
    for name, seconds, total in stages:
        steps = max(1, round(seconds / 0.2)) if total else 1
        for i in range(steps):
            progress.update(name, total * i // steps, total)
            out.append((end - clock.now, progress.eta()))
            clock.now += seconds / steps
    return out


@pytest.mark.parametrize("algorithm", ["bpe", "unigram", "wordpiece"])
def test_one_eta_for_the_whole_job_once_the_pace_is_steady(algorithm: str) -> None:
    """A 27 s job whose stages take their measured shares: the ETA during the first stage is the
    whole job's, not the stage's ("about 3 s left" while counting), and a Unigram job gets one."""
    clock = Clock()
    plan = STAGE_SHARES[algorithm]
    stages = [(name, 27 * share, 0 if name in ("seeding", "lattice") else 1000) for name, share in plan]
    out = simulate(Progress(clock, plans=STAGE_SHARES, algorithm=algorithm), clock, stages)
    shown_etas = [(left, eta) for left, eta in out if eta is not None]
    assert shown_etas and shown_etas[0][0] > 27 * plan[-1][1] + 0.1  # shown before the last stage begins
    for left, eta in shown_etas:
        assert abs(eta - left) <= 0.1 * left + 1.0, (left, eta)


def test_an_eta_waits_for_a_steady_pace() -> None:
    clock = Clock()
    progress = Progress(clock, plans=STAGE_SHARES, algorithm="bpe")
    # Counting at a pace that halves every second: the predictions never agree.
    etas = [eta for _, eta in simulate(progress, clock, [("count", 0.2, 1000)])]
    for i in range(30):
        clock.now += 0.2
        progress.update("count", int(1000 * (1 - 0.5 ** ((i + 1) * 0.2))), 1000)
        etas.append(progress.eta())
    assert etas == [None] * len(etas)


def test_without_the_algorithm_the_plan_is_found_from_the_stages() -> None:
    """Every trainer counts first; only a later stage tells which plan applies."""
    clock = Clock()
    progress = Progress(clock, plans=STAGE_SHARES)
    out = simulate(progress, clock, [("count", 9.0, 1000), ("EM", 18.0, 1000)])  # "merge" is BPE's and extend's
    counting = out[: round(9.0 / 0.2)]
    assert all(eta is None for _, eta in counting)
    assert any(eta is not None for _, eta in out[len(counting):])


def test_the_job_page_and_the_list_show_the_same_duration(client: FlaskClient, app: Flask) -> None:
    """The page said "Finished in 1.29 s" (the trainer's own clock), the list 1.54 s (the job's)."""
    start = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.timezone.utc)
    job_id = add_job(app, status="succeeded", started_at=start, finished_at=start + dt.timedelta(seconds=1.54))
    with app.app_context():
        session = db.get_session()
        session.add(Tokenizer(team_id=1, name="bpe run", algorithm="bpe", tokenizer_json="{}", config={}, stats={},
                              vocab_size=300, training_seconds=1.29, job_id=job_id))
        session.commit()
    page = client.get(f"/jobs/{job_id}").get_data(as_text=True)
    listed = client.get("/jobs").get_data(as_text=True)
    assert re.search(r'Finished in <span data-testid="duration">1\.54 s</span>', page)
    assert re.search(rf'<tr data-job="{job_id}">.*?<td data-testid="duration">1\.54 s</td>', listed, re.S)


def test_a_running_job_page_shows_the_label_and_the_bar(client: FlaskClient, app: Flask) -> None:
    job_id = add_job(app, status="running", started_at=dt.datetime.now(dt.timezone.utc),
                     progress_stage="count", progress_current=81_788_928, progress_total=99_988_934, eta_seconds=21.4)
    page = client.get(f"/jobs/{job_id}").get_data(as_text=True)
    assert '<span data-testid="stage">counted 81.8 of 100.0 MB</span>' in page
    assert '<span class="hint" data-testid="eta">about 21 s left</span>' in page
    assert '<progress max="1" value="0.8180"></progress>' in page
