"""Post-processors: add template tokens such as ``[CLS] $A [SEP]`` around an encoded text.

Only the single-sequence template is supported (the playground encodes one text at a time);
pair templates (``$B``) are read from files but the second sequence is never filled.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.errors import ConfigError, FormatError


class TemplateProcessing:
    """Wrap ids as the template says; ``$A`` stands for the encoded text."""

    def __init__(self, template: str, special_tokens: Mapping[str, int]) -> None:
        parts = template.split()
        if parts.count("$A") != 1:
            raise ConfigError(f"The template {template!r} must contain $A exactly once.")
        for part in parts:
            if part != "$A" and part not in special_tokens:
                raise ConfigError(f"The template token {part!r} is not a special token of this tokenizer.")
        self.template = template
        self._before = [special_tokens[p] for p in parts[: parts.index("$A")]]
        self._after = [special_tokens[p] for p in parts[parts.index("$A") + 1:]]
        self._names = {special_tokens[p]: p for p in parts if p != "$A"}

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
                name: {"id": name, "ids": [token_id], "tokens": [name]}
                for token_id, name in sorted(self._names.items())
            },
        }


def post_processor_from_hf(data: dict[str, Any] | None, special_tokens: Mapping[str, int]) -> TemplateProcessing | None:
    """Read a Hugging Face ``post_processor``; ByteLevel (offset trimming only) reads as none."""
    if data is None or data.get("type") == "ByteLevel":
        return None
    kind = data.get("type")
    if kind == "TemplateProcessing":
        parts = []
        for item in data.get("single", []):
            if "Sequence" in item:
                parts.append("$A")
            elif "SpecialToken" in item:
                parts.append(item["SpecialToken"]["id"])
        return TemplateProcessing(" ".join(parts), special_tokens)
    if kind == "BertProcessing":
        cls_token, sep_token = data.get("cls", [None])[0], data.get("sep", [None])[0]
        return TemplateProcessing(f"{cls_token} $A {sep_token}", special_tokens)
    raise FormatError(f"The post-processor type {kind!r} is not supported.")
