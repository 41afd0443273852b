"""The job queue: the ``jobs`` table and the state changes that make it safe to share.

Every kind of job shares the queue. This module knows them only through the registry the areas
fill (``kinds.py``): what a job runs, what its result is, whether it counts toward a team's cap
and how sentences name it are its kind's business. The queue is fair across teams, round-robin in
the claim itself:

1. among the teams with a queued job, those running the fewest jobs go first, so a team already
   running one gets no second one while another team waits (with one worker: one job per team
   at a time, whoever queued more);
2. among those, the team whose latest job *started* longest ago (a team that never ran one
   first), so a team that queued 20 jobs has its turn, then every other team has theirs;
3. within the team, the quick kinds first (``JobKind.quick``: analyses take seconds to minutes
   where training takes minutes to hours, and a user who just uploaded is waiting for one); then
   the oldest job.

A training job already running is never interrupted; so that an analysis need not wait for one, a
worker can be limited to some kinds (``claim(kinds=...)``, ``tokenforge worker --only analyse``),
and ``tokenforge serve`` starts such a lane beside its general worker. More workers (``tokenforge
worker`` on this or other machines) are more lanes: each claim takes the next team's turn.

Each team may have only ``TOKENFORGE_MAX_QUEUED_JOBS`` jobs of the capped kinds waiting (``JobKind.capped``:
those a user queues by hand), and the bound is exact however many requests arrive at once
(:func:`add_within_cap`: insert, then count within the same transaction, holding the team's row on
PostgreSQL and the write lock on SQLite).

Every transition is one conditional UPDATE, so several workers (on several machines) and the
web processes can act at once without losing or double-running a job:

- :func:`claim` takes the next queued job in that order atomically (``UPDATE … RETURNING``; on
  PostgreSQL the candidate row is picked with ``FOR UPDATE SKIP LOCKED`` so claimers never wait
  on each other);
- :func:`heartbeat`, :func:`succeed` and :func:`finish` only touch a job its caller still owns;
- :func:`recover_stale` re-queues jobs whose worker stopped sending heartbeats, and gives up
  after ``max_attempts``; :func:`recover_worker` does the same at once for a worker known to be
  dead (``serve``'s supervisor saw it exit).

Running a job is ``worker.py``'s job; this module never starts processes.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Sequence
from typing import Any

from sqlalchemy import case, func, literal, select, update
from sqlalchemy.orm import Session, aliased

from webapp.jobs import kinds as kinds_registry
from webapp.store.models import Job, Team, utcnow


class QueueFull(Exception):
    """The team already has as many jobs of the capped kinds waiting as it may."""


def queued_by_kind(session: Session, team_id: int, kinds: Collection[str]) -> dict[str, int]:
    """How many of ``team_id``'s jobs of ``kinds`` wait in the queue, per kind, the kind of the
    longest-waiting job first."""
    rows = session.execute(select(Job.kind, func.count()).where(
        Job.team_id == team_id, Job.kind.in_(kinds), Job.status == "queued")
        .group_by(Job.kind).order_by(func.min(Job.id)))
    return {kind: int(count) for kind, count in rows}


def _queue_full(session: Session, team_id: int, capped: Collection[str], max_queued: int) -> QueueFull:
    """The refusal of one more job for ``team_id``, naming what it has waiting: "training jobs"
    when one kind waits, "jobs (trainings and leaderboards)" when several do."""
    waiting = [kinds_registry.words(kind) for kind in queued_by_kind(session, team_id, capped)]
    if len(waiting) == 1:
        what = f"{waiting[0].what} jobs"
    else:
        names = [words.many or words.what for words in waiting]
        what = f"jobs ({', '.join(names[:-1])} and {names[-1]})" if names else "jobs"
    return QueueFull(f"Your team already has {max_queued:,} {what} waiting; cancel one, or wait "
                     "until one starts, then try again.")


def add_within_cap(session: Session, job: Job, max_queued: int | None) -> None:
    """Add and flush ``job`` (a capped kind), or roll back and raise :class:`QueueFull` if over the cap.

    The capped kinds (``JobKind.capped``: trainings and leaderboards) share the one cap, ``job``'s
    own kind among them even in a process that registered none: each waiting job is a row every
    claim sorts, and a script could add millions. Counting first and inserting after would let 40
    requests at the same instant all see 19 waiting; so the job goes in first and the count, taken
    in the same transaction, includes it. The count sees every other enqueue of the team that committed
    before, and none can commit meanwhile: on PostgreSQL each holds the team's row (``FOR NO KEY
    UPDATE``, which still lets other rows reference the team) until its commit; on SQLite the
    INSERT takes the database's write lock, held until the commit.
    """
    if max_queued is not None:
        session.execute(select(Team.id).where(Team.id == job.team_id).with_for_update(key_share=True)).all()
    session.add(job)
    session.flush()
    if max_queued is None:
        return
    team_id, capped = job.team_id, {*kinds_registry.capped(), job.kind}
    if sum(queued_by_kind(session, team_id, capped).values()) > max_queued:
        session.rollback()
        raise _queue_full(session, team_id, capped, max_queued)


def enqueue(
    session: Session,
    *,
    team_id: int,
    name: str,
    algorithm: str,
    options: dict[str, Any],
    corpus_ids: Sequence[int],
    max_queued: int | None = None,
) -> Job:
    """Add a queued job of ``team_id`` and commit it.

    With ``max_queued``, refuse (:class:`QueueFull`, the session rolled back) when the team
    already has that many jobs of the capped kinds waiting, exactly under concurrent requests.
    """
    job = Job(team_id=team_id, name=name, algorithm=algorithm, options=options,
              corpus_ids=list(corpus_ids))
    add_within_cap(session, job, max_queued)
    session.commit()
    return job


def run_seconds(job: Job, now: dt.datetime | None = None) -> float | None:
    """How long ``job`` has run: from the worker claiming its latest attempt (``started_at``) to
    ``finished_at``, or to now while it runs; None if it never started. It includes starting the
    child process, reading the corpora and saving, unlike the trainer's ``stats["seconds"]``:
    the time the user waited, which the job page and the jobs list both show."""
    if job.started_at is None:
        return None
    end = job.finished_at or (now or utcnow() if job.status == "running" else None)
    if end is None:
        return None

    def aware(moment: dt.datetime) -> dt.datetime:  # SQLite gives naive UTC times back
        return moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)

    return max(0.0, (aware(end) - aware(job.started_at)).total_seconds())


def claim(session: Session, worker_id: str, *, kinds: Collection[str] | None = None) -> int | None:
    """Atomically mark the next queued job as running for ``worker_id``; return its id.

    The next job is the turn of the team running the fewest jobs, then of the one whose latest
    job started longest ago (never: first), then that team's analyses, then its oldest job (see
    the module docstring). With ``kinds``, only jobs of those kinds (of
    :data:`~webapp.store.job_states.JOB_KINDS`) are candidates. One statement, so two claimers
    never take the same job.
    """
    now = utcnow()
    waiting, running, started = aliased(Job), aliased(Job), aliased(Job)
    queued = waiting.status == "queued"
    if kinds is not None:
        queued = queued & waiting.kind.in_(list(kinds))
    team_running = (
        select(func.count(running.id))
        .where(running.team_id == waiting.team_id, running.status == "running")
        .scalar_subquery()
    )
    # When the team's latest job started (any kind, any state): the older, the sooner its turn.
    team_last_start = (
        select(func.max(started.started_at)).where(started.team_id == waiting.team_id).scalar_subquery()
    )
    candidate = (
        select(waiting.id)
        .where(queued)
        .order_by(
            team_running,
            team_last_start.asc().nulls_first(),
            case((waiting.kind.in_(kinds_registry.quick()), 0), else_=1),
            waiting.id,
        )
        .limit(1)
        # PostgreSQL: lock only the candidate row, skipping rows another claimer holds; SQLite
        # serialises writers anyway (and leaves the clause out). Two claimers at the same instant
        # may both see a team's turn (neither has committed its start yet) and start two of its
        # jobs; the next claims see both running and go to the other teams.
        .with_for_update(skip_locked=True, of=waiting)
        .scalar_subquery()
    )
    stmt = (
        update(Job)
        .where(Job.id == candidate, Job.status == "queued")
        .values(
            status="running",
            worker_id=worker_id,
            attempts=Job.attempts + 1,
            heartbeat_at=now,
            started_at=now,
            progress_stage="starting",
            progress_current=0,
            progress_total=0,
            eta_seconds=None,
        )
        .returning(Job.id)
        .execution_options(synchronize_session=False)
    )
    job_id = session.execute(stmt).scalar_one_or_none()
    session.commit()
    return job_id


def _owned(job_id: int, worker_id: str) -> Any:
    return update(Job).where(
        Job.id == job_id, Job.worker_id == worker_id, Job.status == "running"
    ).execution_options(synchronize_session=False)


def heartbeat(
    session: Session,
    job_id: int,
    worker_id: str,
    *,
    stage: str | None = None,
    current: int = 0,
    total: int = 0,
    eta_seconds: float | None = None,
) -> tuple[bool, bool]:
    """Record liveness and progress; return (still ours, cancel requested)."""
    values: dict[str, Any] = {"heartbeat_at": utcnow()}
    if stage is not None:
        values.update(
            progress_stage=stage[:200],
            progress_current=current,
            progress_total=total,
            eta_seconds=eta_seconds,
        )
    stmt = _owned(job_id, worker_id).values(**values).returning(Job.cancel_requested)
    cancel = session.execute(stmt).scalar_one_or_none()
    session.commit()
    return cancel is not None, bool(cancel)


def finish(
    session: Session, job_id: int, worker_id: str, status: str, *, error: str | None = None
) -> bool:
    """End an owned running job as failed or cancelled; return whether it was still ours."""
    if status not in ("failed", "cancelled"):
        raise ValueError(f"finish() ends jobs as failed or cancelled, not {status!r}")
    stmt = _owned(job_id, worker_id).values(status=status, error=error, finished_at=utcnow())
    done = session.execute(stmt).rowcount == 1
    session.commit()
    return done


def release(session: Session, job_id: int, worker_id: str) -> bool:
    """Put an owned job back in the queue without counting the attempt (worker shutting down)."""
    stmt = _owned(job_id, worker_id).values(
        status="queued", worker_id=None, attempts=Job.attempts - 1, heartbeat_at=None
    )
    done = session.execute(stmt).rowcount == 1
    session.commit()
    return done


def succeed(session: Session, job_id: int, worker_id: str) -> Job | None:
    """Mark a job its caller still owns succeeded, without committing; the job, or None (rolled back).

    The job's kind stores its result in the same transaction and commits (``JobKind.complete``), so
    a job is never succeeded without its result, nor a result stored for a job someone else owns.
    """
    job = session.get(Job, job_id)
    stmt = _owned(job_id, worker_id).values(
        status="succeeded", finished_at=utcnow(), error=None, progress_stage="done", eta_seconds=0.0
    )
    if job is None or session.execute(stmt).rowcount != 1:
        session.rollback()
        return None
    return job


def owns(session: Session, job_id: int, worker_id: str) -> bool:
    """Whether ``worker_id`` still runs ``job_id`` (a partial result may be stored for it)."""
    return session.scalar(select(Job.id).where(Job.id == job_id, Job.worker_id == worker_id,
                                               Job.status == "running")) is not None


def request_cancel(session: Session, job_id: int) -> str | None:
    """Cancel a queued job at once, or ask a running job's worker to stop; return the status."""
    now = utcnow()
    session.execute(
        update(Job)
        .where(Job.id == job_id, Job.status == "queued")
        .values(status="cancelled", finished_at=now, cancel_requested=True)
        .execution_options(synchronize_session=False)
    )
    session.execute(
        update(Job)
        .where(Job.id == job_id, Job.status == "running")
        .values(cancel_requested=True)
        .execution_options(synchronize_session=False)
    )
    session.commit()
    return session.scalar(select(Job.status).where(Job.id == job_id))


