"""Samples for the GPT-2 import tests (engine and web): a story with a document separator and its
ids in GPT-2, and a tiny vocab.json + merges.txt with entries no merge builds."""

from __future__ import annotations

import json

from engine.byte_unicode import bytes_to_symbols

EOT = "<|endoftext|>"
# A document separator as users paste it: GPT-2 (tiktoken's r50k_base, the preset) gives 76 ids with
# <|endoftext|> allowed, 83 without; the import used to give 83 either way.
STORY = ("Once upon a time, a little girl named Lily found a shiny red ball in the park. She played with it "
         f"all day.\n\n{EOT}\nThe next morning, Tom and his dog Max went to the beach. They built a big "
         "sandcastle and laughed until the sun went down and the stars came out over the quiet blue sea, "
         "and then they all went home to sleep.")
STORY_IDS = [7454, 2402, 257, 640, 11, 257, 1310, 2576, 3706, 20037, 1043, 257, 22441, 2266, 2613, 287, 262,
             3952, 13, 1375, 2826, 351, 340, 477, 1110, 13, 628, 50256, 198, 464, 1306, 3329, 11, 4186, 290, 465,
             3290, 5436, 1816, 284, 262, 10481, 13, 1119, 3170, 257, 1263, 6450, 18676, 290, 13818, 1566, 262,
             4252, 1816, 866, 290, 262, 5788, 1625, 503, 625, 262, 5897, 4171, 5417, 11, 290, 788, 484, 477,
             1816, 1363, 284, 3993, 13]

def files(merges: list[str], extra: list[str]) -> tuple[str, str]:
    """vocab.json and merges.txt text: the 256 bytes (id = byte), one entry per merge, then ``extra``."""
    vocab = {bytes_to_symbols(bytes([b])): b for b in range(256)}
    for merge in merges:
        vocab[merge.replace(" ", "")] = len(vocab)
    for token in extra:
        vocab[token] = len(vocab)
    return json.dumps(vocab), "\n".join(merges) + "\n"


# th 256, the 257, <s 258, <s> 259 (a merge builds it), then <|endoftext|> 260, zz 261, [CLS] 262.
TINY = files(["t h", "th e", "< s", "<s >"], [EOT, "zz", "[CLS]"])
