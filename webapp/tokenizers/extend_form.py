"""The "Extend with a corpus" form: which corpora to learn from, how many tokens, protected or not,
and the optional held-out and reference corpora.

:func:`check` turns a submitted form into the job's options (``extend_job.py`` reads them) or
into plain sentences by field. Its bounds are the engine's: 1 to the room the base leaves under
``engine.limits.MAX_VOCAB_SIZE`` new tokens (:func:`room`), and only the bases
``engine.extend.check_extendable`` accepts (:func:`unsupported` gives its sentence otherwise).
The corpora must be the team's: of the base's team for a team's tokenizer (its extension must not
carry it into another team), of one team for a preset, whose extension goes to that team.

The form also says what its job is: its ``algorithm`` (:data:`EXTEND`, which the stored row's config
keeps) and its name (:func:`extension_name`), which the job's side (``training/extend_job.py``)
reads in turn.

Left out: rendering (``templates/tokenizers/_extend_form.html``), queueing (``extend_views.py``) and
running the job (``training/extend_job.py``, ``training/extend_child.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from wtforms import BooleanField, StringField

from engine import MAX_VOCAB_SIZE, ConfigError, Tokenizer
from engine.extend import check_extendable
from webapp.access.auth import scoped
from webapp.corpora.forms import MAX_CORPORA
from webapp.store.db import get_session
from webapp.store.model_base import MAX_NAME
from webapp.store.models import Corpus
from webapp.store.models import Tokenizer as TokenizerRow
from webapp.web.forms import Form, IdListField, strip
from webapp.web.numbers import parse_id, parse_int

DEFAULT_ADD = 1000
EXTEND = "extend"  # the algorithm of an extension job, and the stored row's config "algorithm"


def extension_name(base_name: str, added: int, corpus_names: list[str]) -> str:
    """``"GPT-2 + 5,000 (zh.txt)"``, cut to the name columns' width."""
    corpora = ", ".join(corpus_names) or "no corpus"
    return f"{base_name} + {added:,} ({corpora})"[:MAX_NAME]


class ExtendForm(Form):
    """The fields as sent; :func:`check` judges them against the base."""

    corpus_ids = IdListField(most=MAX_CORPORA)
    add = StringField(filters=[strip])
    protected = BooleanField()
    held_out_corpus_id = StringField(filters=[strip])
    reference_corpus_id = StringField(filters=[strip])


@dataclass
class ExtendPage:
    """What the form's template needs: the base, its bound, the corpora, what was sent, the errors."""

    base: TokenizerRow
    unsupported: str | None
    room: int
    corpora: Sequence[Corpus]
    values: dict[str, Any] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)


def unsupported(tokenizer: Tokenizer) -> str | None:
    """The engine's one sentence when it cannot extend ``tokenizer`` (what it supports), else None."""
    try:
        check_extendable(tokenizer)
    except ConfigError as exc:
        return str(exc)
    return None


def room(tokenizer: Tokenizer) -> int:
    """How many tokens may be added before the engine's vocabulary limit."""
    return max(0, MAX_VOCAB_SIZE - tokenizer.vocab_size)


def corpora_for(base: TokenizerRow) -> list[Corpus]:
    """The corpora the form offers: the base's team's, or for a preset every team's of the user."""
    query = scoped(Corpus)
    if base.team_id is not None:
        query = query.where(Corpus.team_id == base.team_id)
    return list(get_session().scalars(query.order_by(Corpus.name, Corpus.id).limit(MAX_CORPORA)))


def page(base: TokenizerRow, tokenizer: Tokenizer, *, values: dict[str, Any] | None = None,
         errors: dict[str, str] | None = None) -> ExtendPage:
    """The form for ``base``: its defaults, or what was sent with its errors."""
    limit = room(tokenizer)
    defaults = {"add": str(min(DEFAULT_ADD, limit)), "protected": True, "corpus_ids": [],
                "held_out_corpus_id": "", "reference_corpus_id": ""}
    return ExtendPage(base, unsupported(tokenizer), limit, corpora_for(base), {**defaults, **(values or {})},
                      errors or {})


