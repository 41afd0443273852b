"""Count a chat as the model sees it: messages wrapped in a chat template, then encoded.

The built-in templates are OpenAI's two ChatML forms, Llama 3 and Gemma; a tokenizer imported
with a ``tokenizer_config.json`` also offers its own ``chat_template``. Templates are rendered by
``chat_sandbox`` (bounded in time, memory and output). The two ChatML forms are the strings
Tiktokenizer (dqbd/tiktokenizer, ``src/sections/ChatGPTEditor.tsx``) builds for OpenAI's chat
models, written here as templates:

- ``chatml``, for gpt-3.5-turbo: ``<|im_start|>{role}\\n{content}<|im_end|>\\n`` per message, and
  ``<|im_start|>assistant\\n`` to open the reply;
- ``chatml_sep``, for the later models (GPT-4, GPT-4 Turbo, GPT-4o): ``<|im_start|>{role}<|im_sep|>``
  ``{content}<|im_end|>`` per message, nothing between messages, and ``<|im_start|>assistant<|im_sep|>``.

Tiktokenizer always opens the reply; here the ``add_generation_prompt`` switch does. On the
cl100k_base and o200k_base presets the three markers are special tokens for the chat only
(``chat_tokens.py``), so with ``chatml_sep`` a message costs three tokens plus its role's and its
content's, and opening the reply three: the rule of OpenAI's cookbook for counting a chat's tokens.

How the rendered prompt is encoded, and so what the counts mean:

- the text the template wrote around the messages is encoded with the template's special
  tokens allowed (those the template names, and its bos/eos/pad tokens), so ``<|im_start|>``
  is one token when the tokenizer has it; when it lacks one, it is text, and
  :attr:`ChatCount.missing` names it for the page;
- each message's content is ordinary text, never special tokens, so a message that spells
  ``<|im_end|>`` cannot end its turn early (what OpenAI's API does too);
- the prompt is encoded whole, as transformers' ``apply_chat_template`` encodes it, so a token
  may span the edge of a content (InternLM 2 merges ".<" of ".<|im_end|>" when that is no special
  token); only when a content spells a special token is each content encoded alone instead;
- a message's count is the tokens that start in its own content, the overhead is the total
  minus the messages' counts: the role names, separators and special tokens the template added.

To find the contents in the rendered text, the template is rendered a second time with each
content replaced by a marker; if putting the contents back into that rendering gives the
first one exactly, the markers say where each content is. A template that transforms the
content (``| trim``, splitting) falls back to searching the text for each content in turn.
Left out: HTTP (``views.py``, ``api/views.py``), the sandbox (``sandbox.py``).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine import Tokenizer, TokenSpan
from webapp.chat.chat_tokens import with_chat_tokens
from webapp.chat.sandbox import MAX_TEMPLATE_CHARS, ChatTemplateError, render
from webapp.tokenizers.originals import chat_settings

MAX_MESSAGES = 100
MAX_ROLE_CHARS = 64
TEMPLATE_SLACK = 50_000  # characters a template may add to the messages' own


@dataclass(frozen=True, slots=True)
class Builtin:
    """A chat format we ship: its name on the page, its Jinja source and its special tokens."""

    label: str
    source: str
    specials: tuple[str, ...]


BUILTINS: dict[str, Builtin] = {
    "chatml": Builtin(
        "ChatML, role and newline (GPT-3.5 Turbo)",
        "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] "
        "+ '<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
        ("<|im_start|>", "<|im_end|>")),
    "chatml_sep": Builtin(
        "ChatML with <|im_sep|> (GPT-4, GPT-4o)",
        "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '<|im_sep|>' + message['content'] "
        "+ '<|im_end|>' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant<|im_sep|>' }}{% endif %}",
        ("<|im_start|>", "<|im_end|>", "<|im_sep|>")),
    "llama3": Builtin(
        "Llama 3",
        "{{ '<|begin_of_text|>' }}{% for message in messages %}{{ '<|start_header_id|>' + message['role'] "
        "+ '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}",
        ("<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>")),
    "gemma": Builtin(
        "Gemma (assistant is “model”)",
        "{{ '<bos>' }}{% for message in messages %}{% set role = 'model' if message['role'] == 'assistant' "
        "else message['role'] %}{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim "
        "+ '<end_of_turn>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}",
        ("<bos>", "<start_of_turn>", "<end_of_turn>")),
}
TOKENIZER_TEMPLATE = "tokenizer"
_MARKER = re.compile("\ue000(\\d+)\ue001")


class ChatError(ValueError):
    """Messages or a template choice that cannot be counted; the message is a plain sentence."""


class TemplateRefused(ChatError):
    """A well-formed request whose template cannot be rendered (refused, failed, or absent)."""


@dataclass(frozen=True, slots=True)
class Message:
    role: str
    content: str


@dataclass(slots=True)
class ChatCount:
    """A rendered and encoded chat."""

    text: str  # the rendered prompt
    spans: list[TokenSpan]  # every token of it, offsets into ``text``
    message_counts: list[int]  # tokens of each message's own content
    missing: list[str]  # template special tokens this tokenizer lacks (encoded as text)
    tokenizer: Tokenizer  # what encoded it: the row's tokenizer, or its copy with chat tokens (chat_tokens.py)

    @property
    def ids(self) -> list[int]:
        return [s.id for s in self.spans]

    @property
    def total(self) -> int:
        return len(self.spans)

    @property
    def overhead(self) -> int:
        return self.total - sum(self.message_counts)


def template_choices(config: Mapping[str, Any] | None) -> dict[str, str]:
    """The templates this tokenizer offers: the built-ins, then its own when it was imported with one."""
    choices = {key: b.label for key, b in BUILTINS.items()}
    if isinstance(chat_settings(config).get("template"), str):
        choices[TOKENIZER_TEMPLATE] = "This tokenizer's own chat_template"
    return choices


def parse_messages(raw: object, *, max_chars: int) -> list[Message]:
    """Messages from JSON-like data, ``[{"role": ..., "content": ...}, ...]``; raise ChatError naming the bad one."""
    if not isinstance(raw, list) or not raw:
        raise ChatError('Give "messages" as a non-empty list of {"role": ..., "content": ...} objects.')
    if len(raw) > MAX_MESSAGES:
        raise ChatError(f"A chat can have at most {MAX_MESSAGES} messages; this one has {len(raw):,}.")
    messages, total = [], 0
    for number, item in enumerate(raw, start=1):
        if (not isinstance(item, dict) or not isinstance(item.get("role"), str)
                or not isinstance(item.get("content"), str)):
            raise ChatError(f'Message {number} must be an object with "role" and "content" strings.')
        role = item["role"].strip()
        if not role or len(role) > MAX_ROLE_CHARS:
            raise ChatError(f"Message {number}: a role is 1 to {MAX_ROLE_CHARS} characters "
                            "(system, user, assistant or a name of your own).")
        total += len(item["content"])
        if total > max_chars:
            raise ChatError(f"The messages have more than {max_chars:,} characters together; shorten them.")
        messages.append(Message(role, item["content"]))
    return messages


def template_source(choice: str, config: Mapping[str, Any] | None) -> tuple[str, tuple[str, ...]]:
    """The Jinja source of ``choice`` and the special tokens it declares; raise ChatError if unknown."""
    if choice in BUILTINS:
        return BUILTINS[choice].source, BUILTINS[choice].specials
    if choice == TOKENIZER_TEMPLATE:
        own = chat_settings(config).get("template")
        if isinstance(own, str):
            return own, ()
        raise TemplateRefused("This tokenizer was imported without a chat template; choose one of ChatML, Llama 3 "
                              "or Gemma (or import it again with its tokenizer_config.json).")
    raise ChatError(f"Choose the template from the list ({', '.join(template_choices(config))}), "
                    f"not {choice[:40]!r}.")


def _locate(text: str, marked: str, messages: Sequence[Message]) -> list[tuple[int, int] | None]:
    """Where each message's content lies in ``text`` (None where it cannot be found)."""
    places: list[tuple[int, int] | None] = [None] * len(messages)
    rebuilt, position, found = [], 0, True
    for match in _MARKER.finditer(marked):
        index = int(match.group(1))
        if index >= len(messages) or places[index] is not None:
            found = False
            break
        rebuilt.append(marked[position:match.start()])
        start = sum(map(len, rebuilt))
        rebuilt.append(messages[index].content)
        places[index] = (start, start + len(messages[index].content))
        position = match.end()
    rebuilt.append(marked[position:])
    if found and "".join(rebuilt) == text:
        return places
    # The template changed the contents: find each (or its stripped form) in order.
    places, cursor = [None] * len(messages), 0
    for index, message in enumerate(messages):
        for needle in (message.content, message.content.strip()):
            at = text.find(needle, cursor) if needle else -1
            if at >= 0:
                places[index] = (at, at + len(needle))
                cursor = at + len(needle)
                break
    return places


