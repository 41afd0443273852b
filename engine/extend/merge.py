"""Merge two vocabularies the way Chinese-LLaMA's ``merge_tokenizers.py`` does, with its costs counted.

That script appends every piece of a donor sentencepiece model that the base lacks, in the
donor's order, as a NORMAL piece with score 0. It is what teams do to adapt Llama 2 to a
language, and it has costs the script never shows: the appended pieces can change how text the
base already handled is cut, and a piece that no merge of two existing pieces builds can never
be produced. :func:`merge_vocabularies` does the same append under one of two score policies
(:data:`POLICIES`), and the report (``report.build_report``, measured on the texts a user gives)
shows what each costs before anything is saved. Learning new pieces from a corpus instead
(``extend_bpe``) keeps the base's text exact; this is the explicit alternative.

**Score policies.**

- ``"zero"``: every appended piece scores 0, as the script writes them. The base's ordinary
  pieces score below 0, so in sentencepiece's BPE (the highest score merges first) appended
  pieces take precedence over the base's merges, and in a Unigram a score of 0 is the likeliest
  piece of all.
- ``"after"``: appended pieces rank after the base's. BPE: scores continue below the base's
  lowest, one less per piece in the donor's order, so every base merge comes first. Unigram: the
  base's lowest ordinary score (not below it: the unknown score is that minus 10, and stays).

**Bases** whose pieces spell a space as ``▁``: Unigram (tokenizer.json or ``.model``),
sentencepiece BPE ``.model``, and character-level BPE tokenizer.json without a continuing
prefix or end-of-word suffix (Llama 2, Mistral, Gemma). A ``.model`` base gets its proto
appended, as the script does, and is rebuilt from it, so the result is what sentencepiece loads.
A character-level BPE tokenizer.json has merges, not scores: each appended piece gets a merge
for every split into two pieces of the merged vocabulary, by the ids of the halves, as Hugging
Face's converter orders a ``.model``'s merges; the appended pieces' merges go before the base's
("zero", their score is the highest) or after them ("after"). Only appended pieces get merges.

**Donor pieces**: its ordinary (NORMAL) pieces in id order; special, control, unknown, byte,
unused and user-defined pieces are left out. The donor must write spaces as the base does.
**Unreachable**: an appended piece that encoding its own text (the model alone) does not give
whole; it is kept, as the script keeps it, and counted.

Left out: merging into byte-level BPE or WordPiece bases (``extend_bpe`` serves them), and
re-deriving merges of base pieces that an appended piece could now split.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from typing import Any

from engine.errors import ConfigError
from engine.extend.options import Extension, check_add
from engine.extend.unigram import check_rebuilds, rebuild_unigram
from engine.formats.spm_model import load_spm_model, piece_types
from engine.formats.spm_proto import NORMAL, ModelProto, Piece, with_pieces, write_model
from engine.models.bpe import MergeIds, ModelSnapshot
from engine.models.bpe_char import CharBPE
from engine.models.spm_bpe import SpmBPE
from engine.models.unigram import Unigram, f32
from engine.tokenizer import Tokenizer
from engine.vocab_diff import space_marker

POLICIES = ("zero", "after")
SPACE = "▁".encode("utf-8")
MERGEABLE = "Unigram, sentencepiece BPE .model and character-level BPE tokenizer.json (Llama 2, Mistral, Gemma style)"


def donor_pieces(donor: Tokenizer) -> list[str]:
    """The donor's ordinary pieces in id order (no special, unknown, byte, unused or user-defined ones)."""
    types = piece_types(donor)
    pieces = []
    for token_id, kind in enumerate(types):
        token = donor.id_to_token(token_id)
        if kind == NORMAL and token and not donor.is_special(token_id):
            pieces.append(token)
    return pieces


def check_mergeable(base: Tokenizer, donor: Tokenizer) -> None:
    """ConfigError with one sentence when ``donor``'s pieces cannot be appended to ``base``'s."""
    for role, tokenizer in (("base", base), ("donor", donor)):
        model = tokenizer.model
        if isinstance(model, CharBPE) and (model.prefix or model.suffix):
            raise ConfigError(f"The {role} is a character-level BPE with a word prefix or suffix; merging vocabularies "
                              f"needs sentencepiece-style pieces ({MERGEABLE}).", option=role)
        if not isinstance(model, (Unigram, SpmBPE, CharBPE)):
            raise ConfigError(f"The {role} is a {getattr(model, 'level', '')}-level {model.kind}".replace(" -level", "")
                              + f" tokenizer; merging vocabularies supports {MERGEABLE} (extend the tokenizer "
                              "with a corpus instead).", option=role)
        if space_marker(tokenizer) != SPACE:
            raise ConfigError(f"The {role} does not write a space as ▁, so its pieces cannot be merged with a "
                              "sentencepiece-style vocabulary.", option=role)
    if base.vocab_size != base.model.vocab_size:
        raise ConfigError(f"The base has added tokens past its {base.model.vocab_size:,} pieces (ids up to "
                          f"{base.vocab_size - 1:,}); appended pieces would take their ids.", option="base")
    if isinstance(base.model, SpmBPE) and getattr(base, "spm_proto", None) is None:
        raise ConfigError("This sentencepiece BPE has no .model to append to; merge into its .model or its "
                          "tokenizer.json form.", option="base")


