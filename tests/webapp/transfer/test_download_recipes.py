"""Every loading recipe the zip's README prints runs, and gives our ids (issue 24, item 4).

transformers 5 turned two printed recipes into silent failures (``GPT2TokenizerFast(vocab_file=…)``
built a vocabulary of one and returned ``[]``), so reading the README is not enough: each fenced
```` ```python ```` block is run as its user would, in a subprocess, with one added line that prints
the ids of :data:`SAMPLE`.

Each block runs in a folder holding only the files its section names (the ``## vocab.json +
merges.txt`` recipes see vocab.json and merges.txt, nothing else): in the whole unzipped folder a
``from_pretrained(".")`` recipe would read tokenizer.json and pass even with its own files broken.
"""

from __future__ import annotations

import ast
import io
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from engine import Tokenizer
from tests.open_models import open_model_file
from tests.webapp.playground_samples import byte_bpe, unigram, wordpiece
from webapp.transfer import downloads

pytestmark = pytest.mark.slow  # about a dozen interpreters, half of them importing transformers

# Plain enough for every format to mean the same by it: no special token (tiktoken refuses one by
# default) and no accent or CJK ideograph (vocab.txt recipes add BERT's normalizer, which strips and
# splits them, as the README says); the merges, subwords and unknown characters are all exercised.
SAMPLE = "Hello worlds! the cats, unables the world 👋"

LIBRARIES = ("tokenizers", "transformers", "tiktoken", "sentencepiece")


def recipes(readme: str) -> list[tuple[str, str]]:
    """(section heading, code) for every fenced python block of ``readme``, in order."""
    out = []
    for section in re.split(r"^(?=## )", readme, flags=re.MULTILINE):
        heading = section.splitlines()[0] if section.startswith("## ") else ""
        out += [(heading, code) for code in re.findall(r"^```python\n(.*?)^```$", section, re.MULTILINE | re.DOTALL)]
    return out


def last_assignment(code: str) -> tuple[int, str]:
    """(line number, name) of the last name ``code`` assigns: its tokenizer (tok, enc, sp)."""
    names = [(node.lineno, target.id) for node in ast.walk(ast.parse(code)) if isinstance(node, ast.Assign)
             for target in node.targets if isinstance(target, ast.Name)]
    if not names:
        raise ValueError(f"This recipe assigns no tokenizer to a name:\n{code}")
    return max(names)


def probe(code: str) -> str:
    """``code`` plus a line printing the ids of SAMPLE from the tokenizer it last assigns."""
    name = last_assignment(code)[1]
    # an Encoding (tokenizers) has .ids; transformers, tiktoken and sentencepiece return the list itself
    return (f"{code}\nimport json as _json\n_out = {name}.encode({SAMPLE!r})\n"
            f"print(_json.dumps(list(getattr(_out, 'ids', _out))))\n")


def run_recipe(code: str, folder: Path, home: Path) -> list[int]:
    """Run ``probe(code)`` in ``folder`` and return the ids it printed, or fail with its stderr."""
    # TMPDIR: the libraries' caches (tiktoken keeps files it loaded in the temporary folder) are this test's own.
    home.mkdir(exist_ok=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HOME": str(home), "TMPDIR": str(home),
           "TRANSFORMERS_VERBOSITY": "error", "PYTHONWARNINGS": "ignore"}
    done = subprocess.run([sys.executable, "-c", probe(code)], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    if done.returncode != 0:
        pytest.fail(f"The recipe failed in {sorted(p.name for p in folder.iterdir())}:\n{code}\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize(("sample", "sections"), [
    (byte_bpe, ["tokenizer.json", "tokenizer.json", "vocab.json", "vocab.json", "ranks.tiktoken"]),
    (wordpiece, ["tokenizer.json", "tokenizer.json", "vocab.txt", "vocab.txt"]),
    (unigram, ["tokenizer.json", "tokenizer.json", "tokenizer.model"]),
], ids=["byte-bpe", "wordpiece", "unigram"])
def test_every_readme_recipe_gives_our_ids(tmp_path: Path, sample: Callable[[], Tokenizer],
                                           sections: list[str]) -> None:
    _check_every_recipe(sample(), sections, tmp_path)


