"""The "leaderboard" job, registered with the queue: every (corpus, tokenizer) pair of a board, evaluated.

A new board is queued with its job (:func:`enqueue_leaderboard`, under the team's cap on waiting
jobs); the worker runs ``child.run`` on the board's plan (``leaderboard.job_plan``), stores each
pair the child sends as it comes (:func:`record_pair`), so the page fills in while it polls, and
marks the job succeeded at the end (:func:`complete_leaderboard`). A board deleted before its job
ran fails the job with a sentence; a stopped job keeps the pairs stored so far.

Left out: the child's work (``child.py``), bounds, slices and rows (``leaderboard.py``), and the
queue itself (``jobs/``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from webapp.corpora.storage import CorpusStore
from webapp.jobs import queue
from webapp.jobs.kinds import JobKind, Words, register
from webapp.leaderboards import child, leaderboard
from webapp.store.models import Job, Leaderboard


def enqueue_leaderboard(session: Session, board: Leaderboard, *, options: dict[str, Any],
                        max_queued: int | None = None) -> Job:
    """Queue the job that fills in ``board`` (new, not yet added), link the two, commit.

    ``options`` holds the job's bounds (``leaderboard.job_options``). The team's cap on waiting
    jobs applies as to a training (``queue.enqueue``); a refused board is not added.
    """
    job = Job(team_id=board.team_id, kind="leaderboard", name=board.name, algorithm="", options=options,
              corpus_ids=[entry["id"] for entry in board.corpora])
    queue.add_within_cap(session, job, max_queued)
    board.job_id = job.id
    session.add(board)
    session.commit()
    return job


def record_pair(session: Session, job_id: int, worker_id: str, key: str, result: dict[str, Any]) -> bool:
    """Add one finished (corpus, tokenizer) pair to the leaderboard of a job its caller still owns.

    Only the job's worker writes the results, one pair at a time, so reading the column and
    writing it back loses nothing. Return whether the job was still ours.
    """
    owned = queue.owns(session, job_id, worker_id)
    board = session.scalar(select(Leaderboard).where(Leaderboard.job_id == job_id)) if owned else None
    if board is None:
        session.rollback()
        return False
    board.results = {**board.results, key: result}
    session.commit()
    return True


def complete_leaderboard(session: Session, job_id: int, worker_id: str) -> bool:
    """Mark a leaderboard job succeeded (its pairs are already stored); return whether it was ours."""
    if queue.succeed(session, job_id, worker_id) is None:
        return False
    session.commit()
    return True


def _child_args(session: Session, job: Job, settings: Mapping[str, Any]) -> tuple[Any, ...] | str:
    """The board's plan and bounds; pairs whose corpus or tokenizer is gone fail alone, in the child."""
    board = session.scalar(select(Leaderboard).where(Leaderboard.job_id == job.id))
    if board is None:
        return "The leaderboard was deleted before it ran."
    plan = leaderboard.job_plan(session, CorpusStore(settings["CORPUS_DIR"]), board)
    return (settings["DATABASE_URL"], plan, int(job.options["max_bytes"]), float(job.options["pair_seconds"]),
            int(settings["WORKER_NICE"]))


def _store_pair(session: Session, job_id: int, worker_id: str, message: tuple[Any, ...]) -> bool:
    return record_pair(session, job_id, worker_id, message[1], message[2])


LEADERBOARD = register(JobKind(
    "leaderboard",
    Words(what="leaderboard", subject="The leaderboard", saved="The pairs evaluated so far are kept.",
          advice=" Choose fewer tokenizers or corpora, or a smaller slice, or", many="leaderboards"),
    child=child.run, child_args=_child_args, handle={"pair": _store_pair}, capped=True,
    complete=lambda session, job_id, worker_id, _message: complete_leaderboard(session, job_id, worker_id),
))
