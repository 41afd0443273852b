"""Random tokenizer.json pipelines, built and trained by ``tokenizers`` itself, give its ids.

Each seed draws a model (BPE with or without word affixes and byte fallback, byte-level BPE,
WordPiece, Unigram, WordLevel), up to three normalizers and up to two pre-tokenizers (behaviours,
prepend schemes, inversions and flags drawn too), trains it on half the held-out lines with the
library's own trainer, and compares our ids on a third of the others. A pipeline holding a part
we do not read is refused with the part's name; none may load and give other ids. Run by hand
over 480 seeds, this found two differences in Metaspace's "first" prefix (now fixed); here 28
fixed seeds, one of which drew it (160 seeds took 10 minutes at load 4).
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from engine.errors import TokenforgeError
from engine.tokenizer import Tokenizer
from tests.heldout import heldout_lines

tokenizers = pytest.importorskip("tokenizers")
N, P, M, T = (tokenizers.normalizers, tokenizers.pre_tokenizers, tokenizers.models, tokenizers.trainers)

pytestmark = pytest.mark.slow

SEEDS = range(28)  # seed 26 drew the Metaspace "first" difference
REFUSED_TYPES: tuple[str, ...] = ()  # parts we do not read yet: none of those drawn here
BEHAVIORS = ["removed", "isolated", "merged_with_previous", "merged_with_next", "contiguous"]
SPECIALS = ["<unk>", "<s>", "</s>", "[UNK]"]


def _normalizer(r: random.Random) -> Any:
    pool = [
        N.NFC, N.NFD, N.NFKC, N.NFKD, N.Lowercase, N.StripAccents, N.Nmt,
        lambda: N.Strip(left=r.random() < .5, right=r.random() < .5),
        lambda: N.Replace(r.choice(["  ", "a", "\n", "é"]), r.choice(["", " ", "X", "▁"])),
        lambda: N.Replace(tokenizers.Regex(r.choice([r"\s+", r"[0-9]", r"(?i)the", r"^ +| +$", r" {2,}"])),
                          r.choice(["", " ", "#"])),
        lambda: N.Prepend(r.choice(["▁", " ", "x"])),
        lambda: N.BertNormalizer(clean_text=r.random() < .5, handle_chinese_chars=r.random() < .5,
                                 strip_accents=r.choice([None, True, False]), lowercase=r.random() < .5),
    ]
    steps = [r.choice(pool)() for _ in range(r.randint(0, 3))]
    return None if not steps else steps[0] if len(steps) == 1 else N.Sequence(steps)


def _pre_tokenizer(r: random.Random, byte_level: bool) -> Any:
    pool = [
        P.Whitespace, P.WhitespaceSplit, P.BertPreTokenizer, P.UnicodeScripts,
        lambda: P.CharDelimiterSplit(r.choice([" ", "e"])),
        lambda: P.Punctuation(r.choice(BEHAVIORS)),
        lambda: P.Digits(individual_digits=r.random() < .5),
        lambda: P.Metaspace(prepend_scheme=r.choice(["first", "always", "never"]), split=r.random() < .5),
        lambda: P.Split(r.choice([" ", "-", tokenizers.Regex(r"\p{L}+|\p{N}+|[^\s\p{L}\p{N}]+"),
                                  tokenizers.Regex(r"\s+"), tokenizers.Regex(r"'s|'t")]),
                        r.choice(BEHAVIORS), invert=r.random() < .3),
    ]
    steps = [r.choice(pool)() for _ in range(r.randint(0, 2))]
    if byte_level:
        steps.append(P.ByteLevel(add_prefix_space=r.random() < .5, use_regex=r.random() < .5))
    return None if not steps else steps[0] if len(steps) == 1 else P.Sequence(steps)


def _model(r: random.Random) -> tuple[str, Any, Any]:
    kind = r.choice(["bpe", "byte_bpe", "wordpiece", "unigram", "wordlevel"])
    if kind == "bpe":
        affixes = {name: value for name, value in (("end_of_word_suffix", r.choice([None, "</w>"])),
                                                   ("continuing_subword_prefix", r.choice([None, "##"]))) if value}
        return kind, (M.BPE(unk_token="<unk>", fuse_unk=r.random() < .5, byte_fallback=r.random() < .3, **affixes),
                      T.BpeTrainer(vocab_size=2000, special_tokens=SPECIALS, **affixes))
    if kind == "byte_bpe":
        return kind, (M.BPE(), T.BpeTrainer(vocab_size=2000, special_tokens=SPECIALS,
                                            initial_alphabet=P.ByteLevel.alphabet()))
    if kind == "wordpiece":
        return kind, (M.WordPiece(unk_token="[UNK]"), T.WordPieceTrainer(vocab_size=2000, special_tokens=SPECIALS))
    if kind == "unigram":
        return kind, (M.Unigram(), T.UnigramTrainer(vocab_size=2000, special_tokens=SPECIALS, unk_token="<unk>"))
    return kind, (M.WordLevel(unk_token="<unk>"), T.WordLevelTrainer(vocab_size=2000, special_tokens=SPECIALS))


@pytest.mark.parametrize("seed", SEEDS)
def test_a_random_pipeline_gives_hugging_faces_ids_or_is_refused_by_name(seed: int) -> None:
    r = random.Random(seed)
    kind, (model, trainer) = _model(r)
    hf = tokenizers.Tokenizer(model)
    normalizer, pre = _normalizer(r), _pre_tokenizer(r, kind == "byte_bpe")
    if normalizer is not None:
        hf.normalizer = normalizer
    if pre is not None:
        hf.pre_tokenizer = pre
    if kind == "byte_bpe":
        hf.decoder = tokenizers.decoders.ByteLevel()
    lines = heldout_lines()
    hf.train_from_iterator(lines[::2], trainer)
    document = hf.to_str()
    try:
        ours = Tokenizer.from_json(document)
    except TokenforgeError as exc:
        assert any(name in str(exc) for name in REFUSED_TYPES), exc
        return
    test = lines[1::6]
    expected = [e.ids for e in hf.encode_batch(test, add_special_tokens=False)]
    differ = [line for line, ids in zip(test, expected)
              if ours.encode(line, allowed_special="all", add_special_tokens=False) != ids]
    assert not differ, f"{len(differ)} of {len(test)} lines differ; the first: {differ[0][:80]!r}"
