"""The rank tables of the npm package ``js-tiktoken`` (``dist/ranks/NAME.js``).

Each table is an ES module whose whole body is ``export default {...};`` around one JSON object:

    {"pat_str": "...", "special_tokens": {"<|endoftext|>": 100257, ...}, "bpe_ranks": "..."}

``bpe_ranks`` packs the mergeable tokens run by run: one line per run of consecutive ranks,
``<key> <first rank> <base64 token> <base64 token> ...``, where the tokens take the ranks from
the first one upwards. The leading key (``!``, ``"``, ...) only labels the run; the package's own
loader ignores it, and so do we. A table is text from outside, so it is parsed as JSON (never
evaluated) and every token goes through the same checks as a tiktoken rank file.

Left out: the table's ``pat_str`` (it is the pattern rewritten for JavaScript's regex dialect,
without ``(?i:...)`` and possessive quantifiers; the presets use tiktoken's own) and downloading
(``webapp/preset_install.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

from engine.errors import FormatError
from engine.formats.tiktoken import checked_ranks, checked_special_ids
from engine.limits import shown

__all__ = ["RankTable", "parse_rank_table"]

PREFIX = "export default"


@dataclass(frozen=True, slots=True)
class RankTable:
    """A parsed table: the mergeable tokens with their ranks and the package's special tokens."""

    entries: list[tuple[bytes, int, int]]  # (token bytes, rank, line of bpe_ranks)
    special_tokens: dict[str, int]

    def ranks(self) -> dict[bytes, int]:
        """The mergeable ranks as ``tiktoken.Encoding(mergeable_ranks=...)`` takes them."""
        return {token: rank for token, rank, _ in self.entries}


def _fields(packed: str, source: str) -> Iterator[tuple[str, str, int]]:
    """``(base64 token, rank as text, line)`` for every token of the packed runs."""
    for number, line in enumerate(packed.split("\n"), start=1):
        if not line.strip():
            continue
        parts = line.split(" ")
        if len(parts) < 3:
            raise FormatError(f"A run must be a key, a first rank and tokens, not {shown(line)}.",
                              line=number, source=source)
        first = parts[1]
        if not first.isascii() or not first.isdigit() or len(first) > 18:
            raise FormatError(f"A run's first rank must be a non-negative integer, not {shown(first)}.",
                              line=number, source=source)
        start = int(first)
        for offset, token in enumerate(parts[2:]):
            yield token, str(start + offset), number


def parse_rank_table(text: str, *, source: str = "ranks.js") -> RankTable:
    """Parse a ``js-tiktoken`` rank table; any deviation from the format is a ``FormatError``."""
    body = text.strip()
    if not body.startswith(PREFIX):
        raise FormatError(f"A js-tiktoken rank table starts with {PREFIX!r}; this file starts with "
                          f"{shown(body[:30])}.", source=source)
    body = body[len(PREFIX):].strip().removesuffix(";").rstrip()
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise FormatError(f"The table is not a JSON object after {PREFIX!r} ({getattr(exc, 'msg', exc)}).",
                          source=source) from None
    if not isinstance(data, dict) or not isinstance(data.get("bpe_ranks"), str):
        raise FormatError('The table must be an object with a "bpe_ranks" string.', source=source)
    specials = checked_special_ids(data.get("special_tokens", {}), source=source)
    entries = checked_ranks(_fields(data["bpe_ranks"], source), source=source)
    if not entries:
        raise FormatError('"bpe_ranks" holds no tokens.', source=source)
    return RankTable(entries, dict(specials))
