"""The extension child process: runs ``engine.extend`` on a base tokenizer and talks to its worker by pipe.

The worker starts it like a training (``jobs/job_child.py`` says what every child does first), with
the arguments ``extend_job.child_args`` gives. The messages are ``train_child``'s:
``("progress", stage, current, total)`` (the engine's "count" and "merge", then "measure"), then
one of ``("done", tokenizer_json, stats)``, ``("cancelled",)`` or ``("error", sentence)``; the
stats hold the engine's report (``engine/extend/report.py``) under ``"report"``, and for a
sentencepiece ``.model`` base the extended ``.model`` under ``"original"`` (``originals.py``'s
form), which the stored row keeps so the tokenizer is rebuilt from it and downloads as a ``.model``.

The base is read from the database here, within the job's team or among the presets, so the
pipe never carries a 30 MB document and no option can point the job at another team's
tokenizer. The held-out text is the chosen held-out corpus, else the last tenth of the last
corpus file's lines (the engine's ``split_held_out``, which the merges then do not see); it and
the reference text are measured on their first :data:`MEASURE_BYTES` bytes at most, so a large
corpus costs a bounded time. The engine's sentences name its CLI flags; the web form's names
replace them (:func:`web_sentence`).
"""

from __future__ import annotations

import codecs
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from webapp.jobs.job_child import CancelCheck, send_outcome, start_child

MEASURE_BYTES = 2_000_000  # of each text measured (held-out, reference): about a second per tokenizer
_FLAGS = (("(--unprotected)", "(untick “Protected” in the form)"), ("--add=", "the number of tokens "),
          ("add=", "the number of tokens "))


def web_sentence(message: str) -> str:
    """The engine's sentence with its command-line flags replaced by the form's names."""
    for flag, name in _FLAGS:
        message = message.replace(flag, name)
    return message


def read_measured(path: str, limit: int = MEASURE_BYTES) -> str:
    """The first ``limit`` bytes of a stored corpus as text, ending at its last whole line when cut."""
    with open(path, "rb") as file:
        data = file.read(limit + 1)
    capped = len(data) > limit
    text = codecs.getincrementaldecoder("utf-8")("replace").decode(data[:limit], final=not capped)
    if capped and "\n" in text:
        text = text[:text.rfind("\n") + 1]
    return text


def bounded(text: str, limit: int = MEASURE_BYTES) -> str:
    """``text`` cut to its whole lines within ``limit`` UTF-8 bytes (all of it when shorter)."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    cut = data[:limit].decode("utf-8", "ignore")
    return cut[:cut.rfind("\n") + 1] if "\n" in cut else cut


def _base_document(database_url: str, team_id: int, base_id: int) -> str | bytes | None:
    """The base's JSON document, or the ``.model`` an import kept; None if it is gone or not readable."""
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from webapp.store.db import make_engine
    from webapp.store.models import Tokenizer as Row
    from webapp.tokenizers.originals import originals

    engine = make_engine(database_url)
    try:
        with Session(engine) as session:
            found = session.execute(select(Row.tokenizer_json, Row.config).where(
                Row.id == base_id, (Row.team_id == team_id) | Row.team_id.is_(None))).first()
    finally:
        engine.dispose()
    if found is None:
        return None
    return originals(found.config or {}).get("spm_model", found.tokenizer_json)


def run(conn: Connection, parent_pid: int, database_url: str, team_id: int, paths: list[str],
        held_out_path: str | None, reference_path: str | None, options: dict[str, Any], nice: int) -> None:
    """Child entry point: extend the base and report the outcome on ``conn``."""
    start_child(parent_pid, nice)
    from engine import TokenforgeError, TrainingCancelled
    from engine.extend import ExtendOptions, build_report, check_extendable, extend_bpe, split_held_out
    from engine.trainers import Reporter
    from webapp.tokenizers.originals import stored_tokenizer

    should_cancel = CancelCheck(conn, parent_pid)

    def progress(stage: str, current: int, total: int) -> None:
        conn.send(("progress", stage, int(current), int(total)))

    def work() -> tuple[Any, ...]:
        started = time.perf_counter()
        document = _base_document(database_url, team_id, int(options["base_id"]))
        if document is None:
            return ("error", f"The base tokenizer #{options['base_id']} was deleted before the extension started.")
        try:
            base = stored_tokenizer(document)
            del document
            check_extendable(base)
            settings = ExtendOptions(add=int(options["add"]), protected=bool(options["protected"]))
            with tempfile.TemporaryDirectory(prefix="tokenforge-extend-") as workdir:
                if held_out_path is not None:
                    files, held_out = list(paths), read_measured(held_out_path)
                else:
                    files, held_out = split_held_out(paths, Path(workdir))
                    held_out = bounded(held_out)
                extension = extend_bpe(base, files, settings, reporter=Reporter(progress, should_cancel))
            progress("measure", 0, 2)
            reference = read_measured(reference_path) if reference_path is not None else None
            report = build_report(extension, base, held_out=held_out, reference=reference)
            progress("measure", 2, 2)
        except TrainingCancelled:
            return ("cancelled",)
        except TokenforgeError as exc:
            return ("error", web_sentence(str(exc)))
        tokenizer = extension.tokenizer
        stats = {"vocab_size": tokenizer.vocab_size, "report": report,
                 "seconds": round(time.perf_counter() - started, 3)}
        from webapp.tokenizers.originals import kept_model

        if original := kept_model(tokenizer):  # a .model base: the grown .model is the tokenizer
            stats["original"] = original
        return ("done", tokenizer.to_json(), stats)

    send_outcome(conn, work, what="The extension",
                 memory_hint=" Nothing was saved. Try a smaller corpus or fewer new tokens.")
