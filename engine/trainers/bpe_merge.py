"""The byte-level BPE merge loop: from pre-token counts to an ordered list of merges.

This is the hot half of BPE training, written for CPython speed, for byte-level and
character-level BPE alike (they differ only in the alphabet a word starts from). It covers only the merge
phase; reading the corpus and counting pre-tokens is ``trainers/corpus.py``, options, ids and
the tokenizer are ``trainers/bpe.py``, and a slow, obviously correct twin of this loop (the
one the tests compare against) is ``trainers/bpe_reference.py``.

Tie-break rule: each step merges the pair with the highest count; among pairs with equal
counts, the lexicographically greatest pair compared as bytes ``(left, right)`` wins (left
first, then right; a proper prefix is smaller, as with Python ``bytes``). Training stops after
``num_merges`` merges or when the best count falls below ``min_frequency``.

Data layout (why it is fast):

* A token is one character: alphabet symbol ``t`` (byte ``t`` at byte level) is ``chr(t)``
  and the ``r``-th merge creates ``chr(len(alphabet) + r)``. Each distinct pre-token is a ``str`` of its tokens with a count, and a
  pair is a 2-character ``str``. Finding occurrences and rewriting a word are then
  ``str.find`` and ``str.replace``, which run in C and go left to right without overlaps,
  exactly as a BPE merge does; no tuple, list or bytes object is made per occurrence. (An
  int-list layout of the same algorithm was about 2x slower.)
* ``where[pair]`` lists the words that may contain the pair, once per occurrence. Entries are
  never removed: a stale or duplicate entry costs one failed ``str.find``, far cheaper than
  keeping sets exact. Pair counts are sums of word counts over those lists, taken in C.
* The heap holds ``(-count, tiebreak_key, pair)``. Merging ``(a, b)`` into ``t`` only lowers
  the counts of existing pairs and creates pairs that contain ``t``, so a merge pushes each new
  pair once, with its final count, and never pushes a lowered one: a popped entry whose count
  is stale is pushed back with its current count (lazy invalidation). Pairs below
  ``min_frequency`` never enter the heap. ``tiebreak_key`` orders bytes in reverse (see
  :func:`_invert`), so the min-heap pops the greatest pair among equal counts and compares
  nothing but ints until counts tie.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from operator import add

_END = chr(0x10000)  # sorts after every chr(1..256) used by _invert
BYTES: tuple[bytes, ...] = tuple(bytes([b]) for b in range(256))
"""The byte-level alphabet: internal token ``b`` is byte ``b``."""


def _invert(token: bytes) -> str:
    """A string key that sorts in the *reverse* order of ``token`` as bytes.

    Byte ``x`` becomes ``chr(256 - x)`` (greater bytes sort first) and a terminator larger than
    any of those ends the key, so a proper prefix (the smaller bytes) sorts after its
    extensions. Keys of a pair are concatenated: the terminator cannot occur inside a key, so
    the left halves decide unless they are equal.
    """
    return "".join([chr(256 - x) for x in token]) + _END


def merge_words(
    words: list[str],
    freqs: list[int],
    num_merges: int,
    *,
    alphabet: Sequence[bytes] = BYTES,
    lengths: Sequence[int] | None = None,
    min_frequency: int = 0,
    max_token_length: int | None = None,
    tick: Callable[[int], None] | None = None,
) -> tuple[list[tuple[int, int, int, int]], list[bytes]]:
    """Learn up to ``num_merges`` merges over ``words`` (token strings, rewritten in place).

    ``words[i]`` spells a distinct pre-token with one character per token (``chr(id)``, see the
    module docstring) and ``freqs[i]`` is how often it occurs. Token ``t < len(alphabet)`` is
    ``alphabet[t]`` (the 256 bytes by default; character-level BPE passes the UTF-8 of its
    symbols, which then order ties the same way), and ``lengths[t]`` its length as
    ``max_token_length`` counts it (default: its bytes). Returns ``(merges, token_bytes)``
    where ``merges[r] = (left, right, count, removed)`` in internal ids (token
    ``len(alphabet) + r`` is merge ``r``): ``count`` is the pair's count when merged and
    ``removed`` how many tokens the merge took out of the corpus (less than ``count`` only for
    overlapping pairs like ``a a a``). ``token_bytes[t]`` is the byte string of internal token
    ``t``. ``tick(merges_done)`` is called after each merge (and every few thousand words while
    indexing) so the caller can report progress and raise to cancel.
    """
    token_bytes = list(alphabet)
    token_len = list(lengths) if lengths is not None else [len(t) for t in token_bytes]
    inv = [_invert(t) for t in token_bytes]
    max_len = max_token_length if max_token_length is not None else 1 << 62

    # 1. Index pair -> words (a word appears once per occurrence), then count each pair as the
    #    sum of its words' frequencies; summing a list with map() runs at C speed.
    where: defaultdict[str, list[int]] = defaultdict(list)
    for w, word in enumerate(words):
        for p in map(add, word, word[1:]):
            where[p].append(w)
        if tick is not None and not w & 0x3FFF:
            tick(0)
    freq_of = freqs.__getitem__
    counts: dict[str, int] = {p: sum(map(freq_of, ws)) for p, ws in where.items()}
    get = counts.get

    # 2. A heap of (-count, reversed-bytes key, pair); see the module docstring.
    #    Pairs below min_frequency can never be merged (counts only fall), so they stay out.
    floor = max(min_frequency, 1)
    heap = [(-c, inv[ord(p[0])] + inv[ord(p[1])], p) for p, c in counts.items() if c >= floor]
    if max_len < 2:
        heap = []
    heapq.heapify(heap)

    merges: list[tuple[int, int, int, int]] = []
    heappush, heappop, heapreplace = heapq.heappush, heapq.heappop, heapq.heapreplace
    while len(merges) < num_merges:
        # 3. Pop the best pair whose heap count is current; re-push stale entries lazily.
        while heap:
            neg, key, p = heap[0]
            c = get(p, 0)
            if c == -neg:
                break
            if c >= floor:
                heapreplace(heap, (-c, key, p))
            else:
                heappop(heap)
        if not heap or -heap[0][0] < floor:
            break
        neg, _, p = heappop(heap)
        a, b = p
        new = len(token_bytes)
        t = chr(new)
        merged = token_bytes[ord(a)] + token_bytes[ord(b)]
        token_bytes.append(merged)
        token_len.append(token_len[ord(a)] + token_len[ord(b)])
        inv.append(_invert(merged))
        removed = -neg

        # 4. Rewrite every word holding the pair; take the count of each pair around an
        #    occurrence away and index the word under the pair it forms with the new token.
        #    str.find/replace go left to right without overlaps, as BPE does. Where two
        #    occurrences touch ("abab" -> "tt") the pair between them becomes (t, t), not (t, a).
        new_where: defaultdict[str, list[int]] = defaultdict(list)
        tt = t + t
        if a == b:  # occurrences overlap: "aaa" holds the pair twice but merges once
            removed = sum(freqs[w] * words[w].count(p) for w in set(where[p]))
        for w in where.pop(p, ()):
            s = words[w]
            i = s.find(p)
            if i < 0:
                continue  # a stale or duplicate index entry
            f = freqs[w]
            n = len(s) - 2
            if i:
                counts[s[i - 1 : i + 1]] -= f
                new_where[s[i - 1] + t].append(w)
            while True:
                j = s.find(p, i + 2)
                if i < n:
                    counts[s[i + 1 : i + 3]] -= f
                    new_where[t + s[i + 2] if j != i + 2 else tt].append(w)
                if j < 0:
                    break
                if j != i + 2:
                    counts[s[j - 1 : j + 1]] -= f
                    new_where[s[j - 1] + t].append(w)
                i = j
            words[w] = s.replace(p, t)
        del counts[p]
        merges.append((ord(a), ord(b), -neg, removed))
        new_counts = {q: sum(map(freq_of, ws)) for q, ws in new_where.items()}
        counts.update(new_counts)
        where.update(new_where)

        # 5. Push each new pair once, with its final count for this step.
        key_new = inv[new]
        for q, c in new_counts.items():
            if c < floor:
                continue
            x, y = ord(q[0]), ord(q[1])
            if token_len[x] + token_len[y] > max_len:
                continue
            heappush(heap, (-c, (key_new + inv[y]) if x == new else (inv[x] + key_new), q))
        if tick is not None:
            tick(len(merges))
    return merges, token_bytes


def words_from_counts(counts: Iterable[tuple[str, int]]) -> tuple[list[str], list[int]]:
    """Turn ``(pre_token, count)`` pairs into byte lists and frequencies for :func:`merge_words`."""
    words: list[str] = []
    freqs: list[int] = []
    for piece, count in counts:
        words.append(piece.encode("utf-8").decode("latin-1"))
        freqs.append(count)
    return words, freqs
