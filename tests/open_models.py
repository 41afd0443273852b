"""The open models' real ``tokenizer.json`` and ``tokenizer_config.json`` for tests, or a clean skip.

``scripts/test.sh`` writes them once, checked against the hashes pinned in
``webapp/tokenizers/open_install.py``, with ``tokenforge presets install --dir`` and exports
``$TOKENFORGE_TEST_OPEN_MODELS_DIR``, laid out as ``<dir>/<name>/tokenizer.json`` and
``<dir>/<name>/tokenizer_config.json`` for the names of :data:`OPEN_MODEL_NAMES`. Nothing downloads
at test time. Without the variable (or the file), the test that asks skips, saying how to get it. Other real
files, which no preset uses (:data:`MORE_MODEL_NAMES`), come the same way from
``tests/fetch_more_models.py`` into ``$TOKENFORGE_TEST_MORE_MODELS_DIR``.

    from tests.open_models import open_model_file
    path = open_model_file("qwen3")                            # .../qwen3/tokenizer.json
    config = open_model_file("qwen3", "tokenizer_config.json")
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.preset_tables import folder_from_env

OPEN_MODELS_ENV = "TOKENFORGE_TEST_OPEN_MODELS_DIR"
OPEN_MODEL_NAMES = ("llama2", "llama3", "gemma3", "qwen3", "deepseek_v3", "gptoss", "mistral_nemo", "command_r_plus")
MORE_MODELS_ENV = "TOKENFORGE_TEST_MORE_MODELS_DIR"
MORE_MODEL_NAMES = ("llama3_1", "internlm2", "chatglm3", "baichuan2", "gemma", "claude")
"""Real files a team imports that are not presets (``tests/fetch_more_models.py`` pins them)."""
FILES = ("tokenizer.json", "tokenizer_config.json")


def open_models_dir() -> Path:
    """The folder of the open models' real files, or skip the calling test saying how to get it."""
    return folder_from_env(OPEN_MODELS_ENV, "the open/ folder written by `tokenforge presets install --dir DIR`")


def open_model_file(name: str, file: str = "tokenizer.json") -> Path:
    """The path of one real file of the open model ``name`` (a preset's, or one of
    :data:`MORE_MODEL_NAMES`), or skip the calling test."""
    if name not in OPEN_MODEL_NAMES + MORE_MODEL_NAMES or file not in FILES:  # a typo in a test, not a missing cache
        raise ValueError(f"Ask for one of {', '.join(OPEN_MODEL_NAMES + MORE_MODEL_NAMES)} and one of "
                         f"{', '.join(FILES)}, not {name!r} and {file!r}.")
    if name in MORE_MODEL_NAMES:
        folder = folder_from_env(MORE_MODELS_ENV, "the folder written by `python -m tests.fetch_more_models DIR`")
        how = "python -m tests.fetch_more_models DIR"
    else:
        folder, how = open_models_dir(), "tokenforge presets install --dir DIR"
    path = folder / name / file
    if not path.is_file():
        pytest.skip(f"{path} is missing; run scripts/test.sh (or `{how}`) again")
    return path
