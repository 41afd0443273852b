"""sentencepiece ``.model`` ↔ :class:`engine.tokenizer.Tokenizer`.

:func:`load_spm_model` builds the pipeline sentencepiece runs: its normalizer
(``engine.spm_normalizer``, which also adds the dummy ``▁`` and escapes spaces), no
pre-tokenizer (the lattice or the merges run over the whole normalized text), a Unigram
(``engine.models.unigram``) or sentencepiece-BPE (``engine.models.spm_bpe``) model, the CONTROL
pieces as special tokens, and ``MetaspaceDecoder``. The parsed proto stays on the tokenizer as
``spm_proto``, so :func:`dump_spm_model` gives back the imported file byte for byte; for a
tokenizer of ours (trained Unigram) it builds a new ModelProto.

``treat_whitespace_as_suffix`` is the normalizer's: the dummy ``▁`` goes after the text (the
lattice and the merges need nothing else, and sentencepiece's decoding strips only a leading
``▁`` either way, so "a b" decodes to "a b " there and here). Refused, with the part we lack
named: WORD and CHAR models, a denormalizer charsmap, a piece that is both a CONTROL/BYTE/UNKNOWN
piece and a normal one. Export refuses normalizers other than identity or a sentencepiece one
(we cannot build a charsmap). Decoding is sentencepiece's
(:class:`SpmDecoder`: CONTROL pieces give nothing, ``<unk>`` gives `` ⁇ ``). Exporting a trained
tokenizer writes ``remove_extra_whitespaces=false``. A trained Unigram's normalizer is
sentencepiece's (``SpmNormalizer``; read back from its ``tokenizer.json``, the ``Replace`` and
``Prepend`` that one writes, :func:`_escaping_steps`), so its ``.model`` gives its ids. A tokenizer
whose Metaspace pre-tokenizer adds the ``▁`` itself (trained before 2026-11-29, or imported) adds
none before a text that starts with a space while sentencepiece does: only such texts get other ids.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from engine.decoders import MetaspaceDecoder
from engine.errors import ConfigError, FormatError
from engine.formats.spm_proto import (
    BYTE,
    BYTE_PIECES,
    CONTROL,
    MODEL_TYPES,
    NORMAL,
    PIECE_TYPES,
    UNKNOWN,
    UNUSED,
    USER_DEFINED,
    ModelProto,
    NormalizerSpec,
    Piece,
    TrainerSpec,
    check_model,
    new_model,
    read_model,
    write_model,
)
from engine.models.spm_bpe import SpmBPE
from engine.models.unigram import Unigram
from engine.normalizers_hf import Prepend, Replace
from engine.pretokenizers import Metaspace
from engine.spm_normalizer import SPACE, SpmNormalizer
from engine.tokenizer import Tokenizer

__all__ = ["NORMAL", "USER_DEFINED", "dump_spm_model", "is_sentencepiece", "load_spm_model", "piece_type_counts",
           "piece_types"]


def load_spm_model(data: bytes, *, source: str | None = None) -> Tokenizer:
    """A tokenizer giving ``SentencePieceProcessor.encode``'s ids for the ``.model`` bytes ``data``."""
    try:
        proto = read_model(data)
        check_model(proto)
        tokenizer = _build(proto)
    except FormatError as exc:
        raise FormatError(str(exc), source=source) from None
    tokenizer.spm_proto = proto  # type: ignore[attr-defined]
    return tokenizer


def _build(proto: ModelProto) -> Tokenizer:
    trainer, spec = proto.trainer_spec, proto.normalizer_spec
    kind = MODEL_TYPES.get(trainer.model_type, "unigram")
    if kind not in ("unigram", "bpe"):
        raise FormatError(f"The trainer_spec's model_type is {kind.upper()}; "
                          f"only UNIGRAM and BPE models are supported.")
    if proto.denormalizer_spec is not None and proto.denormalizer_spec.precompiled_charsmap:
        raise FormatError("The model has a denormalizer_spec charsmap; decoding through one is not supported.")
    seen: dict[str, int] = {}
    for index, p in enumerate(proto.pieces):
        if p.piece in seen:  # sentencepiece allows it across groups; one string, two ids we cannot hold
            raise FormatError(f"The piece {p.piece!r} is both id {seen[p.piece]} and id {index} "
                              f"({PIECE_TYPES[proto.pieces[seen[p.piece]].type]} and {PIECE_TYPES[p.type]}).")
        seen[p.piece] = index
    pieces = [(p.piece, p.score) for p in proto.pieces]
    unk_id = next(i for i, p in enumerate(proto.pieces) if p.type == UNKNOWN)
    controls = {p.piece: i for i, p in enumerate(proto.pieces) if p.type == CONTROL}
    user = [p.piece for p in proto.pieces if p.type == USER_DEFINED]
    unused = [p.piece for p in proto.pieces if p.type == UNUSED]
    model: Any
    if kind == "unigram":
        model = Unigram(pieces, unk_id=unk_id, byte_fallback=trainer.byte_fallback, special_tokens=controls,
                        user_defined=user, unused=unused)
    else:
        mergeable = [i for i, p in enumerate(proto.pieces) if p.type in (NORMAL, USER_DEFINED, UNUSED)]
        model = SpmBPE(pieces, unk_id=unk_id, byte_fallback=trainer.byte_fallback, mergeable=mergeable,
                       user_defined=user, unused=unused)
    normalizer = SpmNormalizer(spec.precompiled_charsmap, add_dummy_prefix=spec.add_dummy_prefix,
                               remove_extra_whitespaces=spec.remove_extra_whitespaces,
                               escape_whitespaces=spec.escape_whitespaces,
                               treat_whitespace_as_suffix=trainer.treat_whitespace_as_suffix, user_defined=user,
                               name=spec.name)
    decoder = SpmDecoder(controls, proto.pieces[unk_id].piece, trainer.unk_surface,
                         strip_first=spec.add_dummy_prefix or spec.remove_extra_whitespaces,
                         strip_all=spec.remove_extra_whitespaces, byte_fallback=trainer.byte_fallback)
    return Tokenizer(model, normalizer=normalizer, pre_tokenizer=None, special_tokens=controls,
                     decoder=decoder, name=f"spm-{kind}")


