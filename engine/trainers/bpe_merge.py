"""The BPE merge loop: from distinct pre-tokens and their counts to an ordered list of merges.

This is the hot half of BPE training, for byte-level and character-level BPE alike (they differ
only in the alphabet a word starts from). Reading and counting the corpus is ``counting.py``;
options, ids and the tokenizer are ``bpe.py``; a slow, obviously correct twin of this loop,
which the tests compare against, is ``tests/engine/bpe_reference.py``.

Tie-break rule: each step merges the pair with the highest count; among pairs with equal
counts, the lexicographically greatest pair compared as bytes ``(left, right)`` wins (left
first, then right; a proper prefix is smaller, as with Python ``bytes``). Training stops after
``num_merges`` merges or when the best count falls below ``min_frequency``.

The data, as numpy arrays over every symbol of every distinct word:

* ``sym[i]`` is the token at position ``i``; words lie end to end with ``-1`` between them, so
  no pair crosses a word. ``freq[i]`` is the count of the word position ``i`` is in.
* A merge rewrites the left symbol of an occurrence and unlinks the right one from a doubly
  linked list (``nxt``/``prv``), so positions never move and a word is never rebuilt.
* ``pid[i]`` is the id of the pair whose left symbol is at ``i`` (``bpe_pairs.PairTable``), or
  -1 where no pair starts. Each merge keeps it exact, so the occurrences of a pair still there
  are the recorded positions where ``pid`` still names it (stale ones are filtered with one
  comparison instead of keeping position sets exact), and the pairs a merge lowers are
  ``pid`` at the left neighbours and at the right halves.
* Merging ``(a, b)`` into ``t`` only lowers the counts of the pairs around each occurrence and
  creates pairs that contain ``t``; the new pairs are summed per pair (``bpe_step.group``, one
  sort) and given ids, and only those common enough to be queued at once reach Python
  (``bpe_pairs.PairQueue``, a lazy heap; rarer pairs wait in the count array).
* A step (``bpe_step.Symbols.merge``) merges the next best pairs together, in numpy, as many
  as give exactly what merging them one at a time gives (occurrences that share no symbol, and
  no new pair that would have come first): past the first few hundred merges most pairs occur
  in a few words, and one numpy step per merge cost more in calls than in work. en_100M: 31,743
  merges in 1,477 steps.

Overlapping occurrences (``a a a`` holds ``(a, a)`` twice) merge left to right: in a chain of
touching occurrences every other one is merged (``bpe_step._leftmost``).

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from engine.trainers.bpe_pairs import PairQueue, PairTable
from engine.trainers.bpe_step import Member, Symbols, group, stable_order
from engine.trainers.packed import PackedStrings

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


MAX_BATCH = 256
"""At most this many pairs merge in one numpy step (``bpe_step``); 1 merges one pair a step."""
MAX_STEP_POSITIONS = 1 << 12
"""A step takes no pair that would bring its candidate positions past this (the first pair
excepted): a pair that cannot join the step costs the work of reading its occurrences, and the
common pairs of the first merges often touch one another ("Ġ t" and "h e" in "Ġthe")."""


def _take(queue: PairQueue, table: PairTable, limit: int, V: int) -> list[Member]:
    """The next best pairs, up to ``limit`` of them or :data:`MAX_STEP_POSITIONS` candidates."""
    batch: list[Member] = []
    positions = 0
    while len(batch) < limit:
        best = queue.pop()
        if best is None:
            break
        where = table.positions(best)
        if batch and positions + len(where) > MAX_STEP_POSITIONS:
            queue.give_back([best])
            break
        a, b = divmod(table.pair[best], V)
        batch.append(Member(best, a, b, table.count_view[best], where))
        positions += len(where)
    return batch


def _slots(packed: PackedStrings, index: type[np.signedinteger]) -> tuple[np.ndarray, np.ndarray]:
    """Each symbol's place in the loop's arrays (the words end to end with one ``-1`` before each,
    ordered by their first two symbols), and that order of the words.

    Why that order: most occurrences of a common pair are at the start of words ("t h" in every
    " th…" word), so the words that share a beginning sit side by side, and a step's reads and
    writes over those occurrences touch fewer cache lines. A small gain, but a steady one: the
    loop, this sort included, against the words in table order (thread time, alternated): 0.98x
    on en_100M (faster in 10 of 15 pairs), 0.975x on spm en_5M (29 of 31), 0.98x on spm zh_5M
    (10 of 15). A key of up to seven symbols did no better and took three times as long to sort.
    The order changes no merge: counts are sums over words, and a word's symbols keep their order.
    """
    lengths, starts = packed.lengths, packed.starts()
    width = int(packed.codes.max(initial=0)) + 1
    key = np.zeros(len(lengths), dtype=np.int64)  # first * width + second (0 where a word is shorter)
    first = np.flatnonzero(lengths > 0)
    key[first] = packed.codes[starts[first]].astype(np.int64) * width
    second = np.flatnonzero(lengths > 1)
    key[second] += packed.codes[starts[second] + 1]
    order = stable_order(key, width * width)
    place = np.empty(len(lengths), dtype=np.int64)  # where each word's first symbol goes
    place[order] = np.cumsum(lengths[order] + 1) - lengths[order]
    slot = np.repeat((place - starts).astype(index), lengths)
    slot += np.arange(len(packed.codes), dtype=index)
    return slot, order


def _laid_out(values: np.ndarray, lengths: np.ndarray, order: np.ndarray, dtype: type[np.integer]) -> np.ndarray:
    """Each word's value at each of its symbols' places (``_slots``), 0 in the gaps: written in
    place order by one repeat. Scattering a value per symbol to its slot took 40-85 ms of the
    en_100M leader's loop start (3.1M symbols, the pages new to the process), this ~11 ms."""
    runs = np.zeros(2 * len(order) + 1, dtype=dtype)  # gap, word, gap, word, ..., gap
    runs[1::2] = values[order]
    sizes = np.ones(2 * len(order) + 1, dtype=np.int64)
    sizes[1::2] = lengths[order]
    return np.repeat(runs, sizes)