def _encode_segment(tokenizer: Tokenizer, text: str, start: int, end: int, allowed: frozenset[str],
                    byte_start: int) -> list[TokenSpan]:
    piece = text[start:end]
    spans = tokenizer.encode_with_offsets(piece, allowed_special=allowed, disallowed_special=(),
                                          add_special_tokens=False)
    return [TokenSpan(s.id, s.byte_start + byte_start, s.byte_end + byte_start, s.char_start + start,
                      s.char_end + start, s.special) for s in spans]


def _encode_prompt(tokenizer: Tokenizer, text: str, stretches: list[tuple[int, int, int | None]],
                   allowed: frozenset[str]) -> list[TokenSpan]:
    """The rendered prompt's tokens: the whole text at once, as transformers' ``apply_chat_template``
    encodes it (a token may span a content's edge, ".<" in InternLM 2's; a normalizer's "▁" comes
    once, not before each content), unless a content spells one of the template's special tokens.
    Then each stretch (:func:`_segments`) is encoded alone, the contents as plain text, so that no
    message ends its turn early."""
    whole = tokenizer.encode_with_offsets(text, allowed_special=allowed, disallowed_special=(),
                                          add_special_tokens=False)
    contents = [(start, end) for start, end, owner in stretches if owner is not None]
    if not any(span.special and any(a <= span.char_start < b for a, b in contents) for span in whole):
        return whole
    spans: list[TokenSpan] = []
    byte_at = 0
    for start, end, owner in stretches:
        spans += _encode_segment(tokenizer, text, start, end, allowed if owner is None else frozenset(), byte_at)
        byte_at += len(text[start:end].encode("utf-8"))
    return spans


