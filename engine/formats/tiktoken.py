"""tiktoken's rank files (``base64-token rank`` per line) plus a small JSON sidecar.

A rank file holds only the mergeable tokens; tiktoken keeps the split pattern and the special
tokens in code. We put those in a sidecar next to the rank file (``NAME.tiktoken.json``) whose
keys are the keyword arguments of ``tiktoken.Encoding``, so a file we write loads in tiktoken as

    tiktoken.Encoding(mergeable_ranks={base64.b64decode(token): int(rank) for token, rank in lines},
                      **json.load(sidecar))

(the lines split at their space; not ``tiktoken.load.load_tiktoken_bpe(path)``, which keeps a copy
of each file under its path in a temporary folder and reads that copy for the next file at the
same path).

tiktoken merges by the rank of the concatenated bytes, while our model (like Hugging Face's)
stores merges as pairs. Reading makes a merge of every cut of a token into two tokens of the file,
ranked by the token (tiktoken merges any two adjacent parts that make a token, whatever their own
ranks), and sets ``ignore_merges`` (tiktoken looks a whole pre-token up first). Taking only the
cut tiktoken's educational code derives (the token encoded with lower ranks) refused Llama 3's
rank file, and with the lookup alone gave other ids than tiktoken on 17 of 4,839 lines; every cut
and the lookup give its ids on all of them (and on cl100k, o200k and o200k_harmony), at 2.3 times
the merges (cl100k: 233,378).
Writing refuses models that a rank file cannot express: merges out of id order, and multi-byte
tokens that no merge produces. Both directions validate, and every problem is a ``FormatError``
naming the file and line. Left out: tiktoken's download cache and hash checks.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from engine.byte_unicode import bytes_to_symbols
from engine.errors import ConfigError, FormatError
from engine.formats import read_utf8
from engine.limits import (
    MAX_RANK_FILE_WORK,
    MAX_SPECIAL_TOKENS,
    MAX_VOCAB_SIZE,
    check_count,
    check_id,
    check_special_tokens,
    check_token,
    shown,
)
from engine.models.bpe import BPE
from engine.presets import byte_level_bpe
from engine.pretokenizers import PreTokenizer, RegexSplit, get_pretokenizer
from engine.tokenizer import Tokenizer

__all__ = ["build_tiktoken", "dumps_ranks", "dumps_sidecar", "load_tiktoken", "loads_tiktoken", "parse_ranks",
           "parse_sidecar", "save_tiktoken", "sidecar_path"]

WHOLE_TEXT_PATTERN = r"[\s\S]+"  # a tokenizer without a pre-tokenizer: the whole text is one piece
MAX_NAME_LENGTH = 200  # the sidecar's "name" is shown as a title, like the web app's 200-character names


def sidecar_path(rank_path: str | Path) -> Path:
    """Where the sidecar of ``rank_path`` lives: the same name with ``.json`` appended."""
    path = Path(rank_path)
    return path.with_name(path.name + ".json")


def parse_ranks(text: str, *, source: str = "ranks.tiktoken") -> list[tuple[bytes, int, int]]:
    """Read ``(token bytes, rank, line number)`` from a rank file, rejecting duplicates."""

    def fields() -> Iterable[tuple[str, str, int]]:
        for number, line in enumerate(text.split("\n"), start=1):
            line = line.strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 2:
                raise FormatError(f"A line must be a base64 token and a rank, not {shown(line)}.", line=number,
                                  source=source)
            yield parts[0], parts[1], number

    return checked_ranks(fields(), source=source)


def checked_ranks(fields: Iterable[tuple[str, str, int]], *, source: str) -> list[tuple[bytes, int, int]]:
    """Decode ``(base64 token, decimal rank, line)`` triples into ``(bytes, rank, line)``, checked.

    Every rank format that spells tokens in base64 (tiktoken's files, the npm packages' tables in
    ``js_tiktoken.py``) goes through here, so they refuse the same things with the same messages:
    bad base64 or rank, empty or over-long tokens, ids past the bound, duplicates of either.
    """
    entries: list[tuple[bytes, int, int]] = []
    seen_tokens: dict[bytes, int] = {}
    seen_ranks: dict[int, int] = {}
    for encoded, rank_text, number in fields:
        try:
            token = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise FormatError(f"{shown(encoded)} is not valid base64.", line=number, source=source) from None
        if not rank_text.isascii() or not rank_text.isdigit() or len(rank_text) > 18:
            raise FormatError(f"The rank must be a non-negative integer, not {shown(rank_text)}.",
                              line=number, source=source)
        rank = int(rank_text)
        if not token:
            raise FormatError("A token cannot be empty.", line=number, source=source)
        check_token(token, line=number, source=source)
        check_id(rank, bytes_to_symbols(token), line=number, source=source)
        if token in seen_tokens:
            raise FormatError(
                f"The token {bytes_to_symbols(token)!r} appears twice (first on line {seen_tokens[token]}).",
                line=number,
                source=source,
            )
        if rank in seen_ranks:
            raise FormatError(f"The rank {rank} is used twice (first on line {seen_ranks[rank]}).",
                              line=number, source=source)
        seen_tokens[token] = number
        seen_ranks[rank] = number
        entries.append((token, rank, number))
        check_count(len(entries), MAX_VOCAB_SIZE, "tokens or more", name="MAX_VOCAB_SIZE", source=source)
    return entries


def _splits(token: bytes, ranks: Mapping[bytes, int]) -> list[tuple[bytes, bytes]]:
    """Every way to cut ``token`` into two tokens of the file, the shorter left part first.

    tiktoken merges any two adjacent parts whose bytes together are a token, ranked by that
    token, whatever the parts' own ranks: so each of these cuts is a merge of the same rank.
    """
    return [(token[:i], token[i:]) for i in range(1, len(token)) if token[:i] in ranks and token[i:] in ranks]


def build_tiktoken(
    entries: Iterable[tuple[bytes, int, int]],
    *,
    pattern: str | PreTokenizer,
    special_tokens: Mapping[str, int] | None = None,
    extra_special_tokens: Iterable[str] = (),
    name: str = "",
    source: str = "ranks.tiktoken",
) -> Tokenizer:
    """Derive the merges of a rank file and assemble a byte-level BPE tokenizer."""
    ordered = sorted(entries, key=lambda e: e[1])
    ranks = {token: rank for token, rank, _ in ordered}
    work = sum(len(token) ** 2 for token in ranks)
    if work > MAX_RANK_FILE_WORK:
        raise FormatError(
            f"The tokens are too long in all to derive their merges: the sum of their squared lengths is "
            f"{work:,}, over the {MAX_RANK_FILE_WORK:,} accepted (engine.limits.MAX_RANK_FILE_WORK); "
            "real rank files stay far below.", source=source)
    missing = [b for b in range(256) if bytes([b]) not in ranks]
    if missing:
        raise FormatError(
            f"The file lacks the single byte 0x{missing[0]:02X}; {len(missing)} of the 256 single "
            "bytes are missing and byte-level BPE needs all of them.",
            source=source,
        )
    merges = [cut for token, _rank, _line in ordered if len(token) > 1 for cut in _splits(token, ranks)]
    specials = dict(special_tokens or {})
    used = set(ranks.values()) | set(specials.values())
    next_id = max(used, default=-1) + 1
    for token in extra_special_tokens:
        if token not in specials:
            specials[token] = next_id
            next_id += 1
            check_count(len(specials), MAX_SPECIAL_TOKENS, "special tokens", name="MAX_SPECIAL_TOKENS")
    check_special_tokens(specials, source=source)
    clash = sorted(set(specials.values()) & set(ranks.values()))
    if clash:
        raise FormatError(f"The special token id {clash[0]} is also the rank of a mergeable token.", source=source)
    # tiktoken keeps only what the pattern matches (findall), so a rank file's pattern does too.
    pre = pattern if not isinstance(pattern, str) else get_pretokenizer(pattern, keep_gaps=False, rust=True)
    # ignore_merges: tiktoken first looks a whole pre-token up (Llama 3's ".:.:", rank 100421, has no
    # cut into two tokens of lower rank and is reached only so).
    return byte_level_bpe({rank: token for token, rank in ranks.items()}, merges, pretokenizer=pre,
                          special_tokens=specials, name=name, ignore_merges=True)


def checked_special_ids(specials: object, *, source: str) -> dict[str, int]:
    """A ``"special_tokens"`` value as tiktoken writes it (token -> non-negative id), within the
    engine's limits; the sidecar and js-tiktoken's tables both carry one."""
    if not isinstance(specials, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in specials.values()
    ):
        raise FormatError('"special_tokens" must map each token to a non-negative integer id.', source=source)
    check_special_tokens(specials, source=source)
    return specials


def parse_sidecar(text: str, *, source: str = "sidecar.json") -> dict[str, Any]:
    """Read and check the sidecar: ``{"name": str, "pat_str": str, "special_tokens": {str: int}}``."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise FormatError(f"The sidecar is not valid JSON ({getattr(exc, 'msg', exc)}).",
                          line=getattr(exc, "lineno", None), source=source) from None
    if not isinstance(data, dict) or not isinstance(data.get("pat_str"), str):
        raise FormatError('The sidecar must be a JSON object with a "pat_str" string.', source=source)
    specials = checked_special_ids(data.get("special_tokens", {}), source=source)
    name = data.get("name", "")
    if not isinstance(name, str) or len(name) > MAX_NAME_LENGTH:
        raise FormatError(f'"name" must be a string of at most {MAX_NAME_LENGTH} characters.', source=source)
    return {"name": name, "pat_str": data["pat_str"], "special_tokens": specials}