class SpmDecoder(MetaspaceDecoder):
    """sentencepiece's decoding (``SentencePieceProcessor::Decode``): CONTROL pieces give nothing,
    ``<unk>`` gives ``unk_surface`` (`` ⁇ ``), ``▁`` becomes a space, and while nothing has been
    output the leading ``▁`` of a piece is dropped (of every such piece with
    ``remove_extra_whitespaces``, of the first otherwise). Byte pieces reach it as their bytes
    (the model's ``token_bytes``). Left out: a ``▁`` spelled by three byte pieces stays ``▁``
    in sentencepiece but becomes a space here."""

    def __init__(self, controls: Iterable[str], unk_piece: str, unk_surface: str, *, strip_first: bool,
                 strip_all: bool, byte_fallback: bool) -> None:
        super().__init__(SPACE, add_dummy_prefix=strip_first)
        self._controls = frozenset(c.encode("utf-8") for c in controls)
        self._unk = unk_piece.encode("utf-8")
        self._unk_surface = unk_surface.encode("utf-8")
        self._strip_first, self._strip_all = strip_first, strip_all
        self._byte_fallback = byte_fallback

    def decode(self, tokens: list[bytes]) -> bytes:
        out: list[bytes] = []
        at_start, seen_space, wrote = True, False, False
        space = self._replacement
        for token in tokens:
            if seen_space or wrote:
                at_start = False
            seen_space = False
            if token in self._controls:
                continue
            if token == self._unk:
                out.append(self._unk_surface)
                wrote = wrote or bool(self._unk_surface)
                continue
            if at_start and self._strip_first and token.startswith(space):
                token = token[len(space):]
                seen_space = not self._strip_all
            out.append(token.replace(space, b" "))
            wrote = wrote or bool(token)
        return b"".join(out)

    def to_hf(self) -> dict[str, Any]:
        return self.to_hf_byte_fallback() if self._byte_fallback else super().to_hf()


# ----------------------------------------------------------------------- export
def piece_types(tokenizer: Tokenizer) -> list[int]:
    """The sentencepiece type of every id: the proto's, or inferred (unk → UNKNOWN, specials →
    CONTROL, other added tokens → USER_DEFINED, ``<0xNN>`` with byte fallback → BYTE, everything
    else NORMAL)."""
    proto: ModelProto | None = getattr(tokenizer, "spm_proto", None)
    if proto is not None:
        return [p.type for p in proto.pieces]
    model = tokenizer.model
    byte_fallback = bool(getattr(model, "byte_fallback", False))
    types = [NORMAL] * tokenizer.vocab_size  # then the other kinds by id, not a look-up per id (8,000: 30 ms)
    if byte_fallback:
        for piece in BYTE_PIECES:
            if (token_id := model.token_to_id(piece)) is not None:
                types[token_id] = BYTE
    added = tokenizer.added_tokens  # Hugging Face's non-special added tokens: matched whole, as USER_DEFINED
    for token_id, token in tokenizer.specials.by_id.items():  # these ids read as the added token's string
        types[token_id] = (CONTROL if tokenizer.is_special(token_id) else USER_DEFINED if token in added
                           else BYTE if byte_fallback and token in BYTE_PIECES else NORMAL)
    unk = getattr(model, "unk_id", None)
    if unk is not None and 0 <= unk < len(types):
        types[unk] = UNKNOWN
    return types


def piece_type_counts(tokenizer: Tokenizer) -> dict[str, int]:
    """How many ids have each sentencepiece type (all six names, zeros included)."""
    counts = dict.fromkeys(PIECE_TYPES.values(), 0)
    for kind in piece_types(tokenizer):
        counts[PIECE_TYPES[kind]] += 1
    return counts


