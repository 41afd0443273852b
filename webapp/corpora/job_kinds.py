"""The "analyse" job, registered with the queue: a new corpus's statistics, computed in the background.

An upload stores the corpus with its cheap facts and queues its analysis (:func:`enqueue_analysis`);
the worker runs ``analyse_child.run`` on the stored file, and :func:`complete_analysis` writes the
figures in the transaction that marks the job succeeded. Analyses are quick (``JobKind.quick``):
a team's are claimed before its queued trainings, since a user who just uploaded waits for them.
:func:`corpus_paths` is also how the training jobs find their corpora's files.

Left out: the child's work (``analyse_child.py``), the page state (``analysis.py``) and the queue
itself (``jobs/``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import update
from sqlalchemy.orm import Session

from webapp.corpora import analyse_child
from webapp.corpora.storage import CorpusStore
from webapp.jobs import queue
from webapp.jobs.kinds import JobKind, Words, register
from webapp.store.model_base import MAX_NAME
from webapp.store.models import Corpus, Job


def enqueue_analysis(session: Session, corpus: Corpus) -> Job:
    """Queue the analysis of ``corpus`` (flushed, with an id), point the corpus at it, commit."""
    job = Job(team_id=corpus.team_id, kind="analyse", name=f"Analyse {corpus.name}"[:MAX_NAME],
              algorithm="", options={}, corpus_ids=[corpus.id])
    session.add(job)
    session.flush()
    corpus.analysis_job_id = job.id
    session.commit()
    return job


def complete_analysis(session: Session, job_id: int, worker_id: str, *, stats: dict[str, Any]) -> bool:
    """Store a corpus's statistics and mark its analysis job succeeded, in one transaction.

    The statistics go only to a corpus that still points at this job: a deleted corpus, or one
    whose analysis was queued again since, is left alone. Return whether the job was still ours.
    """
    job = queue.succeed(session, job_id, worker_id)
    if job is None:
        return False
    session.execute(
        update(Corpus)
        .where(Corpus.id.in_(job.corpus_ids), Corpus.analysis_job_id == job_id)
        .values(stats=stats)
        .execution_options(synchronize_session=False)
    )
    session.commit()
    return True


def corpus_paths(session: Session, settings: Mapping[str, Any], corpus_ids: list[int], *,
                 before: str) -> list[str] | str:
    """The stored files of ``corpus_ids``, or the sentence naming one deleted ``before`` ("training") started."""
    store = CorpusStore(settings["CORPUS_DIR"])
    paths = []
    for corpus_id in corpus_ids:
        corpus = session.get(Corpus, corpus_id)
        path = store.path(corpus.sha256) if corpus is not None else None
        if path is None or not path.is_file():
            return f"Corpus #{corpus_id} was deleted before {before} started."
        paths.append(str(path))
    return paths


def _child_args(session: Session, job: Job, settings: Mapping[str, Any]) -> tuple[Any, ...] | str:
    paths = corpus_paths(session, settings, job.corpus_ids, before="its analysis")
    return paths if isinstance(paths, str) else (paths[0], int(settings["WORKER_NICE"]))


def _complete(session: Session, job_id: int, worker_id: str, message: tuple[Any, ...]) -> bool:
    return complete_analysis(session, job_id, worker_id, stats=message[1])


ANALYSE = register(JobKind(
    "analyse", Words(what="analysis", subject="The analysis"),
    child=analyse_child.run, child_args=_child_args, complete=_complete, quick=True,
))
