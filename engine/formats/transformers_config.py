"""``tokenizer_config.json``: what ``transformers``' ``AutoTokenizer`` reads beside ``tokenizer.json``.

``AutoTokenizer.from_pretrained(folder)`` needs this file to know which class to build; with it,
a folder of the two files loads as a ``PreTrainedTokenizerFast`` that gives our ids. It also
names the special tokens' roles (``unk_token``, ``bos_token``, ``[CLS]`` as ``cls_token``, ...),
which ``transformers`` uses for padding, masking and chat templates. Roles come from what the
caller knows (an imported ``tokenizer_config.json``'s ``bos_token``/``eos_token``/``pad_token``),
then from the model's unknown token, then from the conventional names (BERT's five, ``<s>``,
``</s>``, ``<pad>``, ``<mask>``, GPT-2's ``<|endoftext|>`` as its beginning and end of text).
``clean_up_tokenization_spaces`` is off, so ``decode`` gives back the text, as ours does.

Read back, :func:`read_chat_settings` takes from such a file what a tokenizer carries on when
it is imported, extended or downloaded: the chat template and the bos/eos/pad tokens.

Left out: ``model_max_length`` (a property of the model that uses the tokenizer, not of the
tokenizer; ``transformers`` then assumes no limit).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from engine.errors import FormatError
from engine.tokenizer import Tokenizer

__all__ = ["CHAT_TOKENS", "MAX_CONFIG_BYTES", "dumps_tokenizer_config", "read_chat_settings", "tokenizer_config"]

MAX_CONFIG_BYTES = 4 << 20
"""Bytes of a tokenizer_config.json. Llama 3's, with its 256 added tokens listed, is about 50 KB."""
CHAT_TOKENS = ("bos_token", "eos_token", "pad_token")

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


def read_chat_settings(text: str, *, source: str = "tokenizer_config.json",
                       max_template_chars: int | None = None) -> dict[str, Any]:
    """The chat settings of a ``tokenizer_config.json``: ``{"template", "template_name"?,
    "bos_token", "eos_token", "pad_token"}``, each only where the file has it.

    Raises :class:`FormatError` with one sentence naming ``source`` when the text is not such a
    file, or its template is longer than ``max_template_chars``.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormatError(f"{source} is not JSON: line {exc.lineno}, column {exc.colno}: {exc.msg}.") from None
    except RecursionError:
        raise FormatError(f"{source} is nested too deeply to be a tokenizer_config.json.") from None
    if not isinstance(data, dict):
        raise FormatError(f"{source} must hold a JSON object, as transformers writes it.")
    template, name = _chat_template(data.get("chat_template"), source, max_template_chars)
    chat: dict[str, Any] = {key: token for key in CHAT_TOKENS
                            if (token := _config_token(data.get(key), key, source)) is not None}
    if template is not None:
        chat["template"] = template
        if name is not None:
            chat["template_name"] = name
    return chat


def _config_token(value: object, key: str, source: str) -> str | None:
    """A special token as tokenizer_config.json writes it: a string, or an AddedToken ``{"content": ...}``."""
    if isinstance(value, dict):
        value = value.get("content")
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > 256:
        raise FormatError(f"{source}: {key} must be a string of at most 256 characters.")
    return value


def _chat_template(value: object, source: str, max_chars: int | None) -> tuple[str | None, str | None]:
    """The template and its name: a string, or transformers' list of ``{"name", "template"}`` (take "default")."""
    if value is None:
        return None, None
    if isinstance(value, list):
        named = {item.get("name"): item.get("template") for item in value if isinstance(item, dict)}
        if not named:
            raise FormatError(f"{source}: chat_template is an empty list; give a template or leave it out.")
        name = "default" if "default" in named else next(iter(named))
        value, label = named[name], str(name)[:100]
    else:
        label = None
    if not isinstance(value, str):
        raise FormatError(f"{source}: chat_template must be a string (a Jinja template), or a list of named ones.")
    if max_chars is not None and len(value) > max_chars:
        raise FormatError(f"{source}: the chat template has {len(value):,} characters; at most "
                          f"{max_chars:,} are accepted.")
    return value, label
