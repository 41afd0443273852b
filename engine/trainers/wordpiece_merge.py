"""The merge loop of the WordPiece trainer: from word counts to a vocabulary.

Words are held as strings whose characters are symbol ids (``chr(id)``), so merging every
occurrence of a pair in a word is one C-level ``str.replace``; pair counts, the words holding
each pair and a lazy max-heap are updated from the merged occurrences only. The scores, the
tie-break rule and the vocabulary order are documented in ``trainers/wordpiece.py``, which also
reads the corpus and builds the tokenizer around the vocabulary; the options are
``trainers/wordpiece_options.py``.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from collections.abc import Mapping
from operator import add

from engine.errors import ConfigError
from engine.trainers.base import Reporter
from engine.trainers.wordpiece_options import WordPieceOptions

_TOP = 0x10FFFF  # tie keys map code point c to _TOP - 1 - c and end each token with chr(_TOP)


def _tie_key(token: str) -> str:
    """A string whose order is the reverse of ``token``'s (prefixes sort after their extensions)."""
    return "".join(chr(_TOP - 1 - min(ord(c), _TOP - 1)) for c in token) + chr(_TOP)


def learn(
    word_counts: Mapping[str, int], options: WordPieceOptions, reporter: Reporter | None = None
) -> tuple[list[str], list[tuple[str, str, int]], list[list[float]]]:
    """Return the vocabulary (in id order), the merges ``(left, right, count)`` and a size curve."""
    reporter = reporter or Reporter()
    prefix = options.continuing_subword_prefix
    likelihood = options.score == "likelihood"
    min_count = max(options.min_frequency, 1)

    # 1. The alphabet: every character, or the `limit_alphabet` most frequent ones.
    by_count: dict[int, list[str]] = defaultdict(list)
    for word, count in word_counts.items():
        by_count[count].append(word)
    char_counts: Counter[str] = Counter()
    for count, words in by_count.items():
        for char, n in Counter("".join(words)).items():
            char_counts[char] += n * count
    alphabet = sorted(char_counts)
    if options.limit_alphabet is not None and len(alphabet) > options.limit_alphabet:
        ranked = sorted(char_counts.items(), key=lambda item: (-item[1], item[0]))
        alphabet = sorted(char for char, _ in ranked[: options.limit_alphabet])
    kept = set(alphabet)

    # 2. Initial symbols. A word is a string whose characters are symbol ids (chr(id)), so that
    #    merging an occurrence is one C-level str.replace.
    tokens: list[str] = []  # symbol id -> token string
    vocab: dict[str, int] = {}
    for token in options.special_tokens:
        vocab.setdefault(token, len(vocab))
    continuing = sorted({c for w in word_counts for c in w[1:]} & kept)
    first_sym = {}
    cont_sym = {}
    for char in alphabet:
        first_sym[char] = chr(len(tokens))
        tokens.append(char)
    for char in continuing:
        cont_sym[char] = chr(len(tokens))
        tokens.append(prefix + char)
    for token in tokens:
        vocab.setdefault(token, len(vocab))
    if len(vocab) > options.vocab_size:
        raise ConfigError(
            f"vocab_size {options.vocab_size} is smaller than the {len(vocab)} special tokens and alphabet "
            f"symbols this corpus needs; raise vocab_size or set limit_alphabet.", option="vocab_size",
        )
    table = {ord(c): s for c, s in cont_sym.items()}
    words: list[str] = []
    counts: list[int] = []
    for word, count in word_counts.items():
        if not word or (len(kept) < len(char_counts) and not kept.issuperset(word)):
            continue
        words.append(first_sym[word[0]] + word[1:].translate(table))
        counts.append(count)
    reporter.update("words", len(words), len(words), force=True)

    # 3. Symbol counts, pair counts, and for each pair the words that contain it.
    sym_count: list[int] = [0] * len(tokens)
    pair_count: dict[str, int] = defaultdict(int)
    where: dict[str, list[int]] = defaultdict(list)
    for index, (word, count) in enumerate(zip(words, counts)):
        for sym in word:
            sym_count[ord(sym)] += count
        for pair in map(add, word, word[1:]):
            pair_count[pair] += count
            where[pair].append(index)
    # symbol -> its pairs that were eligible (count >= min_count) when last seen; a pair only
    # becomes eligible by gaining occurrences, and then it is added again.
    partners: dict[str, set[str]] = defaultdict(set)
    if likelihood:
        for pair, n in pair_count.items():
            if n < min_count:
                continue
            partners[pair[0]].add(pair)
            partners[pair[1]].add(pair)
    rev = [_tie_key(t) for t in tokens]

    def key(pair: str, n: int) -> float:
        return -n / (sym_count[ord(pair[0])] * sym_count[ord(pair[1])]) if likelihood else -n

    heap = [(key(p, n), rev[ord(p[0])] + rev[ord(p[1])], p) for p, n in pair_count.items()]
    symbol_entry: dict[str, float] = {}  # symbol -> key of its one valid symbol entry
    heapq.heapify(heap)

    # 4. Merge the best pair until the vocabulary is full. Heap entries are lazy: a pair entry
    #    whose stored score differs from the current one is re-pushed with the current score,
    #    and every score increase pushes a fresh entry. Merging (a, b) lowers count(a) and
    #    count(b), raising the score of every pair that holds a or b; rather than re-scoring them
    #    all, one "symbol entry" per symbol is pushed with the bound 1/count(a) (a pair's count is
    #    at most count(a)). When it reaches the top, the symbol's pairs are pushed with their true
    #    scores. Symbol entries have the empty tie key, so they pop before pairs of equal score.
    #    Frequent symbols thus are re-scored only once the best score falls to their bound.
    merges: list[tuple[str, str, int]] = []
    total_bytes = sum(len(w.encode("utf-8")) * c for w, c in word_counts.items() if w)
    total_symbols = sum(len(w) * c for w, c in zip(words, counts))
    curve: list[list[float]] = [[len(vocab), round(total_bytes / max(total_symbols, 1), 4)]]
    target = options.vocab_size
    while len(vocab) < target and heap:
        score, tie, pair = heapq.heappop(heap)
        if len(pair) == 1:  # a symbol entry: push its pairs that can compete now
            sym = pair
            if symbol_entry.get(sym) != score:
                continue  # outdated: a newer entry for this symbol exists
            del symbol_entry[sym]
            # Pairs that cannot beat the best remaining entry stay behind one residual entry
            # holding their best score, so the heap does not fill with hopeless entries.
            threshold = heap[0][0] if heap else 0.0
            residual = 0.0
            live = set()
            for p in partners[sym]:
                p_n = pair_count.get(p, 0)
                if p_n >= min_count:
                    live.add(p)
                    p_key = -p_n / (sym_count[ord(p[0])] * sym_count[ord(p[1])])  # as key() computes it
                    if p_key <= threshold:
                        heapq.heappush(heap, (p_key, rev[ord(p[0])] + rev[ord(p[1])], p))
                    elif p_key < residual:
                        residual = p_key
            partners[sym] = live
            if residual:
                symbol_entry[sym] = residual
                heapq.heappush(heap, (residual, "", sym))
            continue
        n = pair_count.get(pair, 0)
        if n < min_count:
            continue
        current = key(pair, n)
        if current != score:
            heapq.heappush(heap, (current, tie, pair))
            continue
        left, right = tokens[ord(pair[0])], tokens[ord(pair[1])]
        merged = left + (right[len(prefix):] if right.startswith(prefix) else right)
        new = chr(len(tokens))
        tokens.append(merged)
        rev.append(_tie_key(merged))
        sym_count.append(0)
        vocab.setdefault(merged, len(vocab))
        changed = set()
        made = 0
        for index in where.pop(pair, ()):
            word = words[index]
            if pair not in word:
                continue  # a stale or repeated entry
            count = counts[index]
            out = word.replace(pair, new)
            words[index] = out
            last = len(out) - 1
            position = out.find(new)
            while position >= 0:
                made += count
                if position > 0:
                    before = out[position - 1]
                    old, fresh = (pair[1] + pair[0], new + new) if before == new else (before + pair[0], before + new)
                    pair_count[old] -= count
                    pair_count[fresh] += count
                    where[fresh].append(index)
                    changed.add(fresh)
                if position < last and out[position + 1] != new:
                    after = out[position + 1]
                    pair_count[pair[1] + after] -= count
                    fresh = new + after
                    pair_count[fresh] += count
                    where[fresh].append(index)
                    changed.add(fresh)
                position = out.find(new, position + 1)
        pair_count[pair] -= made
        if pair_count[pair] <= 0:
            del pair_count[pair]
        sym_count[ord(pair[0])] -= made
        sym_count[ord(pair[1])] -= made
        sym_count[ord(new)] = made
        total_symbols -= made
        merges.append((left, right, n))
        for fresh in changed:
            fresh_n = pair_count.get(fresh, 0)
            if fresh_n >= min_count:
                heapq.heappush(heap, (key(fresh, fresh_n), rev[ord(fresh[0])] + rev[ord(fresh[1])], fresh))
                if likelihood:
                    partners[fresh[0]].add(fresh)
                    partners[fresh[1]].add(fresh)
        if likelihood:
            for sym in {pair[0], pair[1]}:
                if sym_count[ord(sym)] > 0:
                    symbol_entry[sym] = -1 / sym_count[ord(sym)]
                    heapq.heappush(heap, (symbol_entry[sym], "", sym))
        if len(merges) % max(1, target // 64) == 0:
            curve.append([len(vocab), round(total_bytes / max(total_symbols, 1), 4)])
        reporter.update("merges", len(vocab), target)
    curve.append([len(vocab), round(total_bytes / max(total_symbols, 1), 4)])
    reporter.update("merges", len(vocab), target, force=True)
    return sorted(vocab, key=vocab.__getitem__), merges, curve
