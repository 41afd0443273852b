"""Options per level (issue 24, finding 9): byte-level BPE's form and job page do not show the
char level's "End of word suffix" and "Unk token", nor the spm level's options, and the other way round."""

from __future__ import annotations

import dataclasses
import html
import re

import pytest
from flask.testing import FlaskClient

from engine.trainers import option_specs
from engine.trainers.bpe import BpeOptions
from engine.trainers.bpe_spm_options import SpmBpeOptions
from tests.webapp.conftest import add_small_corpus, default_form
from webapp.tokenizers.levels import LEVEL_OPTIONS, shown_options
from webapp.training.form import PREFIX, fields_for

CHAR_ONLY = {"end_of_word_suffix", "unk_token"}
SPM_ONLY = {"character_coverage", "byte_fallback", "split_digits"}


def hidden_fields(algorithm: str, level: str | None) -> set[str]:
    form = None if level is None else {PREFIX + "level": level}
    return {field.spec.name for field in fields_for(algorithm, form) if not field.shown}


@pytest.mark.parametrize("level, hidden", [
    pytest.param(None, CHAR_ONLY | SPM_ONLY, id="default-byte"),
    pytest.param("byte", CHAR_ONLY | SPM_ONLY, id="byte"),
    pytest.param("char", SPM_ONLY, id="char"),
    pytest.param("spm", CHAR_ONLY | {"special_tokens", "min_frequency", "pretokenizer", "max_token_length"}, id="spm"),
    pytest.param("word", set(), id="bad-level-shows-all"),
])
def test_bpe_fields_show_per_level(level: str | None, hidden: set[str]) -> None:
    assert hidden_fields("bpe", level) == hidden


def test_other_algorithms_show_every_field() -> None:
    assert hidden_fields("wordpiece", None) == set()


def test_the_level_table_matches_the_engines_options() -> None:
    """Each level's trainer reads exactly the options the table gives it, so the table cannot drift."""
    names = {spec.name for spec in option_specs("bpe")}
    table = LEVEL_OPTIONS["bpe"]
    assert set(table) <= names
    bpe = {f.name for f in dataclasses.fields(BpeOptions)}
    spm = {f.name for f in dataclasses.fields(SpmBpeOptions)}
    assert {name for name in names if name not in table or "spm" in table[name]} == spm
    assert {name for name in names if name not in table or "byte" in table[name]} == bpe - CHAR_ONLY
    assert {name for name in names if name not in table or "char" in table[name]} == bpe


def test_shown_options_keep_only_the_levels_own() -> None:
    byte = dataclasses.asdict(BpeOptions())
    assert set(byte) - set(shown_options("bpe", byte)) == CHAR_ONLY
    char = dataclasses.asdict(BpeOptions(level="char"))
    assert shown_options("bpe", char) == char
    assert shown_options("extend", {"base_id": 3}) == {"base_id": 3}  # no table: all of them
    assert shown_options("bpe", None) == {}


def test_the_train_page_hides_and_disables_other_levels_fields(client: FlaskClient) -> None:
    page = client.get("/train?algorithm=bpe").get_data(as_text=True)
    wrapper = re.search(r'<div data-levels="char" hidden data-testid="field-end_of_word_suffix">\s*'
                        r'<div class="field">.*?<input type="text" name="opt-end_of_word_suffix"[^>]*>', page, re.S)
    assert wrapper and wrapper.group(0).endswith(' disabled>')
    assert '<div data-levels="byte char" data-testid="field-special_tokens">' in page  # shown at byte level
    assert '<script src="/static/js/train.js" defer></script>' in page


def options_listed(page: str) -> list[str]:
    block = page.split('data-testid="options">', 1)[1].split("</dl>", 1)[0]
    return [html.unescape(label) for label in re.findall(r"<dt>([^<]+)</dt>", block)]


@pytest.mark.parametrize("level, expected", [
    pytest.param("byte", ["Vocab size", "Special tokens", "Min frequency", "Level", "Pretokenizer",
                          "Max token length", "Num workers"], id="byte"),
    pytest.param("char", ["Vocab size", "Special tokens", "Min frequency", "Level", "Pretokenizer",
                          "End of word suffix", "Unk token", "Max token length", "Num workers"], id="char"),
])
def test_the_job_page_lists_the_levels_options(client: FlaskClient, level: str, expected: list[str]) -> None:
    add_small_corpus(client)
    response = client.post("/train", data=default_form("bpe", level=level, vocab_size="300"))
    assert response.status_code == 303, response.get_data(as_text=True)[:500]
    assert options_listed(client.get(response.headers["Location"]).get_data(as_text=True)) == expected
