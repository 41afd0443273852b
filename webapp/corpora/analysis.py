"""Where a corpus's statistics stand: analysed, being analysed, or the analysis failed.

A new corpus has only its cheap facts until its "analyse" job (``job_kinds.enqueue_analysis``,
``analyse_child.py``) stores the full statistics. The corpus pages show figures, "analysing…"
(polling until it changes) or the reason the analysis failed, from the state built here. A
corpus whose analysis failed is still a corpus: training reads the stored file, never these
statistics. Rendering is the templates' business; the queue is ``jobs/``'s.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from webapp.corpora.stats import is_analysed
from webapp.store.models import Corpus, Job


@dataclass(frozen=True)
class AnalysisState:
    """One corpus's analysis, as its pages need it."""

    status: str  # "done" | "queued" | "running" | "failed"
    error: str | None = None  # why it failed, as a sentence
    percent: int | None = None  # of the file read so far, while running

    @property
    def pending(self) -> bool:
        """Whether the figures are still to come (so the page keeps polling)."""
        return self.status in ("queued", "running")


def _state(corpus: Corpus, job: Job | None) -> AnalysisState:
    if is_analysed(corpus.stats):
        return AnalysisState("done")
    if job is None:
        return AnalysisState("failed", "The analysis did not run.")
    if job.status == "running":
        total = job.progress_total
        return AnalysisState("running", percent=min(100, job.progress_current * 100 // total) if total else None)
    if job.status == "queued":
        return AnalysisState("queued")
    if job.status == "cancelled":
        return AnalysisState("failed", "The analysis was cancelled.")
    return AnalysisState("failed", job.error or "The analysis finished without storing its figures.")


def analysis_states(session: Session, corpora: Iterable[Corpus]) -> dict[int, AnalysisState]:
    """The analysis state of each corpus, by corpus id (one query for all their jobs)."""
    corpora = list(corpora)
    job_ids = [c.analysis_job_id for c in corpora if c.analysis_job_id and not is_analysed(c.stats)]
    found = {job.id: job for job in session.scalars(select(Job).where(Job.id.in_(job_ids)))} if job_ids else {}
    return {c.id: _state(c, found.get(c.analysis_job_id or 0)) for c in corpora}
