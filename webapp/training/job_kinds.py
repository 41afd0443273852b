"""The "train" job, registered with the queue: a tokenizer trained from corpora, or one extended with them.

A training form queues a job through ``queue.enqueue`` (under the team's cap on waiting jobs); the
worker runs ``train_child.run`` on the corpora's files, or ``extend_child.run`` for a job whose
algorithm is "extend" (``extend_job.py``: a kind of its own for that algorithm, with the same
words), and :func:`complete` stores the tokenizer in the transaction that marks the job succeeded.

Left out: the children's work (``train_child.py``, ``extend_child.py``), the forms and the pages,
and the queue itself (``jobs/``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy.orm import Session

from webapp.corpora.job_kinds import corpus_paths
from webapp.corpora.storage import CorpusStore
from webapp.jobs import queue
from webapp.jobs.kinds import JobKind, Words, register
from webapp.store.models import Job, Tokenizer
from webapp.tokenizers.originals import take_original
from webapp.training import extend_child, extend_job, train_child
from webapp.training.stages import STAGE_SHARES


def complete(session: Session, job_id: int, worker_id: str, *, tokenizer_json: str,
             stats: dict[str, Any]) -> Tokenizer | None:
    """Store the trained tokenizer and mark the job succeeded, in one transaction."""
    job = queue.succeed(session, job_id, worker_id)
    if job is None:
        return None
    seconds = stats.get("seconds")
    if job.algorithm == extend_job.EXTEND:  # named after what was added; the base's id and the report
        fields = extend_job.row_fields(job, stats)
    else:  # a sentencepiece-style BPE keeps its .model, which its tokenizer.json cannot stand for
        fields = {"name": job.name, "algorithm": job.algorithm,
                  "config": {"algorithm": job.algorithm, "options": stats.get("options", job.options),
                             "corpus_ids": job.corpus_ids, **take_original(stats)}}
    tokenizer = Tokenizer(
        team_id=job.team_id,  # the tokenizer belongs to the team that trained it
        source="trained",
        tokenizer_json=tokenizer_json,
        **fields,
        stats=stats,
        vocab_size=int(stats.get("vocab_size", 0)),
        training_seconds=float(seconds) if isinstance(seconds, (int, float)) else None,
        job_id=job_id,
    )
    session.add(tokenizer)
    session.commit()
    return tokenizer


def _store_tokenizer(session: Session, job_id: int, worker_id: str, message: tuple[Any, ...]) -> bool:
    """``("done", tokenizer_json, stats)``, from either child, stored."""
    return complete(session, job_id, worker_id, tokenizer_json=message[1], stats=message[2]) is not None


def _train_args(session: Session, job: Job, settings: Mapping[str, Any]) -> tuple[Any, ...] | str:
    paths = corpus_paths(session, settings, job.corpus_ids, before="training")
    if isinstance(paths, str):
        return paths
    return (job.algorithm, paths, dict(job.options), int(settings["WORKER_NICE"]), settings.get("DASK_SCHEDULER"))


def _extend_args(session: Session, job: Job, settings: Mapping[str, Any]) -> tuple[Any, ...] | str:
    paths = corpus_paths(session, settings, job.corpus_ids, before="training")
    if isinstance(paths, str):
        return paths
    args, missing = extend_job.child_args(session, CorpusStore(settings["CORPUS_DIR"]), job, paths,
                                          int(settings["WORKER_NICE"]), settings["DATABASE_URL"])
    return args if args is not None else str(missing)


_WORDS = Words(what="training", subject="Training", advice=" Train on less text or a smaller vocabulary, or",
               many="trainings")
# Both look their job's algorithm up in the one table of stage shares ("extend" is among them).
TRAIN = register(JobKind("train", _WORDS, child=train_child.run, child_args=_train_args, complete=_store_tokenizer,
                         capped=True, stages=STAGE_SHARES))
EXTEND = register(JobKind("train", _WORDS, algorithm=extend_job.EXTEND, child=extend_child.run,
                          child_args=_extend_args, complete=_store_tokenizer, capped=True, stages=STAGE_SHARES))