@pytest.mark.parametrize(("name", "sections"), [
    ("llama2", ["tokenizer.json", "tokenizer.json"]),  # sentencepiece-style BPE, <s> added by its template
    ("llama3", ["tokenizer.json", "tokenizer.json", "ranks.tiktoken"]),  # ignore_merges, a rank file too
])
def test_an_open_models_recipes_give_our_ids(tmp_path: Path, name: str, sections: list[str]) -> None:
    tok = Tokenizer.from_file(open_model_file(name))
    tok.name = name
    _check_every_recipe(tok, sections, tmp_path)


def _check_every_recipe(tok: Tokenizer, sections: list[str], tmp_path: Path) -> None:
    """Run every recipe of ``tok``'s zip, each with only the files its section names, and compare
    the ids with ours; ``sections`` are the recipes' files, in order (none lost, none unrun)."""
    for library in LIBRARIES:
        pytest.importorskip(library)
    unzipped = tmp_path / "zip"
    with zipfile.ZipFile(io.BytesIO(downloads.zip_all(tok, tok.name))) as archive:
        archive.extractall(unzipped)
    found = recipes((unzipped / "README.md").read_text(encoding="utf-8"))
    assert [heading.split()[1] for heading, _ in found] == sections
    ours = tok.encode(SAMPLE)
    got = {}
    for n, (heading, code) in enumerate(found):
        folder = tmp_path / f"recipe-{n}"
        folder.mkdir()
        named = set(heading.split()) & {p.name for p in unzipped.iterdir()}
        for filename in named:
            shutil.copy(unzipped / filename, folder / filename)
        label = f"{n}: {code.splitlines()[last_assignment(code)[0] - 1].strip()}"
        got[label] = run_recipe(code, folder, tmp_path / "hf-home")
    assert got == {label: ours for label in got}


def test_the_ids_compared_are_worth_comparing() -> None:
    """SAMPLE reaches merges, subwords, [CLS]/[SEP] and unknown pieces, not just single characters."""
    assert byte_bpe().encode(SAMPLE) == [72, 101, 108, 108, 111, 259, 114, 108, 100, 115, 33, 32, 257, 32, 99, 97,
                                         116, 115, 44, 32, 117, 110, 97, 98, 108, 101, 115, 32, 257, 259, 114, 108,
                                         100, 32, 240, 159, 145, 139]
    assert wordpiece().encode(SAMPLE) == [2, 4, 5, 8, 9, 1, 1, 1, 6, 7, 8, 1, 5, 1, 3]
    assert unigram().encode(SAMPLE) == [2, 0, 5, 0, 2, 0, 7, 0, 1, 6, 7, 0, 2, 0, 8, 0, 5, 7, 1, 2, 0, 2, 0]


def test_the_tiktoken_recipe_reads_each_download_afresh(tmp_path: Path) -> None:
    """Two downloads unzipped in turn at the same place: the second recipe gives the second
    tokenizer's ids. tiktoken's ``load_tiktoken_bpe("ranks.tiktoken")``, which the README printed
    before, kept the first file under its path and gave the first tokenizer's ids."""
    pytest.importorskip("tiktoken")
    folder, home = tmp_path / "downloads", tmp_path / "home"
    for tok in (byte_bpe(), byte_bpe("other", merges=[(b"e", b"s"), (b"h", b"e")])):
        with zipfile.ZipFile(io.BytesIO(downloads.zip_all(tok, tok.name))) as archive:
            archive.extractall(folder)
        code = next(code for heading, code in recipes((folder / "README.md").read_text(encoding="utf-8"))
                    if "tiktoken" in heading)
        assert run_recipe(code, folder, home) == tok.encode(SAMPLE)