def loads_tiktoken(
    rank_text: str,
    sidecar_text: str | None = None,
    *,
    pretokenizer: str | None = None,
    special_tokens: Iterable[str] = (),
    source: str = "ranks.tiktoken",
    sidecar_source: str = "sidecar.json",
) -> Tokenizer:
    """Build a tokenizer from rank-file text and optional sidecar text.

    ``pretokenizer`` (a name or regex) overrides the sidecar's pattern; one of them is required.
    ``special_tokens`` adds tokens that the sidecar does not have, with the next free ids.
    """
    sidecar = parse_sidecar(sidecar_text, source=sidecar_source) if sidecar_text is not None else None
    if pretokenizer is None and sidecar is None:
        raise ConfigError(
            "A tiktoken rank file does not say how to split text: give its sidecar "
            "(FILE.json) or a --pretokenizer (gpt2, gpt4, o200k or a regex)."
        )
    pattern = pretokenizer if pretokenizer is not None else sidecar["pat_str"]  # type: ignore[index]
    try:
        pre = get_pretokenizer(pattern, keep_gaps=False, rust=True)  # tiktoken's findall and syntax
    except ConfigError as exc:
        if pretokenizer is not None:
            raise
        raise FormatError(f"The pattern is unusable: {exc}", source=sidecar_source) from None
    entries = parse_ranks(rank_text, source=source)
    return build_tiktoken(
        entries,
        pattern=pre,
        special_tokens=sidecar["special_tokens"] if sidecar else None,
        extra_special_tokens=special_tokens,
        name=sidecar["name"] if sidecar else "",
        source=source,
    )


