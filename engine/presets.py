"""Presets assemble pipeline components into the tokenizers people know; they add no logic.

Also here: the catalogue of OpenAI's encodings (:data:`TIKTOKEN_ENCODINGS`), their patterns and
special tokens written as tiktoken defines them, and the catalogue of open models whose
``tokenizer.json`` the presets use as it is (:data:`OPEN_MODELS`). Neither kind of file is shipped: the
web app's ``tokenforge presets install`` fetches them (``webapp/tokenizers/preset_install.py`` and
``open_install.py``); ``engine.formats.tiktoken.build_tiktoken`` turns ranks plus an entry of the
catalogue into a tokenizer, and an open model's file loads like any ``tokenizer.json``.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from engine.decoders import ByteLevelDecoder
from engine.models.bpe import BPE
from engine.pretokenizers import PATTERNS, PreTokenizer, get_pretokenizer
from engine.tokenizer import Tokenizer


def byte_level_bpe(
    vocab: Mapping[int, bytes],
    merges: Sequence[tuple[bytes, bytes]],
    *,
    pretokenizer: str | PreTokenizer = "gpt2",
    special_tokens: Mapping[str, int] | None = None,
    name: str = "",
    ignore_merges: bool = False,
) -> Tokenizer:
    """A GPT-2/GPT-4 style tokenizer. Special-token ids may appear in ``vocab``; they are taken out
    of the model, which only ever produces byte tokens. ``ignore_merges``: see ``models/bpe.py``."""
    specials = dict(special_tokens or {})
    special_ids = set(specials.values())
    model = BPE({i: b for i, b in vocab.items() if i not in special_ids}, merges, ignore_merges=ignore_merges)
    pre = get_pretokenizer(pretokenizer) if isinstance(pretokenizer, str) else pretokenizer
    return Tokenizer(model, pre_tokenizer=pre, special_tokens=specials, decoder=ByteLevelDecoder(), name=name)


# The encodings of OpenAI's models, as tiktoken defines them (tiktoken_ext/openai_public.py):
# the split pattern and the special tokens live in code, the mergeable ranks in a file.
ENDOFTEXT = "<|endoftext|>"
FIM_PREFIX = "<|fim_prefix|>"
FIM_MIDDLE = "<|fim_middle|>"
FIM_SUFFIX = "<|fim_suffix|>"
ENDOFPROMPT = "<|endofprompt|>"
# The chat markers of OpenAI's chat models. tiktoken's published encodings leave them out, so
# they are not special tokens of the presets, whose plain encode stays tiktoken's; only a chat
# count adds them (webapp/chat/chat_tokens.py). Their ids are those Tiktokenizer
# (dqbd/tiktokenizer, src/models/tokenizer.ts) gives them for gpt-3.5-turbo and gpt-4 (cl100k)
# and gpt-4o (o200k); tiktoken's README extends cl100k_base with the same <|im_start|> and
# <|im_end|> ids.
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
IM_SEP = "<|im_sep|>"


@dataclass(frozen=True, slots=True)
class TiktokenEncoding:
    """One of OpenAI's encodings: what ``tiktoken.Encoding`` takes besides the ranks."""

    name: str  # tiktoken's name for it
    title: str  # what people call it
    pattern: str  # a key of engine.pretokenizers.PATTERNS: tiktoken's pat_str, byte for byte
    special_tokens: Mapping[str, int]
    # Added to special_tokens only where a chat is rendered (webapp/chat), never to the preset itself.
    chat_special_tokens: Mapping[str, int] = field(default_factory=dict)

    @property
    def pat_str(self) -> str:
        """The split regex, as tiktoken spells it."""
        return PATTERNS[self.pattern]


TIKTOKEN_ENCODINGS: dict[str, TiktokenEncoding] = {
    e.name: e for e in (
        TiktokenEncoding("r50k_base", "GPT-2 (r50k_base)", "gpt2", {ENDOFTEXT: 50256}),
        TiktokenEncoding("p50k_base", "Codex (p50k_base)", "gpt2", {ENDOFTEXT: 50256}),
        TiktokenEncoding("cl100k_base", "GPT-4 (cl100k_base)", "gpt4",
                         {ENDOFTEXT: 100257, FIM_PREFIX: 100258, FIM_MIDDLE: 100259, FIM_SUFFIX: 100260,
                          ENDOFPROMPT: 100276},
                         chat_special_tokens={IM_START: 100264, IM_END: 100265, IM_SEP: 100266}),
        TiktokenEncoding("o200k_base", "GPT-4o (o200k_base)", "o200k", {ENDOFTEXT: 199999, ENDOFPROMPT: 200018},
                         chat_special_tokens={IM_START: 200264, IM_END: 200265, IM_SEP: 200266}),
    )
}


@dataclass(frozen=True, slots=True)
class OpenModel:
    """An open model whose published ``tokenizer.json`` (and ``tokenizer_config.json``) is a preset."""

    name: str  # the preset's key: a folder name under the installed presets, and the row's ``preset``
    title: str  # what people call it


OPEN_MODELS: dict[str, OpenModel] = {
    m.name: m for m in (
        OpenModel("llama2", "Llama 2"),
        OpenModel("llama3", "Llama 3"),
        OpenModel("gemma3", "Gemma 3"),
        OpenModel("qwen3", "Qwen 3"),
        OpenModel("deepseek_v3", "DeepSeek V3"),
        OpenModel("gptoss", "gpt-oss"),
        OpenModel("mistral_nemo", "Mistral NeMo"),
        OpenModel("command_r_plus", "Command R+"),
    )
}
