"""``tokenizer_config.json``: what ``transformers``' ``AutoTokenizer`` reads beside ``tokenizer.json``.

``AutoTokenizer.from_pretrained(folder)`` needs this file to know which class to build; with it,
a folder of the two files loads as a ``PreTrainedTokenizerFast`` that gives our ids. It also
names the special tokens' roles (``unk_token``, ``bos_token``, ``[CLS]`` as ``cls_token``, ...),
which ``transformers`` uses for padding, masking and chat templates. Roles come from what the
caller knows (an imported ``tokenizer_config.json``'s ``bos_token``/``eos_token``/``pad_token``),
then from the model's unknown token, then from the conventional names (BERT's five, ``<s>``,
``</s>``, ``<pad>``, ``<mask>``, GPT-2's ``<|endoftext|>`` as its beginning and end of text).
``clean_up_tokenization_spaces`` is off, so ``decode`` gives back the text, as ours does.

Left out: ``model_max_length`` (a property of the model that uses the tokenizer, not of the
tokenizer; ``transformers`` then assumes no limit).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from engine.tokenizer import Tokenizer

__all__ = ["dumps_tokenizer_config", "tokenizer_config"]

ROLES = ("unk_token", "bos_token", "eos_token", "pad_token", "cls_token", "sep_token", "mask_token")
# Conventional special tokens and the roles they play; GPT-2 uses <|endoftext|> for both ends.
CONVENTIONAL: dict[str, tuple[str, ...]] = {
    "[UNK]": ("unk_token",), "[CLS]": ("cls_token",), "[SEP]": ("sep_token",), "[PAD]": ("pad_token",),
    "[MASK]": ("mask_token",), "<unk>": ("unk_token",), "<s>": ("bos_token",), "</s>": ("eos_token",),
    "<pad>": ("pad_token",), "<mask>": ("mask_token",), "<|endoftext|>": ("bos_token", "eos_token"),
}


def tokenizer_config(tok: Tokenizer, *, known: Mapping[str, Any] | None = None,
                     chat_template: str | None = None) -> dict[str, Any]:
    """The ``tokenizer_config.json`` document for ``tok``.

    ``known`` maps roles to tokens the caller already knows (only roles in :data:`ROLES`
    whose token is one of ``tok``'s are used); ``chat_template`` is written as given.
    """
    vocab_of = tok.token_to_id
    roles: dict[str, str] = {}
    for role, token in (known or {}).items():
        if role in ROLES and isinstance(token, str) and vocab_of(token) is not None:
            roles[role] = token
    unk_id = getattr(tok.model, "unk_id", None)
    unk = tok.id_to_token(unk_id) if unk_id is not None else None
    if unk is not None:
        roles.setdefault("unk_token", unk)
    for token in sorted(tok.special_tokens, key=tok.special_tokens.__getitem__):
        for role in CONVENTIONAL.get(token, ()):
            roles.setdefault(role, token)
    config: dict[str, Any] = {"tokenizer_class": "PreTrainedTokenizerFast", "clean_up_tokenization_spaces": False}
    config.update((role, roles[role]) for role in ROLES if role in roles)
    if chat_template is not None:
        config["chat_template"] = chat_template
    return config


def dumps_tokenizer_config(tok: Tokenizer, *, known: Mapping[str, Any] | None = None,
                           chat_template: str | None = None) -> str:
    """:func:`tokenizer_config` as the JSON text ``transformers`` writes (indented, UTF-8)."""
    return json.dumps(tokenizer_config(tok, known=known, chat_template=chat_template), indent=2,
                      ensure_ascii=False) + "\n"
