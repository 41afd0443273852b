"""Train a WordPiece tokenizer (BERT's model) from word counts.

Training is bottom-up merging, as Hugging Face's trainer does it: every word starts as
characters, the first bare and the others with the continuing prefix (``h ##u ##g``), and the
best adjacent pair is merged until the vocabulary is full. Two scores are offered:

- ``score="frequency"`` (default): count(ab), which is what Hugging Face's ``WordPieceTrainer``
  does (it runs its BPE trainer with the ``##`` prefix). With the defaults it gives Hugging
  Face's ``BertWordPieceTokenizer`` held-out tokens per word within 0.2% on English
  (``benchmarks/quality.py``).
- ``score="likelihood"``: count(ab) / (count(a) · count(b)), the gain in unigram
  log-likelihood, log P(ab) − log P(a) − log P(b), the score of the WordPiece paper. It ranks
  pairs of rare symbols first (two symbols seen twice, always together, score 1/2; "t h" in
  English scores under a millionth), so at min_frequency 2 the vocabulary fills with rare
  strings and common words stay split: 1.7× the tokens of the frequency score on 5 MB of
  English. A higher min_frequency narrows the gap (1.08× at 20) without closing it. Google's
  open-source WordPiece learner (``tensorflow_text``) is a different, top-down algorithm that
  thresholds counts and does not use this score. Merging changes count(a) and count(b), so
  every pair that contains a or b is re-scored, not only the pairs next to the merge.

**Tie-break rule** (both scores): among equal scores the lexicographically greatest pair
``(left, right)`` of token strings wins, comparing code points. Scores are compared as floats.
Pairs seen fewer than ``min_frequency`` times are never merged. The vocabulary is ordered
specials, then the alphabet's characters by code point, then their ``##`` forms by code point,
then merges in the order they were made. ``limit_alphabet`` keeps the most frequent characters
(ties: lower code point first); a word with any other character is left out of training,
since WordPiece encodes it as ``[UNK]`` anyway.

The merge loop is ``trainers/wordpiece_merge.py``. Left out: counting words
(``trainers/counting.py``), the encoder (``models/wordpiece.py``).

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from engine.decoders import WordPieceDecoder
from engine.models.wordpiece import WordPiece
from engine.normalizers import get_normalizer
from engine.post_processors import TemplateProcessing
from engine.pretokenizers import BertPreTokenizer
from engine.tokenizer import Tokenizer
from engine.trainers.base import Reporter, TrainResult
from engine.trainers.corpus import DOCUMENT_SEPARATOR
from engine.trainers.counting import count_pretokens
from engine.trainers.wordpiece_merge import learn
from engine.trainers.wordpiece_options import BERT_SPECIALS, NORMALIZER_CHOICES, WordPieceOptions

__all__ = ["BERT_SPECIALS", "NORMALIZER_CHOICES", "WordPieceOptions", "build_tokenizer", "learn", "train"]


def build_tokenizer(vocab: Sequence[str], options: WordPieceOptions) -> Tokenizer:
    """Assemble the BERT pipeline around a WordPiece vocabulary (ids are positions in ``vocab``)."""
    ids = {token: index for index, token in enumerate(vocab)}
    model = WordPiece(
        ids,
        unk_token=options.unk_token,
        continuing_subword_prefix=options.continuing_subword_prefix,
        max_input_chars_per_word=options.max_input_chars_per_word,
    )
    specials = {token: ids[token] for token in options.special_tokens}
    return Tokenizer(
        model,
        normalizer=get_normalizer(options.normalizer_names()),
        pre_tokenizer=BertPreTokenizer(),
        special_tokens=specials,
        post_processor=TemplateProcessing(options.template, specials) if options.template else None,
        decoder=WordPieceDecoder(options.continuing_subword_prefix),
        name="wordpiece",
    )


def train(files: Sequence[Path], options: WordPieceOptions, *, reporter: Reporter) -> TrainResult:
    """Count the words of ``files`` and learn a WordPiece vocabulary from them."""
    # 1. Count BERT's pre-tokens on all cores; the document separator is never text.
    counts = count_pretokens(
        files,
        special_tokens=(*options.special_tokens, DOCUMENT_SEPARATOR),
        split="bert",
        normalizer=get_normalizer(options.normalizer_names()),
        num_workers=options.num_workers,
        reporter=reporter,
    )
    # 2. Learn the vocabulary, then 3. assemble the BERT pipeline around it.
    vocab, merges, curve = learn(counts, options, reporter)
    stats = {"merges": [list(m) for m in merges], "curve": curve, "words": len(counts)}
    return TrainResult(build_tokenizer(vocab, options), stats)