def load_tiktoken(
    path: str | Path,
    sidecar: str | Path | None = None,
    *,
    pretokenizer: str | None = None,
    special_tokens: Iterable[str] = (),
) -> Tokenizer:
    """Import a rank file; its sidecar is ``sidecar`` or, if it exists, ``FILE.json``."""
    path = Path(path)
    side = Path(sidecar) if sidecar is not None else sidecar_path(path)
    side_text = read_utf8(side) if sidecar is not None or side.is_file() else None
    return loads_tiktoken(read_utf8(path), side_text, pretokenizer=pretokenizer, special_tokens=special_tokens,
                          source=path.name, sidecar_source=side.name)


def _checked_model(tokenizer: Tokenizer) -> BPE:
    model = tokenizer.model
    if not isinstance(model, BPE):
        raise ConfigError(f"Only byte-level BPE tokenizers have tiktoken files; this one is {model.kind!r}.")
    if tokenizer.normalizer is not None:
        raise ConfigError("tiktoken has no normalizers; this tokenizer's normalizer cannot be written.")
    made: set[int] = set()
    previous = -1
    for left, right in model.merges:
        merged = model.id_for_bytes(left + right)
        parts = (model.id_for_bytes(left), model.id_for_bytes(right))
        # A token may be the result of several merges in a row (Llama 3's "ĠĠ ĠĠ" and "Ġ ĠĠĠ"), and
        # a file converted from tiktoken lists merges of a later token ("ĠĠĠ" is 220 + 262 -> 257),
        # which a rank file never takes: it holds each token once, by its id, and the caller's
        # check of the ids read back decides.
        if merged is None or merged < previous or any(p is None for p in parts):
            raise ConfigError(
                f"The merge {bytes_to_symbols(left)} {bytes_to_symbols(right)} is out of id order; a tiktoken "
                "rank file can only express merges whose results have increasing ids."
            )
        previous = merged
        made.add(merged)
    for token_id, data in model.items():
        if len(data) > 1 and token_id not in made:
            raise ConfigError(
                f"The token {bytes_to_symbols(data)!r} (id {token_id}) is made by no merge; tiktoken "
                "would make it reachable, so a rank file cannot express this tokenizer."
            )
    return model


def dumps_ranks(tokenizer: Tokenizer) -> str:
    """The rank file: every mergeable token (specials excluded) with its id as rank."""
    model = _checked_model(tokenizer)
    return "".join(f"{base64.b64encode(data).decode('ascii')} {token_id}\n" for token_id, data in model.items())


def dumps_sidecar(tokenizer: Tokenizer) -> str:
    """The sidecar: the keyword arguments of ``tiktoken.Encoding`` other than the ranks."""
    pre = tokenizer.pre_tokenizer
    if pre is not None and not isinstance(pre, RegexSplit):
        raise ConfigError(f"tiktoken splits text with a regex; the {pre.name!r} pre-tokenizer has none.")
    pattern = pre.findall_pattern() if pre is not None else WHOLE_TEXT_PATTERN
    data = {"name": tokenizer.name or "tokenforge", "pat_str": pattern, "special_tokens": tokenizer.special_tokens}
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def save_tiktoken(tokenizer: Tokenizer, path: str | Path) -> Path:
    """Write the rank file at ``path`` and its sidecar beside it; return the sidecar's path."""
    ranks, sidecar = dumps_ranks(tokenizer), dumps_sidecar(tokenizer)
    Path(path).write_text(ranks, encoding="ascii")
    side = sidecar_path(path)
    side.write_text(sidecar, encoding="utf-8")
    return side