def merge_vocabularies(base: Tokenizer, donor: Tokenizer, *, policy: str = "zero",
                       most: int | None = None) -> Extension:
    """``base`` with every ordinary piece of ``donor`` it lacks appended (module docstring).

    ``most`` bounds how many pieces one merge may append (the web app's bound), checked before
    any work.
    """
    if policy not in POLICIES:
        raise ConfigError(f"policy={policy!r} is not one of {', '.join(POLICIES)}.", option="policy")
    check_mergeable(base, donor)
    taken = {base.id_to_token(i) for i in range(base.vocab_size)}
    offered = donor_pieces(donor)
    new = [p for p in offered if p not in taken]
    if not new:
        raise ConfigError("The donor has no piece the base lacks; there is nothing to merge.", option="donor")
    if most is not None and len(new) > most:
        raise ConfigError(f"The donor has {len(new):,} pieces the base lacks; at most {most:,} may be appended "
                          "here.", option="donor", value=len(new), most=most)
    check_add(base, len(new))
    first = base.vocab_size
    proto: ModelProto | None = getattr(base, "spm_proto", None)
    if proto is not None:
        merged = appended_proto(base, proto, new, policy)
    elif isinstance(base.model, Unigram):
        merged = _with_model(base, _appended_unigram(base, new, policy))
    else:
        merged = _with_model(base, _appended_char_bpe(base.model, first, new, policy))
    model = merged.model
    unreached = tuple(first + i for i, piece in enumerate(new) if model.tokenize(piece) != [first + i])
    return Extension(tokenizer=merged, base_vocab_size=first, added=[(first + i, p.encode("utf-8"))
                                                                     for i, p in enumerate(new)],
                     merges=[], duplicates_skipped=len(offered) - len(new), protected=False, pretokens_counted=0,
                     unreached=unreached)


def scores(base_scores: list[float], count: int, policy: str, *, unigram: bool) -> list[float]:
    """The appended pieces' scores under ``policy`` (see the module docstring)."""
    if policy == "zero":
        return [0.0] * count
    lowest = min(base_scores, default=0.0)
    return [lowest] * count if unigram else [lowest - 1.0 - i for i in range(count)]


def _ordinary_scores(tokenizer: Tokenizer, pieces: list[tuple[str, float]]) -> list[float]:
    types = piece_types(tokenizer)
    return [score for (_, score), kind in zip(pieces, types) if kind == NORMAL]


def appended_proto(base: Tokenizer, proto: ModelProto, new: list[str], policy: str) -> Tokenizer:
    """``base`` loaded from its ``.model`` with ``new`` appended as NORMAL pieces scored under
    ``policy``, as sentencepiece would load the file (the merge here; ``spm_bpe.py``'s extension)."""
    ordinary = [p.score for p in proto.pieces if p.type == NORMAL]
    given = scores(ordinary, len(new), policy, unigram=isinstance(base.model, Unigram))
    return load_spm_model(write_model(with_pieces(proto, [Piece(p, f32(s), NORMAL) for p, s in zip(new, given)])))


def _appended_unigram(base: Tokenizer, new: list[str], policy: str) -> Unigram:
    check_rebuilds(base)
    pieces = base.model.pieces()
    given = scores(_ordinary_scores(base, pieces), len(new), policy, unigram=True)
    return rebuild_unigram(base, [*pieces, *((p, f32(s)) for p, s in zip(new, given))])


def _appended_char_bpe(model: CharBPE, first: int, new: list[str], policy: str) -> CharBPE:
    """``model`` with ``new`` pieces (ids from ``first``) and their merges before (``"zero"``) or
    after the base's."""
    state = model.snapshot()
    ids = {spelling.decode("utf-8"): int(i) for i, spelling in zip(state.ids, state.spellings)}
    ids.update((p, first + i) for i, p in enumerate(new))
    lefts: list[int] = []
    rights: list[int] = []
    merged: list[int] = []
    for i, piece in enumerate(new):
        splits = sorted((ids[piece[:cut]], ids[piece[cut:]]) for cut in range(1, len(piece))
                        if piece[:cut] in ids and piece[cut:] in ids)
        for left, right in splits:
            lefts.append(left)
            rights.append(right)
            merged.append(first + i)
    old = state.merges
    base_merges = ([*map(int, old.lefts)], [*map(int, old.rights)], [*map(int, old.merged)])
    new_merges = (lefts, rights, merged)
    before, after = (new_merges, base_merges) if policy == "zero" else (base_merges, new_merges)
    merges = MergeIds(before[0] + after[0], before[1] + after[1], before[2] + after[2])
    return CharBPE.from_snapshot(ModelSnapshot(state.level, state.options, [*map(int, state.ids),
                                                                            *range(first, first + len(new))],
                                               [*state.spellings, *(p.encode("utf-8") for p in new)], merges))


def _with_model(base: Tokenizer, model: Any) -> Tokenizer:
    state = base.__getstate__()
    state["model"] = model
    merged = Tokenizer.__new__(Tokenizer)
    merged.__setstate__(state)
    return merged
