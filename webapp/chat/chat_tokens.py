"""The chat-only special tokens of OpenAI's presets: counting a chat as the API bills it.

tiktoken's ``cl100k_base`` and ``o200k_base`` have no ``<|im_start|>``, ``<|im_end|>`` or
``<|im_sep|>``: OpenAI's chat models use them, but the published encodings leave them out. Without
them ChatML is encoded as text (``<|im_start|>`` alone is six tokens), and a three-message chat
shows tens of tokens of overhead that the API never bills. The presets' catalogue
(``engine.presets.TIKTOKEN_ENCODINGS``) lists them per encoding as ``chat_special_tokens``, with
the ids Tiktokenizer uses; here they are added to a copy of the preset's tokenizer, and only the
chat counter encodes with that copy. The preset itself keeps tiktoken's specials, so its plain
encode stays tiktoken's, and its stored document never changes.

A copy is made once per cached tokenizer (the cache in ``tokenizers/loaded.py`` is bounded, and
a copy is dropped with its tokenizer). It shares the model, so it costs a few special-token
entries, not a second vocabulary.
Left out: the templates and the counting (``chat.py``).
"""

from __future__ import annotations

import copy
import threading
import weakref
from collections.abc import Mapping
from typing import Any

from engine import IM_SEP, TIKTOKEN_ENCODINGS, SpecialTokens, Tokenizer
from engine.formats.transformers_config import CHAT_TOKENS
from webapp.tokenizers.originals import chat_settings

_copies: weakref.WeakKeyDictionary[Tokenizer, tuple[frozenset[tuple[str, int]], Tokenizer]] = (
    weakref.WeakKeyDictionary())
_lock = threading.Lock()


def chat_special_tokens(config: Mapping[str, Any] | None) -> dict[str, int]:
    """The chat-only special tokens of the preset a row's ``config`` names (empty for any other row)."""
    name = (config or {}).get("preset")
    encoding = TIKTOKEN_ENCODINGS.get(name) if isinstance(name, str) else None
    return dict(encoding.chat_special_tokens) if encoding is not None else {}


def config_special_tokens(tokenizer: Tokenizer, config: Mapping[str, Any] | None) -> dict[str, int]:
    """The bos/eos/pad tokens of an imported ``tokenizer_config.json`` that the tokenizer has only
    as plain vocabulary entries, with their ids: transformers makes them special tokens, so its
    ``apply_chat_template`` reads InternLM 2's "<s>" as id 1, not as the text "<s>"."""
    found = {}
    for name in CHAT_TOKENS:
        token = chat_settings(config).get(name)
        if (isinstance(token, str) and token not in tokenizer.specials.ids and token not in tokenizer.specials.added
                and (token_id := tokenizer.token_to_id(token)) is not None):
            found[token] = token_id
    return found


def preset_template(config: Mapping[str, Any] | None) -> str | None:
    """The built-in template of the preset's model family, or None when the row is no such preset.

    Tiktokenizer renders every chat model it has on these encodings except gpt-3.5-turbo (GPT-4,
    GPT-4 Turbo, GPT-4o) with ``<|im_sep|>`` after the role; the presets are titled GPT-4 and GPT-4o.
    """
    return "chatml_sep" if IM_SEP in chat_special_tokens(config) else None


def with_chat_tokens(tokenizer: Tokenizer, config: Mapping[str, Any] | None) -> Tokenizer:
    """``tokenizer`` with its preset's chat-only special tokens added; itself when it has none to add.

    A token is added only where it is new: a spelling the tokenizer already has as a token, or
    an id it already uses, stays as it is (an imported tokenizer is never renumbered).
    """
    extra = {token: token_id for token, token_id in chat_special_tokens(config).items()
             if token not in tokenizer.specials.ids and token not in tokenizer.specials.added
             and tokenizer.id_to_token(token_id) is None}
    extra |= config_special_tokens(tokenizer, config)
    if not extra:
        return tokenizer
    key = frozenset(extra.items())
    found = _copies.get(tokenizer)
    if found is not None and found[0] == key:
        return found[1]
    # A shallow copy shares the model and the pipeline; only the special tokens are its own.
    # (Copying goes through Tokenizer's pickling hooks, so the copy starts with empty caches.)
    chat = copy.copy(tokenizer)
    base = tokenizer.specials
    chat.specials = SpecialTokens({**base.ids, **extra}, added=base.added, strip=base.strip)
    with _lock:
        _copies[tokenizer] = (key, chat)
    return chat


__all__ = ["chat_special_tokens", "config_special_tokens", "preset_template", "with_chat_tokens"]