def merge_words(
    words: Sequence[str] | PackedStrings,
    freqs: Sequence[int] | np.ndarray,
    num_merges: int,
    *,
    alphabet: Sequence[bytes] = BYTES,
    lengths: Sequence[int] | None = None,
    min_frequency: int = 0,
    max_token_length: int | None = None,
    tick: Callable[[int], None] | None = None,
    allowed: Callable[[int, int, bytes], bool] | None = None,
    max_batch: int | None = None,
) -> tuple[list[tuple[int, int, int, int]], list[bytes]]:
    """Learn up to ``num_merges`` merges over ``words``.

    ``words[i]`` spells a distinct pre-token with one character per token (``chr(id)``), or
    ``words`` holds those ids packed (byte-level BPE's ``byte_table.ByteTable`` hands over its
    UTF-8 bytes as they are), and ``freqs[i]`` is how often word ``i`` occurs. Token
    ``t < len(alphabet)`` is ``alphabet[t]`` (the 256 bytes by default; character-level BPE
    passes the UTF-8 of its symbols, which then order ties the same way), and ``lengths[t]`` its
    length as ``max_token_length`` counts it (default: its bytes). Returns ``(merges,
    token_bytes)`` where ``merges[r] = (left, right, count, removed)`` in internal ids (token
    ``len(alphabet) + r`` is merge ``r``): ``count`` is the pair's count when merged and
    ``removed`` how many tokens the merge took out of the corpus (less than ``count`` only for
    overlapping pairs like ``a a a``). ``token_bytes[t]`` is the byte string of internal token
    ``t``. ``tick(merges_done)`` is called after each step (one merge or a batch of them: en_100M
    has 31,743 merges in ~1,480 steps) so the caller can report progress and raise to cancel.
    ``allowed(left, right, merged_bytes)``, where given, is asked once per pair before the pair
    may ever be merged (it never enters the heap otherwise): extending a tokenizer
    (``engine/extend``) uses it to keep merges off text the base handles.
    Up to ``max_batch`` pairs (default :data:`MAX_BATCH`) merge in one step; the result is the same.
    """
    token_bytes = list(alphabet)
    token_len = list(lengths) if lengths is not None else [len(t) for t in token_bytes]
    inv = [_invert(t) for t in token_bytes]
    max_len = max_token_length if max_token_length is not None else 1 << 62
    floor = max(min_frequency, 1)
    V = len(token_bytes) + num_merges  # every pair is left * V + right
    most = MAX_BATCH if max_batch is None else max_batch

    # 1. Every word's symbols in one array, -1 between words and at both ends (``_slots``).
    #    Positions and links are int32 where they fit: on text without spaces (Chinese) nearly
    #    every symbol is in a distinct word, so these arrays are the training's memory; so are the
    #    words' counts at each position, which read as int64.
    packed = words if isinstance(words, PackedStrings) else PackedStrings.of(words)
    n = len(packed.codes) + len(packed.lengths) + 1
    index = np.int32 if n < 1 << 31 else np.int64
    slot, order = _slots(packed, index)
    sym = np.full(n, -1, dtype=np.int32)  # token ids are below MAX_VOCAB
    sym[slot] = packed.codes
    del slot
    word_counts = np.asarray(freqs, dtype=np.int64)
    freq = _laid_out(word_counts, packed.lengths, order,
                     np.int32 if word_counts.max(initial=0) < 1 << 31 else np.int64)
    nxt = np.minimum(np.arange(1, n + 1, dtype=index), n - 1)
    prv = np.maximum(np.arange(-1, n - 1, dtype=index), 0)

    # 2. Count every adjacent pair inside a word, give the pairs ids, and mark where each is.
    first = np.flatnonzero((sym[:-1] >= 0) & (sym[1:] >= 0)).astype(index)
    table = PairTable(index)
    pid = np.full(n, -1, dtype=np.int32 if 3 * n < 1 << 31 else np.int64)  # ids: at most n + 2 per merged symbol
    if len(first):  # keyed by left * A + right over the alphabet's A symbols: few bits, a fast sort
        A = len(alphabet)
        wide = np.int32 if A * A < 1 << 31 else np.int64  # the keys and their temporaries: 3.1M on en_100M
        pairs = sym[first].astype(wide, copy=False) * A + sym[first + 1]
        keys, sums, at, bounds, groups = group(pairs, freq[first], first, A * A)
        del pairs
        left, right = np.divmod(keys, A)
        table.add((left * V + right).tolist(), sums, at, bounds)
        pid[at] = groups
    del first
    corpus = Symbols(sym, nxt, prv, freq, pid, V, table)

    def admissible(pair: int) -> bool:
        left, right = divmod(pair, V)
        return token_len[left] + token_len[right] <= max_len and (
            allowed is None or allowed(left, right, token_bytes[left] + token_bytes[right]))

    def key(pair: int) -> str:
        left, right = divmod(pair, V)
        return inv[left] + inv[right]

    queue = PairQueue(table, key, admissible, floor)

    merges: list[tuple[int, int, int, int]] = []
    size = 1  # pairs to try in the next step
    while len(merges) < num_merges:
        # 3. The best pairs.
        batch = _take(queue, table, min(size, num_merges - len(merges)), V)
        if not batch:
            break
        # 4. Merge those that merge as one (the first always does) and put the others back.
        t = len(token_bytes)
        done, removed, new, counts = corpus.merge(batch, t)
        queue.give_back([m.pair for m in batch[done:]])
        # Double while every pair merges; after a stop, half as many: the pair that stopped the step
        # clashed with one before it, which says little about the pairs after it (dropping to ``done``
        # took 10% more steps, each ~0.3 ms of numpy calls: 0.91-0.95x the loop on en_100M, spm en_5M, zh).
        size = min(most, 2 * done) if done == len(batch) else max(done, len(batch) // 2)
        for m, r in zip(batch[:done], removed):
            token_bytes.append(token_bytes[m.a] + token_bytes[m.b])
            token_len.append(token_len[m.a] + token_len[m.b])
            inv.append(inv[m.a][:-1] + inv[m.b])  # _invert(left + right): one terminator, at the end
            merges.append((m.a, m.b, m.count, r))
        if tick is not None:
            tick(len(merges))
        # 5. Queue the new pairs (their tokens are known now: the queue's key and admissible read them).
        queue.offer(new, counts)
    return merges, token_bytes