def recover_stale(
    session: Session, *, stale_seconds: float, max_attempts: int, now: dt.datetime | None = None
) -> dict[str, list[int]]:
    """Deal with running jobs whose heartbeat is older than ``stale_seconds``.

    A stale job that was being cancelled becomes cancelled; one that has had ``max_attempts``
    attempts fails with the reason; any other goes back to the queue for another worker.
    """
    now = now or utcnow()
    cutoff = now - dt.timedelta(seconds=stale_seconds)
    silent = f"its worker stopped sending heartbeats for more than {stale_seconds:g} seconds"
    return _recover(session, (Job.status == "running", Job.heartbeat_at < cutoff), now=now,
                    max_attempts=max_attempts, why=silent,
                    each_time=f"{silent} (the worker process was killed or its machine stopped)")


def recover_worker(session: Session, worker_id: str, *, max_attempts: int, why: str) -> dict[str, list[int]]:
    """Deal at once with the running jobs of ``worker_id``, a worker known to be dead.

    Only for a worker that cannot write again (``serve``'s supervisor has seen its process exit):
    nothing waits for its heartbeats to go stale. ``why`` ends "Re-queued because ..." (e.g. "its
    worker process was killed by signal 9"). The outcomes are :func:`recover_stale`'s.
    """
    return _recover(session, (Job.status == "running", Job.worker_id == worker_id), now=utcnow(),
                    max_attempts=max_attempts, why=why, each_time=why)


