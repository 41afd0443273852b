"""The options of sentencepiece-style BPE (``--model bpe --level spm``), and how BPE's values reach them.

The BPE form and flags hold every level's options (``engine.trainers.option_specs`` adds these to
``BpeOptions``'); :func:`options_from` reads them when the level is ``spm``. Training is ``bpe_spm``.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from engine.errors import ConfigError, ConfigProblems
from engine.limits import shown
from engine.trainers.base import options_from_mapping
from engine.trainers.limits import MAX_VOCAB, check_workers

LEVEL = "spm"
LEVEL_HELP = ("spm: sentencepiece BPE (Llama 2 / Mistral): merges characters of ▁-prefixed words, "
              "scored -rank, rarer characters as <0xNN> bytes; writes tokenizer.model too.")
SPECIAL_TOKENS = ("<unk>", "<s>", "</s>")  # ids 0, 1, 2, as in Llama 2; <unk> is the unknown piece


@dataclass(frozen=True)
class SpmBpeOptions:
    """Options of sentencepiece-style BPE; the CLI and the form show them among BPE's options."""

    # Final vocabulary: 3 special + 256 byte pieces + the alphabet + merges (Llama 2: 32000).
    vocab_size: int = field(default=32000, metadata={
        "help": "Vocabulary size: <unk> <s> </s>, the 256 byte pieces (with byte_fallback), the characters kept, "
                "then merges."})
    # Always "spm" here; the BPE options' ``level`` field picks this trainer.
    level: str = field(default=LEVEL, metadata={"help": LEVEL_HELP, "choices": (LEVEL,)})
    # Share of the text's characters the alphabet covers; sentencepiece's default.
    character_coverage: float = field(default=0.9995, metadata={
        "help": "spm level: share of the text's characters the alphabet must cover; the rarest are left out "
                "and spelled as bytes."})
    # The 256 <0xNN> pieces, so no character is ever unknown (Llama 2 has them).
    byte_fallback: bool = field(default=True, metadata={
        "help": "spm level: add <0x00>…<0xFF> and spell characters outside the alphabet as their UTF-8 bytes, "
                "never <unk>."})
    # Each digit a piece of its own ("2024" is 4 tokens), as Llama 2 trains.
    split_digits: bool = field(default=True, metadata={
        "help": "spm level: never merge a decimal digit with anything, so numbers are spelled digit by digit."})
    # Counting processes; None: one per CPU.
    num_workers: int | None = field(default=None, metadata={
        "help": "Processes that count pre-tokens, at most one per CPU (empty: one per CPU)."})

    def __post_init__(self) -> None:
        problems = ConfigProblems()  # every bad option at once, each naming its field
        if self.level != LEVEL:
            problems.add(ConfigError(f"level={shown(self.level)} must be {LEVEL!r} here.", option="level"))
        floor = len(SPECIAL_TOKENS) + (256 if self.byte_fallback else 0) + 1
        if not floor <= self.vocab_size <= MAX_VOCAB:
            why = f"{len(SPECIAL_TOKENS)} special tokens" + (" + 256 byte pieces" if self.byte_fallback else "") \
                + " + one character"
            problems.add(ConfigError(
                f"vocab_size={shown(self.vocab_size)} must be between {floor} (the {why}) and {MAX_VOCAB:,} "
                "at level spm; pass a vocab_size in that range.",
                option="vocab_size", value=self.vocab_size, least=floor, most=MAX_VOCAB, why=f"the {why}"))
        if not 0 < self.character_coverage <= 1:
            problems.add(ConfigError(f"character_coverage={shown(self.character_coverage)} must be above 0 and at "
                                     "most 1; 0.9995 suits most languages.", option="character_coverage"))
        problems.run(check_workers, self.num_workers)
        problems.raise_if_any()


OPTIONS = SpmBpeOptions


def options_from(values: Mapping[str, Any], model_options: type) -> SpmBpeOptions:
    """Our options from a BPE form or flags. An option of the other levels at its default (the
    form sends every field) is ignored; set to anything else it is refused, naming it, since it
    would do nothing here."""
    ours = {f.name for f in fields(SpmBpeOptions)}
    others = {f.name: f for f in fields(model_options) if f.name not in ours}
    problems = ConfigProblems()
    kept: dict[str, Any] = {}
    for name, value in values.items():
        if name in ours:
            kept[name] = value
        elif name in others and not _is_default(others[name], value):
            fixed = " (it always has <unk> <s> </s>)" if name == "special_tokens" else ""
            problems.add(ConfigError(f"{name} does nothing at level spm{fixed}; keep its default.", option=name))
        elif name not in others:
            kept[name] = value  # unknown: options_from_mapping names it
    try:
        options = options_from_mapping(SpmBpeOptions, kept)
    except ConfigError as exc:
        problems.add(exc)
    problems.raise_if_any()
    return options


def _is_default(spec: Any, value: Any) -> bool:
    default = spec.default
    if value is None or value == "" or value == default:
        return True
    if isinstance(default, tuple):  # a list box: one item per line
        items = value.splitlines() if isinstance(value, str) else list(value)
        return [v for v in items if v != ""] == list(default)
    return str(value).strip() == str(default)
