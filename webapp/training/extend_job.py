"""The "extend" job, seen from the queue: what the worker gives its child, and the row it stores.

An extension is a training job (``kind="train"``, so the team's cap on waiting jobs, the fair
claim, cancel, the time limit and the job pages apply unchanged) whose ``algorithm`` is
:data:`EXTEND`; which is why its job side lives here, with the training's, while the page and the
form that queue it are the tokenizer's (``tokenizers/extend_views.py``, ``tokenizers/extend_form.py``,
under ``/tokenizers/ID/extend``). Its ``options`` hold what the form chose (``extend_form.check``):
the base tokenizer's id, name and algorithm, ``add``, ``protected``, and the held-out and reference
corpora's ids (or None). The child (``extend_child.py``) reads the base itself, within the job's
team or among the presets, so a job can never reach another team's tokenizer whatever its
options say. The stored row (:func:`row_fields`) is named after what was really added, has the
base's algorithm, and keeps the base's id and the engine's report in its config, which the
tokenizer page shows (``tokenizers/extend_views.show_context``).

Left out: the engine's work (``engine/extend``) and the form.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from webapp.store.models import Corpus, Job
from webapp.tokenizers.extend_form import EXTEND, extension_name
from webapp.tokenizers.originals import take_original

if TYPE_CHECKING:
    from webapp.corpora.storage import CorpusStore

MEASURED = (("held_out_corpus_id", "held-out"), ("reference_corpus_id", "reference"))


def child_args(session: Session, store: "CorpusStore", job: Job, paths: list[str], nice: int,
               database_url: str) -> tuple[tuple[Any, ...] | None, str | None]:
    """The arguments of ``extend_child.run`` after its pipe and parent pid, or the sentence of a
    chosen held-out or reference corpus that was deleted before the job started."""
    options = dict(job.options or {})
    measured: dict[str, str | None] = {}
    for key, what in MEASURED:
        corpus_id = options.get(key)
        if corpus_id is None:
            measured[key] = None
            continue
        corpus = session.get(Corpus, corpus_id)
        path = store.path(corpus.sha256) if corpus is not None and corpus.team_id == job.team_id else None
        if path is None or not path.is_file():
            return None, f"The {what} corpus #{corpus_id} was deleted before the extension started."
        measured[key] = str(path)
    return (database_url, job.team_id, paths, measured["held_out_corpus_id"], measured["reference_corpus_id"],
            options, nice), None


def row_fields(job: Job, stats: dict[str, Any]) -> dict[str, Any]:
    """The stored tokenizer's name, algorithm and config for an extension job that succeeded.

    An extended ``.model`` the child sent moves from the stats into the config, where
    ``tokenizers/originals.py`` keeps imported files (``take_original``)."""
    options = dict(job.options or {})
    original = take_original(stats)
    report = stats.get("report") if isinstance(stats.get("report"), dict) else {}
    added = report.get("pieces_added", options.get("add", 0))
    config = {"algorithm": EXTEND, "extended_from": options.get("base_id"),
              "base_name": options.get("base_name"),
              "options": {"add": options.get("add"), "protected": options.get("protected")},
              "corpus_ids": job.corpus_ids, "report": report,
              "held_out_corpus_id": options.get("held_out_corpus_id"),
              "reference_corpus_id": options.get("reference_corpus_id")}
    if options.get("base_chat"):  # the base's ids are kept, so its chat template still fits
        config["chat"] = options["base_chat"]
    config.update(original)
    return {
        "name": extension_name(str(options.get("base_name", "tokenizer")), int(added),
                               list(options.get("corpus_names", []))),
        "algorithm": str(options.get("base_algorithm") or "bpe")[:40],
        "config": config,
    }
