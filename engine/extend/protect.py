"""Protected mode for extending a byte-level BPE: which characters the base falls back on, and
which new merges can never touch text made of the others.

A character is *covered* when its UTF-8 is one token of the base (every ASCII character is: a
byte-level BPE has all 256 bytes); the base *falls back* on any other character, spelling it
with several byte tokens. The extension only counts pre-tokens holding such a character, and a
merge of two base tokens ``(a, b)`` is allowed only when the boundary between them splits a
UTF-8 character that no covered character could be: ``a``'s trailing incomplete character
(from its last lead byte, or all of ``a`` if it has none) must not end a prefix of a covered
character whose rest starts with ``b``'s leading continuation bytes. Merges with a new token on
either side are always allowed, and no merge may spell a token the base already has.

Why this is exact: new merges rank after every base merge, so encoding runs the base's merges
to the end first; a new merge can then act only on an adjacent pair of base tokens (the first
new merge anywhere has two base tokens), which in valid UTF-8 splits some character. On text
whose every character is covered that character is covered, and the rule refused the pair.
So **text without fallback characters keeps exactly the base's ids** (held-out English among
it), whatever the corpus. ``ignore_merges`` bases keep it too: a new token spells part of a
fallback character, so no such pre-token equals one.

Left out: character-level and sentencepiece bases (a character there is a symbol, not bytes).

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from engine.models.bpe import BPE


def _is_continuation(byte: int) -> bool:
    return byte & 0xC0 == 0x80


def covered_chars(model: BPE) -> frozenset[str]:
    """The characters of more than one byte whose UTF-8 is a single token of ``model``."""
    found = set()
    for _, data in model.items():
        if 1 < len(data) <= 4:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                continue
            if len(text) == 1:
                found.add(text)
    return frozenset(found)


def falls_back(piece: str, covered: frozenset[str]) -> bool:
    """True when ``piece`` holds a character the base spells with several tokens."""
    return any(ch > "\x7f" and ch not in covered for ch in piece)


def _split_keys(covered: Iterable[str]) -> frozenset[tuple[bytes, bytes]]:
    """Every ``(left, right)`` a pair of tokens can show of a covered character split between them:
    ``left`` a non-empty suffix of its first ``k`` bytes, ``right`` a non-empty prefix of the rest."""
    keys = set()
    for ch in covered:
        data = ch.encode("utf-8")
        for k in range(1, len(data)):
            for i in range(k):
                for j in range(k + 1, len(data) + 1):
                    keys.add((data[i:k], data[k:j]))
    return frozenset(keys)


def _boundary(left: bytes, right: bytes) -> tuple[bytes, bytes] | None:
    """What of the character split between ``left`` and ``right`` each side shows, or None when the
    boundary falls between characters."""
    if not left or not right or not _is_continuation(right[0]):
        return None
    start = len(left)
    while start > 0 and _is_continuation(left[start - 1]):
        start -= 1
    if start > 0:
        if left[start - 1] < 0xC0:  # an ASCII byte before continuation bytes: not UTF-8 text
            return None
        start -= 1  # the lead byte
    end = 1
    while end < len(right) and _is_continuation(right[end]):
        end += 1
    return left[start:], right[:end]


def protected_pairs(model: BPE, alphabet: Sequence[bytes]) -> Callable[[int, int, bytes], bool]:
    """The ``allowed`` test of ``merge_words`` in protected mode, for internal ids whose first
    ``len(alphabet)`` are base tokens spelt ``alphabet[i]`` (see the module docstring)."""
    keys = _split_keys(covered_chars(model))
    base = len(alphabet)

    def allowed(left: int, right: int, merged: bytes) -> bool:
        if model.id_for_bytes(merged) is not None:
            return False
        if left >= base or right >= base:
            return True
        seen = _boundary(alphabet[left], alphabet[right])
        return seen is not None and seen not in keys

    return allowed


def unprotected_pairs(model: BPE) -> Callable[[int, int, bytes], bool]:
    """The ``allowed`` test without protection: only a token the base already has is refused."""

    def allowed(left: int, right: int, merged: bytes) -> bool:
        return model.id_for_bytes(merged) is None

    return allowed
