"""The leaderboard child process: evaluates every (corpus, tokenizer) pair of a "leaderboard" job.

It runs in a ``spawn`` child of the worker exactly like training (``jobs/job_child.py``), so the
worker's heartbeats, cancel, time limit, crash and recovery handling apply unchanged. Each
corpus slice (``leaderboard.read_slice``, at most ``max_bytes``) is read once; each tokenizer
is read from the database (only it: a tokenizer document can be tens of megabytes), parsed once
and measured on every slice with ``engine.metrics.evaluate`` (what ``tokenforge eval`` prints),
inside an engine time budget of ``pair_seconds``. A pair that fails (a corpus
or tokenizer deleted since, a damaged file, a pattern that runs out of time, memory) reports its
sentence and the others go on.

Messages to the worker: ``("progress", "evaluating", pairs_done, pairs_total)`` and
``("pair", key, result)`` per pair (the worker stores each at once, so the page fills in), then
exactly one of ``("done",)``, ``("cancelled",)`` or ``("error", message)``. It only reads the
database; the worker stores every result (``job_kinds.record_pair``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from webapp.jobs.job_child import CancelCheck, memory_sentence, send_outcome, start_child

if TYPE_CHECKING:
    from webapp.leaderboards.leaderboard import Plan

Report = Callable[[str, dict[str, Any]], None]
# a tokenizer id -> its JSON document (or the .model file an import kept), None if deleted
Load = Callable[[int], "str | bytes | None"]


def evaluate_pairs(corpora: Sequence[tuple[int, str | None]], tokenizer_ids: Sequence[int], *, load: Load,
                   max_bytes: int, pair_seconds: float, report: Report,
                   progress: Callable[[str, int, int], None], should_cancel: Callable[[], bool]) -> bool:
    """Evaluate every pair, reporting each; return False if cancelled on the way."""
    from engine import TokenforgeError, evaluate, time_budget
    from webapp.leaderboards.leaderboard import SliceError, kept, pair_key, read_slice
    from webapp.tokenizers.originals import stored_tokenizer

    texts: dict[int, str | None] = {}
    reasons: dict[int, str] = {}
    for corpus_id, path in corpora:
        if path is None:
            texts[corpus_id], reasons[corpus_id] = None, "The corpus was deleted before the leaderboard ran."
            continue
        try:
            texts[corpus_id] = read_slice(path, max_bytes)
        except SliceError as exc:
            texts[corpus_id], reasons[corpus_id] = None, str(exc)
    total, done = len(corpora) * len(tokenizer_ids), 0
    progress("evaluating", 0, total)
    for tokenizer_id in tokenizer_ids:
        if should_cancel():
            return False
        tokenizer, why = None, "The tokenizer was deleted before the leaderboard ran."
        document = load(tokenizer_id)
        if document is not None:
            try:
                tokenizer = stored_tokenizer(document)
            except TokenforgeError as exc:
                why = f"The tokenizer could not be loaded: {exc}"
            del document
        for corpus_id, _path in corpora:
            if should_cancel():
                return False
            text = texts[corpus_id]
            if text is None:
                result: dict[str, Any] = {"error": reasons[corpus_id]}
            elif tokenizer is None:
                result = {"error": why}
            else:
                try:
                    with time_budget(pair_seconds):
                        result = kept(evaluate(tokenizer, text))
                except TokenforgeError as exc:  # a time-out included (EncodeTimeout)
                    result = {"error": str(exc)}
                except MemoryError:
                    result = {"error": memory_sentence("The evaluation", " Choose a smaller slice.")}
            report(pair_key(corpus_id, tokenizer_id), result)
            done += 1
            progress("evaluating", done, total)
        del tokenizer  # one parsed tokenizer in memory at a time
    return True


def run(conn: Connection, parent_pid: int, database_url: str, plan: Plan, max_bytes: int, pair_seconds: float,
        nice: int) -> None:
    """Child entry point: evaluate the pairs of ``plan`` and report them and the outcome on ``conn``."""
    start_child(parent_pid, nice)

    def progress(stage: str, current: int, total: int) -> None:
        conn.send(("progress", stage, current, total))

    def report(key: str, result: dict[str, Any]) -> None:
        conn.send(("pair", key, result))

    def work() -> tuple[Any, ...]:
        from sqlalchemy.orm import Session

        from webapp.leaderboards.leaderboard import tokenizer_document
        from webapp.store.db import make_engine

        engine = make_engine(database_url)

        def load(tokenizer_id: int) -> str | None:
            with Session(engine) as session:
                return tokenizer_document(session, plan.team_id, tokenizer_id)

        try:
            finished = evaluate_pairs(plan.corpora, plan.tokenizer_ids, load=load, max_bytes=max_bytes,
                                      pair_seconds=pair_seconds, report=report, progress=progress,
                                      should_cancel=CancelCheck(conn, parent_pid))
        finally:
            engine.dispose()
        return ("done",) if finished else ("cancelled",)

    send_outcome(conn, work, what="The leaderboard")
