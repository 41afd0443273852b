"""Helpers for the extension tests (web and browser): a Chinese corpus, an English one, storing
corpora without the upload form, and the extension form as a page fills it.

Left out: fixtures (``tests/webapp/conftest.py``) and the base tokenizers
(``tests/webapp/playground_samples.py``).
"""

from __future__ import annotations

import random

HANZI = "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可"
RARE = "鳳麒麟饕餮魑魅魍魎鬱齲蠶鑰匙瀟灑纜繩驟贔屭鸚鵡囍犇骉羴鑫淼焱垚燚貔貅鬣鼴鼹蟋蟀螳螂蜻蜓蝙蝠"  # not in Llama 2's vocabulary
ENGLISH = "".join(f"the quick brown fox {i} jumps over the lazy dog, said the teacher {i % 13}.\n"
                  for i in range(200))


def chinese(lines: int = 400, seed: int = 23, alphabet: str = HANZI) -> str:
    """Made-up Chinese lines of ``alphabet``'s characters (a byte-level base spells each with 3 bytes)."""
    rng = random.Random(seed)
    words = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 3))) for _ in range(120)]
    return "".join("".join(rng.choice(words) for _ in range(rng.randint(4, 10))) + "。\n" for _ in range(lines))


def extend_form(*corpus_ids: int, add: str = "40", protected: bool = True, held_out: str = "",
                reference: str = "") -> dict[str, object]:
    """The form's fields: the corpora ticked, ``add``, protected or not, the optional corpora."""
    data: dict[str, object] = {"corpus_ids": [str(i) for i in corpus_ids], "add": add,
                               "held_out_corpus_id": held_out, "reference_corpus_id": reference}
    if protected:
        data["protected"] = "y"
    return data