def _recover(session: Session, where: tuple[Any, ...], *, now: dt.datetime, max_attempts: int, why: str,
             each_time: str) -> dict[str, list[int]]:
    """Cancel, fail or re-queue the running jobs matching ``where`` (see :func:`recover_stale`)."""

    def run(*more: Any, **values: Any) -> list[int]:
        stmt = (
            update(Job).where(*where, *more).values(**values).returning(Job.id)
            .execution_options(synchronize_session=False)
        )
        return list(session.execute(stmt).scalars())

    result = {
        "cancelled": run(Job.cancel_requested.is_(True), status="cancelled", finished_at=now),
        "failed": run(
            Job.attempts >= max_attempts,
            status="failed",
            finished_at=now,
            error=_failed_after(max_attempts) + f"each time, {each_time}.",
        ),
        "requeued": run(
            Job.attempts < max_attempts,
            status="queued",
            worker_id=None,
            heartbeat_at=None,
            error=f"Re-queued because {why}.",
        ),
    }
    session.commit()
    return result


def _failed_after(max_attempts: int) -> Any:
    """The SQL of a recovered job's sentence start, in its kind's words: "Training failed after 2 attempts: "."""
    names = sorted({kind.name for kind in kinds_registry.registered()})
    whens = [(Job.kind == name, f"{kinds_registry.words(name).subject} failed after {max_attempts} attempts: ")
             for name in names]
    fallback = f"The job failed after {max_attempts} attempts: "
    return case(*whens, else_=fallback) if whens else literal(fallback)