def sent_values(form: ExtendForm) -> dict[str, Any]:
    """What was sent, for showing the form again as it was."""
    return {"add": form.add.data or "", "protected": bool(form.protected.data),
            "corpus_ids": [parse_id(v) for v in form.corpus_ids.chosen],
            "held_out_corpus_id": form.held_out_corpus_id.data or "",
            "reference_corpus_id": form.reference_corpus_id.data or ""}


def _add_error(text: str, limit: int) -> str | None:
    if parse_int(text, low=1, high=limit) is not None:
        return None
    if parse_int(text, low=1, high=MAX_VOCAB_SIZE * 10) is not None:
        return (f"{int(text):,} new tokens would take the vocabulary past the engine's limit of "
                f"{MAX_VOCAB_SIZE:,} tokens; add at most {limit:,}.")
    return f"The number of tokens to add must be a whole number from 1 to {limit:,}, not {text[:20]!r}."


def _one_corpus(text: str, offered: dict[int, Corpus], what: str) -> tuple[Corpus | None, str | None]:
    """The optional corpus chosen as ``what`` ("held-out"), or the sentence why it cannot be."""
    if not text:
        return None, None
    corpus = offered.get(parse_id(text) or 0)
    if corpus is None:
        return None, f"Choose the {what} corpus from the list; {text[:20]!r} is not one of your team's corpora."
    return corpus, None


def check(base: TokenizerRow, tokenizer: Tokenizer, form: ExtendForm) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """The job's options (with ``team_id`` and ``corpus_ids``), or the errors by field name."""
    errors: dict[str, str] = {}
    limit = room(tokenizer)
    add_error = _add_error(form.add.data or "", limit)
    if add_error:
        errors["add"] = add_error
    offered = {c.id: c for c in corpora_for(base)}
    ids = form.corpus_ids
    chosen: list[Corpus] = []
    if ids.invalid is not None or any(i not in offered for i in ids.data):
        errors["corpus_ids"] = "Choose the corpora from the list; one of the chosen ones is not your team's."
    elif not ids.data:
        errors["corpus_ids"] = "Choose at least one corpus to learn the new tokens from."
    else:
        chosen = [offered[i] for i in ids.data]
        if len({c.team_id for c in chosen}) > 1:
            errors["corpus_ids"] = "The chosen corpora belong to different teams; choose one team's corpora."
    held_out, errors["held_out_corpus_id"] = _one_corpus(form.held_out_corpus_id.data or "", offered, "held-out")
    reference, errors["reference_corpus_id"] = _one_corpus(form.reference_corpus_id.data or "", offered, "reference")
    if held_out is not None and held_out in chosen:
        errors["held_out_corpus_id"] = (f"The held-out corpus {held_out.name!r} is also one to learn from; choose "
                                        "another, or none (the last tenth of the last corpus is then held out).")
    team_id = chosen[0].team_id if chosen else None
    for extra, key in ((held_out, "held_out_corpus_id"), (reference, "reference_corpus_id")):
        if extra is not None and team_id is not None and extra.team_id != team_id and not errors.get(key):
            errors[key] = "Choose a corpus of the same team as the corpora to learn from."
    errors = {key: value for key, value in errors.items() if value}
    if errors or team_id is None:
        return None, errors
    add = int(form.add.data or 0)
    chat = (base.config or {}).get("chat")  # the base's chat template and bos/eos/pad: the extension keeps them
    options = {"base_id": base.id, "base_name": base.name, "base_algorithm": base.algorithm, "add": add,
               "base_chat": chat if isinstance(chat, dict) else {},
               "protected": bool(form.protected.data), "corpus_names": [c.name for c in chosen],
               "held_out_corpus_id": held_out.id if held_out else None,
               "reference_corpus_id": reference.id if reference else None}
    return {"team_id": team_id, "corpus_ids": [c.id for c in chosen], "algorithm": EXTEND, "options": options,
            "name": extension_name(base.name, add, [c.name for c in chosen])}, {}