def _segments(length: int, places: list[tuple[int, int] | None]) -> list[tuple[int, int, int | None]]:
    """Cut ``[0, length)`` into the template's stretches (owner None) and each located message's content.

    A content whose place overlaps an earlier one (a fallback search gone wrong) loses its place.
    """
    out: list[tuple[int, int, int | None]] = []
    cursor = 0
    for index, place in sorted(((i, p) for i, p in enumerate(places) if p is not None), key=lambda item: item[1]):
        start, end = place
        if start < cursor:
            places[index] = None
            continue
        out += [(cursor, start, None), (start, end, index)]
        cursor = end
    out.append((cursor, length, None))
    return out


def count_chat(tokenizer: Tokenizer, messages: Sequence[Message], choice: str, config: Mapping[str, Any] | None, *,
               add_generation_prompt: bool = False, max_chars: int, seconds: float) -> ChatCount:
    """Render ``messages`` with template ``choice`` and encode the result (see the module docstring)."""
    source, declared = template_source(choice, config)
    tokenizer = with_chat_tokens(tokenizer, config)
    settings = chat_settings(config)
    tokens = {name: settings.get(name) if isinstance(settings.get(name), str) else ""
              for name in ("bos_token", "eos_token", "pad_token")}
    plain = [{"role": m.role, "content": m.content} for m in messages]
    marked = [{"role": m.role, "content": f"\ue000{i}\ue001"} for i, m in enumerate(messages)]
    common = {"add_generation_prompt": add_generation_prompt, **tokens}
    try:
        text, marked_text = render(source, [{"messages": plain, **common}, {"messages": marked, **common}],
                                   seconds=seconds, max_chars=max_chars + TEMPLATE_SLACK)
    except ChatTemplateError as exc:
        raise TemplateRefused(str(exc)) from None
    have = tokenizer.special_tokens
    # The template's special tokens: the ones it declares, those of this tokenizer its source
    # spells, and its bos/eos/pad tokens. Only these are special in the template's own text.
    allowed = frozenset(t for t in (*declared, *tokens.values()) if t in have)
    allowed |= frozenset(t for t in have if t and t in source)
    places = _locate(text, marked_text, messages)
    stretches = _segments(len(text), places)  # drops a place that overlaps an earlier one
    spans = _encode_prompt(tokenizer, text, stretches, allowed)
    counts = [0] * len(messages)
    starts = [start for start, _, _ in stretches]
    for span in spans:  # each token counts for the stretch it starts in
        owner = stretches[bisect_right(starts, span.char_start) - 1][2]
        if owner is not None:
            counts[owner] += 1
    for index, message in enumerate(messages):
        if places[index] is None:  # not found in the prompt: its own tokens, counted alone
            counts[index] = len(tokenizer.encode(message.content, disallowed_special=(), add_special_tokens=False))
    return ChatCount(text, spans, counts, [t for t in declared if t not in have], tokenizer)


__all__ = ["BUILTINS", "MAX_MESSAGES", "MAX_TEMPLATE_CHARS", "TOKENIZER_TEMPLATE", "ChatCount", "ChatError", "Message",
           "TemplateRefused", "count_chat", "parse_messages", "template_choices", "template_source"]
