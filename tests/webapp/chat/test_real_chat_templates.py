"""The real models' own chat templates count the ids transformers' ``apply_chat_template`` gives.

Each model's real ``tokenizer.json`` and ``tokenizer_config.json`` (``tests/open_models.py``: the
presets' and the other files teams import), a chat in several scripts, with and without the
reply opened. transformers reads the config's bos/eos/pad tokens as special tokens, renders the
template and encodes the whole prompt; so must the chat counter.
"""

from __future__ import annotations

import json

import pytest

from engine import Tokenizer
from engine.formats.transformers_config import read_chat_settings
from tests.open_models import open_model_file
from webapp.chat.chat import TOKENIZER_TEMPLATE, Message, count_chat

transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.slow

MODELS = ["llama3", "gemma3", "qwen3", "deepseek_v3", "llama3_1", "internlm2", "command_r_plus", "mistral_nemo",
          "chatglm3"]
CHAT = [{"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Hello, who are you? 人工智能是计算机科学"},
        {"role": "assistant", "content": "A model. 🔆 Ça va ?"},
        {"role": "user", "content": "Count: 1234\n\tdef f(x): return x"}]


@pytest.mark.parametrize("name", MODELS)
def test_the_models_own_template_counts_transformers_ids(name: str) -> None:
    document = open_model_file(name).read_text(encoding="utf-8")
    config_text = open_model_file(name, "tokenizer_config.json").read_text(encoding="utf-8")
    config = json.loads(config_text)
    ours = Tokenizer.from_json(document)
    named = {key: value["content"] if isinstance(value, dict) else value for key, value in config.items()
             if key in ("bos_token", "eos_token", "pad_token", "unk_token")}
    hf = transformers.PreTrainedTokenizerFast(tokenizer_file=str(open_model_file(name)),
                                              chat_template=config["chat_template"], **named)
    messages = [Message(m["role"], m["content"]) for m in CHAT]
    for opened in (False, True):
        expected = hf.apply_chat_template(CHAT, tokenize=True, add_generation_prompt=opened)
        expected = list(expected["input_ids"] if hasattr(expected, "keys") else expected)
        chat = count_chat(ours, messages, TOKENIZER_TEMPLATE, {"chat": read_chat_settings(config_text)},
                          add_generation_prompt=opened, max_chars=100_000, seconds=10.0)
        assert chat.ids == expected, (name, opened, chat.text[:200])
        assert chat.total - chat.overhead == sum(chat.message_counts) <= chat.total
