"""Post-processors: add template tokens such as ``[CLS] $A [SEP]`` around an encoded text.

Only the single-sequence template is supported (the playground encodes one text at a time);
pair templates (``$B``) are read from files but the second sequence is never filled. Files name
``TemplateProcessing``, ``BertProcessing``, ``RobertaProcessing``, ``ByteLevel`` (offsets only)
or a ``Sequence`` of them; each reads as one template or none.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine.errors import ConfigError, FormatError
from engine.limits import MAX_VOCAB_SIZE, shown

MAX_TEMPLATE_PARTS = 64
"""The most parts a template may have (real ones have two to four): each encode adds them."""
MAX_TEMPLATE_IDS = 16
"""The most ids one template token may stand for (real files use one)."""
MAX_SEQUENCE_STEPS = 8
"""The most steps of a ``Sequence`` post-processor (Llama 3.1's has two)."""


class TemplateProcessing:
    """Wrap ids as the template says; ``$A`` stands for the encoded text.

    Each other part of the template is a token whose ids are ``ids[part]`` where given (a file's
    template names its own ids, as Hugging Face reads them: InternLM 2's ``<s>`` is a plain
    vocabulary entry, not an added token), else its id in ``special_tokens``.
    """

    def __init__(self, template: str, special_tokens: Mapping[str, int], *,
                 ids: Mapping[str, Sequence[int]] | None = None) -> None:
        parts = template.split()
        if len(parts) > MAX_TEMPLATE_PARTS:
            raise ConfigError(f"The template has {len(parts)} parts; at most {MAX_TEMPLATE_PARTS} are supported.")
        if parts.count("$A") != 1:
            raise ConfigError(f"The template {template!r} must contain $A exactly once.")
        own = {part: list(ids[part]) for part in parts if ids and part in ids}
        for part in parts:
            if part != "$A" and part not in own and part not in special_tokens:
                raise ConfigError(f"The template token {part!r} is not a special token of this tokenizer.")
        self.template = template
        self._ids = {part: own[part] if part in own else [special_tokens[part]] for part in parts if part != "$A"}
        here = parts.index("$A")
        self._before = [i for part in parts[:here] for i in self._ids[part]]
        self._after = [i for part in parts[here + 1:] for i in self._ids[part]]

    @property
    def added(self) -> tuple[list[int], list[int]]:
        """The ids put before and after the text."""
        return self._before, self._after

    def process(self, ids: list[int]) -> list[int]:
        return self._before + ids + self._after

    def to_hf(self) -> dict[str, Any]:
        single = [
            {"SpecialToken": {"id": p, "type_id": 0}} if p != "$A" else {"Sequence": {"id": "A", "type_id": 0}}
            for p in self.template.split()
        ]
        pair = single + [
            {"SpecialToken": {"id": p, "type_id": 1}} if p != "$A" else {"Sequence": {"id": "B", "type_id": 1}}
            for p in self.template.split()
            if p != self.template.split()[0]
        ]
        return {
            "type": "TemplateProcessing",
            "single": single,
            "pair": pair,
            "special_tokens": {
                name: {"id": name, "ids": ids, "tokens": [name] * len(ids)}
                for name, ids in sorted(self._ids.items(), key=lambda item: item[1])
            },
        }


def post_processor_from_hf(data: dict[str, Any] | None, special_tokens: Mapping[str, int]) -> TemplateProcessing | None:
    """Read a Hugging Face ``post_processor``: what it puts around the ids of one text.

    ``ByteLevel`` only trims offsets (no ids change) and reads as none; a ``Sequence`` (Llama 3.1
    and 3.2: ``ByteLevel`` then a template) reads as its one step that adds ids.
    """
    if data is None:
        return None
    kind = data.get("type")
    if kind == "ByteLevel":
        return None
    if kind == "Sequence":
        steps = data.get("processors")
        if not isinstance(steps, list) or len(steps) > MAX_SEQUENCE_STEPS:
            raise FormatError(f"The Sequence post-processor needs a list of at most {MAX_SEQUENCE_STEPS} processors "
                              "(post_processor.processors).")
        adding = [step for step in (post_processor_from_hf(each, special_tokens) for each in steps) if step]
        if len(adding) > 1:
            raise FormatError("The Sequence post-processor has more than one step that adds tokens "
                              "(post_processor.processors); one template is supported.")
        return adding[0] if adding else None
    if kind == "TemplateProcessing":
        parts = []
        for item in data.get("single", []):
            if "Sequence" in item:
                parts.append("$A")
            elif "SpecialToken" in item:
                parts.append(item["SpecialToken"]["id"])
        return TemplateProcessing(" ".join(parts), special_tokens, ids=_template_ids(data.get("special_tokens")))
    if kind in ("BertProcessing", "RobertaProcessing"):  # each names its tokens as [content, id]
        (cls_token, cls_id), (sep_token, sep_id) = data["cls"], data["sep"]
        return TemplateProcessing(f"{cls_token} $A {sep_token}", special_tokens, ids=_template_ids(
            {cls_token: {"ids": [cls_id]}, sep_token: {"ids": [sep_id]}}))
    raise FormatError(f"The post-processor type {kind!r} is not supported.")


def _template_ids(entries: Any) -> dict[str, list[int]]:
    """A template's own ``special_tokens``: each name's list of ids, checked as read."""
    if entries is None:
        return {}
    if not isinstance(entries, dict):
        raise FormatError("The template's special_tokens (post_processor.special_tokens) must be an object.")
    found = {}
    for name, entry in entries.items():
        ids = entry.get("ids") if isinstance(entry, dict) else None
        if (not isinstance(ids, list) or not ids or len(ids) > MAX_TEMPLATE_IDS
                or not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < MAX_VOCAB_SIZE for i in ids)):
            raise FormatError(f"The template token {shown(name)} (post_processor.special_tokens) needs a list of 1 to "
                              f"{MAX_TEMPLATE_IDS} ids, each from 0 to {MAX_VOCAB_SIZE - 1}, not {shown(ids)}.")
        found[name] = ids
    return found
