"""Extend a byte-level BPE tokenizer (GPT-2, cl100k, Llama 3 style): continue its merges on a new corpus.

The stages: count the corpus's pre-tokens with the base's own normalizer and pre-tokenizer
(``trainers/counting.py``, as training does, special and added tokens cut out); in protected
mode keep only the pre-tokens that hold a character the base falls back on (``protect.py``);
segment each with the base's merges; then run the trainer's merge loop
(``trainers/bpe_merge.merge_words``) from that segmentation, the alphabet being the base tokens
that occur in it. Each merge becomes a new token: ids start at the base's ``vocab_size`` (after
its special and added tokens), ranks after the base's last rank, and every base id, merge and
option stays exactly as it was, so a model's embedding rows stay valid.

**Tie-break rule** (the trainer's): the most frequent pair first; among equal counts the
lexicographically greatest pair compared as bytes ``(left, right)``. Learning stops after
``add`` new tokens or when the best count falls below ``min_frequency``.

No merge may spell a token the base already has (such pairs are never merged, and counted as
``duplicates_skipped``); a merge that spells a token an earlier *new* merge made keeps that
token's id (two merges, one token, no new row). Every added token is made by its merge from two
tokens that exist, so none is unreachable.

A character-level base (Llama 2, Mistral, Gemma style tokenizer.json) goes to ``char_bpe.py``.
Left out: sentencepiece ``.model`` BPE, Unigram and WordPiece (refused with one sentence), and
the report (``report.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from engine.ascii_split import fastest_split
from engine.errors import ConfigError
from engine.extend.protect import covered_chars, falls_back, protected_pairs, unprotected_pairs
from engine.limits import MAX_TOKEN_LENGTH, MAX_VOCAB_SIZE, shown
from engine.models.bpe import BPE, MergeIds, ModelSnapshot
from engine.models.bpe_char import CharBPE
from engine.tokenizer import Tokenizer
from engine.trainers.base import Reporter
from engine.trainers.bpe_merge import merge_words
from engine.trainers.counting import count_pretokens
from engine.trainers.limits import check_workers

SUPPORTED = ("byte-level BPE (GPT-2, GPT-4 / cl100k, Llama 3 style) and character-level BPE tokenizer.json "
             "(Llama 2, Mistral, Gemma style)")
_SURROGATES = range(0xD800, 0xE000)  # internal ids are characters: these cannot be


@dataclass(frozen=True)
class ExtendOptions:
    """Options of an extension (the CLI's flags)."""

    add: int = field(default=1000, metadata={"help": "How many new tokens to learn."})
    protected: bool = field(
        default=True,
        metadata={"help": "Only learn merges inside characters the base falls back on, so text without them "
                          "keeps its exact ids."},
    )
    min_frequency: int = field(default=2, metadata={"help": "Stop when the best pair occurs fewer times than this."})
    num_workers: int | None = field(default=None, metadata={"help": "Processes that count the corpus (empty: one per CPU)."})
    character_coverage: float = field(
        default=0.9995,
        metadata={"help": "Character-level bases: add the characters the base lacks, most frequent first, until "
                          "they cover this fraction of their occurrences in the corpus (sentencepiece's "
                          "character_coverage)."},
    )

    def __post_init__(self) -> None:
        if isinstance(self.add, bool) or not isinstance(self.add, int) or self.add < 1:
            raise ConfigError(f"add={shown(self.add)} must be a whole number of new tokens, 1 or more.", option="add")
        if self.min_frequency < 1:
            raise ConfigError(f"min_frequency={self.min_frequency} must be 1 or more.", option="min_frequency")
        check_workers(self.num_workers)
        coverage = self.character_coverage
        if isinstance(coverage, bool) or not isinstance(coverage, (int, float)) or not 0 < coverage <= 1:
            raise ConfigError(f"character_coverage={shown(coverage)} must be a fraction above 0 and at most 1 "
                              "(for example 0.9995).", option="character_coverage")


@dataclass
class Extension:
    """An extended tokenizer and what the extension did (``report.py`` adds the measurements)."""

    tokenizer: Tokenizer
    base_vocab_size: int
    added: list[tuple[int, bytes]]  # (new id, its bytes) in id order
    merges: list[tuple[int, int, int, int]]  # (left id, right id, merged id, count) after the base's ranks
    duplicates_skipped: int  # candidate pairs refused because the base already has their token
    protected: bool
    pretokens_counted: int  # distinct pre-tokens the merges were learned from
    symbols_added: tuple[int, ...] = ()  # new single-character pieces, each checked to be reached as a symbol

    @property
    def unreachable(self) -> int:
        """Added tokens that no merge makes (an appended piece with no split into two tokens) and that are
        not a character reached as a symbol: none here."""
        made = {merged for _, _, merged, _ in self.merges} | set(self.symbols_added)
        return sum(token_id not in made for token_id, _ in self.added)


def check_extendable(base: Tokenizer) -> BPE | CharBPE:
    """The base's model when engine/extend can extend it; ConfigError naming what is supported otherwise."""
    model = base.model
    if getattr(model, "level", "") == "spm":
        raise ConfigError("Extending a sentencepiece .model BPE tokenizer is not supported; extend its "
                          f"tokenizer.json form instead (the model's Hugging Face files have one); extend supports "
                          f"{SUPPORTED} bases.", option="tokenizer")
    if not isinstance(model, (BPE, CharBPE)):
        level = getattr(model, "level", "")
        kind = f"{level}-level {model.kind}" if model.kind == "bpe" and level else model.kind
        raise ConfigError(f"Extending a {kind} tokenizer is not supported yet; extend supports {SUPPORTED} bases.",
                          option="tokenizer")
    return model


def check_add(base: Tokenizer, add: int) -> None:
    """Refuse ``add`` past the engine's vocabulary limit (``engine.limits.MAX_VOCAB_SIZE``)."""
    room = MAX_VOCAB_SIZE - base.vocab_size
    if add > room:
        raise ConfigError(
            f"add={add:,} would take the vocabulary past the engine's limit of {MAX_VOCAB_SIZE:,} tokens "
            f"(the base has {base.vocab_size:,}); ask for at most {max(room, 0):,} new tokens.",
            option="add", value=add, least=1, most=room)


def _whole(text: str) -> list[str]:
    """The pre-tokenizer of a base that has none: the text is one piece."""
    return [text] if text else []


def extend_bpe(base: Tokenizer, files: Sequence[str | Path], options: ExtendOptions, *,
               reporter: Reporter | None = None) -> Extension:
    """Learn ``options.add`` new tokens for ``base`` from ``files`` (see the module docstring); a
    character-level base goes to :func:`engine.extend.char_bpe.extend_char_bpe`."""
    model = check_extendable(base)
    if isinstance(model, CharBPE):
        from engine.extend.char_bpe import extend_char_bpe  # it imports this module

        return extend_char_bpe(base, files, options, reporter=reporter)
    check_add(base, options.add)
    reporter = reporter or Reporter()
    # 1. Count pre-tokens as the base would cut them; its special and added tokens are never counted.
    split: Callable[[str], list[str]] = fastest_split(base.pre_tokenizer) if base.pre_tokenizer else _whole
    counts = count_pretokens(files, special_tokens=[*base.special_tokens, *base.added_tokens], split=split,
                             normalizer=base.normalizer, num_workers=options.num_workers, reporter=reporter)
    # 2. Protected: only pre-tokens with a character the base falls back on.
    if options.protected:
        covered = covered_chars(model)
        counts = {piece: n for piece, n in counts.items() if falls_back(piece, covered)}
    if not counts:
        raise ConfigError(nothing_new(options, "it holds no character the base falls back on"))
    # 3. The base's segmentation; its tokens (by id) are the merge loop's alphabet.
    pieces = list(counts)
    segments = model.tokenize_many(pieces)
    used = sorted({token_id for seg in segments for token_id in seg})
    alphabet_ids: list[int | None] = []
    for token_id in used:
        while len(alphabet_ids) in _SURROGATES:  # placeholders no word holds
            alphabet_ids.append(None)
        alphabet_ids.append(token_id)
    internal = {token_id: i for i, token_id in enumerate(alphabet_ids) if token_id is not None}
    alphabet = [model.token_bytes(i) if i is not None else b"" for i in alphabet_ids]
    words = ["".join([chr(internal[t]) for t in seg]) for seg in segments]
    # 4. The merge loop, a little past ``add`` in case some merges spell a token made before.
    refused = [0]
    allowed = protected_pairs(model, alphabet) if options.protected else unprotected_pairs(model)

    def counted(left: int, right: int, merged: bytes) -> bool:
        if model.id_for_bytes(merged) is not None:
            refused[0] += 1
            return False
        return allowed(left, right, merged)

    def tick(done: int) -> None:
        reporter.update("merge", done, options.add)

    merges, token_bytes = merge_words(
        words, [counts[p] for p in pieces], options.add + options.add // 20 + 16, alphabet=alphabet,
        min_frequency=options.min_frequency, max_token_length=MAX_TOKEN_LENGTH, tick=tick, allowed=counted)
    if not merges:
        raise ConfigError(nothing_new(options, f"no pair of tokens that may merge occurs {options.min_frequency} "
                                                "times or more"))
    # 5. Final ids: base tokens keep theirs; each merge's token is new unless an earlier merge spelt it.
    final: list[int] = [i if i is not None else -1 for i in alphabet_ids]
    new_ids: dict[bytes, int] = {}
    added: list[tuple[int, bytes]] = []
    learned: list[tuple[int, int, int, int]] = []
    next_id = base.vocab_size
    for rank, (a, b, count, _) in enumerate(merges):
        data = token_bytes[len(alphabet) + rank]
        if data not in new_ids:
            if len(added) == options.add:
                break
            new_ids[data] = next_id
            added.append((next_id, data))
            next_id += 1
        final.append(new_ids[data])
        learned.append((final[a], final[b], new_ids[data], count))
    reporter.update("merge", len(added), options.add, force=True)
    extended = _with_merges(base, model, added, learned)
    return Extension(tokenizer=extended, base_vocab_size=base.vocab_size, added=added, merges=learned,
                     duplicates_skipped=refused[0], protected=options.protected, pretokens_counted=len(pieces))


def nothing_new(options: ExtendOptions, why: str) -> str:
    fix = ("; turn protection off (--unprotected) to learn merges of text the base already handles"
           if options.protected else "; give a larger corpus, or a lower min_frequency")
    return f"The corpus has nothing new to learn for this tokenizer: {why}{fix}."


def _with_merges(base: Tokenizer, model: BPE, added: list[tuple[int, bytes]],
                 learned: list[tuple[int, int, int, int]]) -> Tokenizer:
    """``base`` with the new tokens and merges appended; everything else is the base's own."""
    state = model.snapshot()  # ids as they are (a hand-made vocabulary may spell one token twice)
    old = state.merges  # lists or numpy arrays: as plain ints, then the new merges after them
    merges = MergeIds([*map(int, old.lefts), *(a for a, _, _, _ in learned)],
                      [*map(int, old.rights), *(b for _, b, _, _ in learned)],
                      [*map(int, old.merged), *(m for _, _, m, _ in learned)])
    grown = BPE.from_snapshot(ModelSnapshot(state.level, state.options, [*map(int, state.ids), *(i for i, _ in added)],
                                            [*state.spellings, *(data for _, data in added)], merges))
    tokenizer_state = base.__getstate__()
    tokenizer_state["model"] = grown
    extended = Tokenizer.__new__(Tokenizer)
    extended.__setstate__(tokenizer_state)
    return extended
