"""Samples shared by the job-page tests: a clock the test moves by hand, and a stored job."""

from __future__ import annotations

from flask import Flask

from webapp.store import db
from webapp.store.models import Job


class Clock:
    """A fake monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def add_job(app: Flask, **values: object) -> int:
    with app.app_context():
        session = db.get_session()
        job = Job(team_id=1, name="bpe run", algorithm="bpe", corpus_ids=[1],
                  options={"vocab_size": 300, "special_tokens": ["<|endoftext|>", "<pad>"], "min_frequency": 3,
                           "max_token_length": None}, **values)
        session.add(job)
        session.commit()
        return job.id