def is_sentencepiece(tokenizer: Tokenizer) -> bool:
    """Whether the tokenizer's model is of sentencepiece's kinds (a Unigram or a sentencepiece
    BPE: ``▁`` pieces with scores and piece types), the models a ``.model`` holds; whether the
    rest of its pipeline fits one is checked when it is written (:func:`dump_spm_model`)."""
    return isinstance(tokenizer.model, Unigram | SpmBPE)


def dump_spm_model(tokenizer: Tokenizer) -> bytes:
    """The ``.model`` bytes: an imported model's own bytes, or a new ModelProto for one of ours."""
    model = tokenizer.model
    proto: ModelProto | None = getattr(tokenizer, "spm_proto", None)
    if not is_sentencepiece(tokenizer):
        raise ConfigError(f"A {model.kind} model cannot be written as a sentencepiece .model; "
                          "only Unigram and sentencepiece BPE models can.")
    pieces = model.pieces()
    if proto is not None and [(p.piece, p.score) for p in proto.pieces] == pieces:
        return write_model(proto)
    return write_model(new_model(_new_pieces(tokenizer, pieces), _trainer_spec(tokenizer), _normalizer_spec(tokenizer)))


def _new_pieces(tokenizer: Tokenizer, pieces: list[tuple[str, float]]) -> list[Piece]:
    types = piece_types(tokenizer)
    if UNKNOWN not in types:
        raise ConfigError("The model has no unknown token, which a sentencepiece .model needs; "
                          "train with special_tokens starting with '<unk>'.")
    return [Piece(p, 0.0 if kind in (UNKNOWN, CONTROL, BYTE) else float(score), kind)
            for (p, score), kind in zip(pieces, types)]


def _trainer_spec(tokenizer: Tokenizer) -> TrainerSpec:
    model = tokenizer.model
    specials = tokenizer.special_tokens
    unk = model.unk_id if model.unk_id is not None else 0

    def special(piece: str) -> int:
        return specials.get(piece, -1)

    normalizer = tokenizer.normalizer
    return TrainerSpec(model_type=2 if isinstance(model, SpmBPE) else 1, vocab_size=model.vocab_size,
                       byte_fallback=bool(getattr(model, "byte_fallback", False)), unk_id=unk,
                       bos_id=special("<s>"), eos_id=special("</s>"), pad_id=special("<pad>"),
                       unk_piece=model.id_to_token(unk) or "<unk>",
                       treat_whitespace_as_suffix=isinstance(normalizer, SpmNormalizer)
                       and normalizer.treat_whitespace_as_suffix)


def _normalizer_spec(tokenizer: Tokenizer) -> NormalizerSpec:
    normalizer, pre = tokenizer.normalizer, tokenizer.pre_tokenizer
    if isinstance(normalizer, SpmNormalizer):
        blob = normalizer.charsmap.blob if normalizer.charsmap is not None else b""
        return NormalizerSpec(name=normalizer.name.removeprefix("spm:").removeprefix("spm"), precompiled_charsmap=blob,
                              add_dummy_prefix=normalizer.add_dummy_prefix,
                              remove_extra_whitespaces=normalizer.remove_extra_whitespaces,
                              escape_whitespaces=normalizer.escape_whitespaces)
    escaped = _escaping_steps(normalizer)
    if normalizer is not None and escaped is None:
        raise ConfigError(f"The normalizer {normalizer.name!r} has no sentencepiece charsmap we can write; "
                          "only tokenizers trained with normalization='identity' can be saved as a .model.")
    if not isinstance(pre, Metaspace) or pre.replacement != SPACE or (escaped is not None and pre.add_dummy_prefix):
        raise ConfigError("Only a tokenizer with a Metaspace ('▁') pre-tokenizer can be saved as a .model.")
    if pre.split_by_whitespace and any(SPACE in piece[1:] for piece, _ in tokenizer.model.pieces()):
        raise ConfigError("The pre-tokenizer cuts the text at each '▁', which pieces with a '▁' inside would "
                          "cross in sentencepiece: this tokenizer cannot be saved as a .model.")
    return NormalizerSpec(name="identity", add_dummy_prefix=escaped if escaped is not None else pre.add_dummy_prefix,
                          remove_extra_whitespaces=False, escape_whitespaces=True)


def _escaping_steps(normalizer: Any) -> bool | None:
    """For sentencepiece's identity normalization as Hugging Face writes it (``SpmNormalizer.to_hf``:
    every space as ``▁``, then a ``Prepend`` of ``▁`` or none), whether it prepends the ``▁``;
    None for any other normalizer. A trained Unigram's ``tokenizer.json`` reads back so."""
    steps = getattr(normalizer, "normalizers", None)
    if not isinstance(steps, list) or not 1 <= len(steps) <= 2:
        return None
    first, *rest = steps
    if not (isinstance(first, Replace) and first.string == " " and first.content == SPACE):
        return None
    if rest and not (isinstance(rest[0], Prepend) and rest[0].prepend == SPACE):
        return None
    return bool(rest)
