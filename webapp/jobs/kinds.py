"""The kinds of job, as the areas register them: all the queue, the worker and the supervisor know of them.

The queue sits below every area, so it cannot import what a training, a corpus analysis or a
leaderboard is. Each area describes its kinds as a :class:`JobKind` and calls :func:`register` in
its own ``job_kinds.py`` ("train" and its "extend" algorithm in ``training/``, "analyse" in
``corpora/``, "leaderboard" in ``leaderboards/``); ``webapp/job_kinds.py`` imports those modules,
and every process that queues, runs or recovers jobs imports it first (``create_app``,
``tokenforge worker``, ``serve``'s supervisor). A kind says

- how its job starts: the child's entry point and its arguments (or why the job cannot start);
- what to do with the child's messages beyond progress and the outcome (a leaderboard's pairs);
- how to store a successful outcome, in the transaction that marks the job succeeded;
- how a failure reads: the words of the sentences the worker and the queue's recovery write;
- whether its jobs count toward a team's cap on waiting jobs, and how the cap's sentence names them;
- its stages' shares of a job's time, from which the worker's ETA is made (``eta.py``).

A "train" job whose algorithm needs another child (``extend``) registers a kind of its own for
that algorithm (:func:`for_job`); the sentences are the kind's (:func:`words`).

Left out: the job states (``store/job_states.py``), and running or recording anything
(``worker.py``, ``queue.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from webapp.jobs.eta import Plan
from webapp.store.models import Job

#: ``child_args(session, job, settings)``: the child's arguments after its pipe and the worker's
#: pid, or the sentence that fails a job which cannot start (a corpus deleted since it was queued).
ChildArgs = Callable[[Session, Job, Mapping[str, Any]], "tuple[Any, ...] | str"]
#: ``complete(session, job_id, worker_id, message)``: store a ``("done", ...)`` message's result
#: and mark the job succeeded in one transaction; whether the job was still the worker's.
Complete = Callable[[Session, int, str, "tuple[Any, ...]"], bool]
#: ``handle(session, job_id, worker_id, message)``: a message of the child's besides progress and outcome.
Handle = Callable[[Session, int, str, "tuple[Any, ...]"], Any]


@dataclass(frozen=True)
class Words:
    """How the sentences about a kind's jobs name them, when one fails or stops early."""

    what: str  # "The training process was killed ...", "The training ran longer than the time limit ..."
    subject: str  # the recovery's sentence: "Training failed after 2 attempts: each time, ..."
    saved: str = "Nothing was saved."  # what is left of a job that stopped early
    advice: str = ""  # after a time-limit stop: " Train on less text or a smaller vocabulary, or"
    many: str = ""  # the cap's sentence, beside another kind: "jobs (trainings and leaderboards)"


@dataclass(frozen=True)
class JobKind:
    """One kind of job (``jobs.kind``), or one algorithm of the "train" kind with a child of its own."""

    name: str  # the ``jobs.kind`` value: "train", "analyse", "leaderboard"
    words: Words
    child: Callable[..., None]  # the child's entry point, ``child(conn, parent_pid, *child_args)``
    child_args: ChildArgs
    complete: Complete
    algorithm: str | None = None  # a "train" job's algorithm with its own child ("extend"); None: any other
    handle: Mapping[str, Handle] = field(default_factory=dict)  # message name -> handler ("pair")
    quick: bool = False  # claimed before the team's other queued jobs (seconds, and a user waits on it)
    #: Counts toward the team's cap on waiting jobs (``queue.add_within_cap``): a kind a user queues
    #: by hand. An analysis is queued by an upload, which has bounds of its own.
    capped: bool = False
    #: Each algorithm's stages with their share of a job's time, from which the worker makes one
    #: ETA for the job (``eta.Progress``); "" for a kind without algorithms. None known: no ETA.
    stages: Mapping[str, Plan] = field(default_factory=dict)


_KINDS: dict[tuple[str, str | None], JobKind] = {}


def register(kind: JobKind) -> JobKind:
    """Add ``kind`` (again: the same key is replaced, so importing twice is harmless); return it."""
    _KINDS[(kind.name, kind.algorithm)] = kind
    return kind


def registered() -> list[JobKind]:
    """The kinds registered so far, algorithm-specific ones included."""
    return list(_KINDS.values())


def for_job(kind: str, algorithm: str | None) -> JobKind | None:
    """The kind that runs a job of ``kind`` with ``algorithm``: the algorithm's own, else the kind's."""
    return _KINDS.get((kind, algorithm or None)) or _KINDS.get((kind, None))


def words(kind: str) -> Words:
    """How sentences name the jobs of ``kind`` (an algorithm's own kind shares its kind's words).

    An unregistered kind (in a process that did not import ``webapp.job_kinds``) still reads plainly."""
    found = _KINDS.get((kind, None))
    return found.words if found is not None else Words(what=kind, subject=f"The {kind} job")


def quick() -> list[str]:
    """The kinds claimed before a team's other queued jobs."""
    return sorted({kind.name for kind in _KINDS.values() if kind.quick})


def capped() -> list[str]:
    """The kinds that count toward a team's cap on waiting jobs."""
    return sorted({kind.name for kind in _KINDS.values() if kind.capped})
