"""Special tokens guessed on a GPT-2 import: entries no merge builds that look like ``<|…|>`` are
taken as special when none are named, the rest are reported, and the CLI says so on stderr."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.cli import main
from engine.formats.gpt2 import import_gpt2
from engine.formats.unreachable import choose_specials, looks_special, unreachable
from engine.tokenizer import Tokenizer
from tests.gpt2_samples import EOT, STORY, STORY_IDS, TINY, files
from tests.shared_data import gpt2_files

GUESSED_EOT = ("Taken as special token, since no special tokens were named: '<|endoftext|>' (id 50256); "
               "vocab.json holds it, no merge in merges.txt builds it, and it is written like a special token "
               "(<…> or […]). Name the special tokens to choose others.")


@pytest.mark.parametrize("token", [EOT, "<s>", "</s>", "<unk>", "<pad>", "<mask>", "[CLS]", "[SEP]", "[PAD]",
                                   "[MASK]", "[UNK]", "<|im_start|>", "<extra_id_0>"])
def test_written_like_a_special_token(token: str) -> None:
    assert looks_special(token)


@pytest.mark.parametrize("token", ["<>", "[]", "< s >", "<a b>", "[C LS]", "<<x>>", "[[x]]", "the", "Ġ<s>", "<s>.",
                                   "<s", "CLS]", "<s>\n"])
def test_not_written_like_a_special_token(token: str) -> None:
    assert not looks_special(token)


def test_unreachable_entries_are_neither_bytes_nor_merge_results() -> None:
    vocab = json.loads(TINY[0])
    merges = [(*line.split(" "), n) for n, line in enumerate(TINY[1].split("\n")[:-1], start=1)]
    assert unreachable(vocab, merges) == [EOT, "zz", "[CLS]"]
    choice = choose_specials(vocab, merges)
    assert (choice.tokens, choice.guessed, choice.stranded) == ((EOT, "[CLS]"), ((EOT, 260), ("[CLS]", 262)),
                                                                (("zz", 261),))


def test_import_takes_unreachable_special_looking_entries_as_special() -> None:
    tokenizer, notes = import_gpt2(*TINY)
    assert tokenizer.special_tokens == {EOT: 260, "[CLS]": 262}
    assert tokenizer.encode(f"the[CLS]{EOT}zz", allowed_special="all") == [257, 262, 260, 122, 122]
    assert tokenizer.token_to_id("<s>") == 259 and not tokenizer.is_special(259)  # a merge builds it
    assert tokenizer.encode(EOT, disallowed_special=()) == list(EOT.encode())  # not allowed: its 13 bytes
    assert tokenizer.decode([261]) == "zz"  # the stranded entry stays in the vocabulary
    assert notes == [
        "Taken as special tokens, since no special tokens were named: '<|endoftext|>' (id 260), '[CLS]' (id 262); "
        "vocab.json holds them, no merge in merges.txt builds them, and they are written like a special token "
        "(<…> or […]). Name the special tokens to choose others.",
        "No merge in merges.txt builds 'zz' (id 261), so encoding never gives it; it stays in the vocabulary and "
        "still decodes. If it is a special token, name it among the special tokens.",
    ]


def test_named_special_tokens_are_used_as_given_and_the_rest_reported() -> None:
    tokenizer, notes = import_gpt2(*TINY, special_tokens=["<pad>"])
    assert tokenizer.special_tokens == {"<pad>": 263}
    assert notes == [
        "No merge in merges.txt builds '<|endoftext|>' (id 260), 'zz' (id 261), '[CLS]' (id 262), so encoding "
        "never gives them; they stay in the vocabulary and still decode. Name those that are special tokens "
        "among the special tokens."]


def test_a_file_where_every_entry_is_reachable_has_no_notes() -> None:
    tokenizer, notes = import_gpt2(*files(["t h", "th e"], []))
    assert (tokenizer.special_tokens, notes) == ({}, [])


def test_a_long_note_names_five_and_counts_the_rest() -> None:
    _, notes = import_gpt2(*files([], ["q" * n for n in range(2, 10)]))
    assert notes == [
        "No merge in merges.txt builds 'qq' (id 256), 'qqq' (id 257), 'qqqq' (id 258), 'qqqqq' (id 259), "
        "'qqqqqq' (id 260) and 3 more, so encoding never gives them; they stay in the vocabulary and still "
        "decode. Name those that are special tokens among the special tokens."]


def test_real_gpt2_import_gives_the_presets_ids() -> None:
    vocab_path, merges_path = gpt2_files()
    tokenizer, notes = import_gpt2(vocab_path.read_text(encoding="utf-8"), merges_path.read_text(encoding="utf-8"))
    assert tokenizer.special_tokens == {EOT: 50256}
    assert notes == [GUESSED_EOT]
    assert tokenizer.encode(STORY, allowed_special="all") == STORY_IDS
    assert len(tokenizer.encode(STORY, disallowed_special=())) == 83
    assert tokenizer.encode("Hello world <|endoftext|>", allowed_special="all") == [15496, 995, 220, 50256]


def test_cli_import_notes_the_guessed_special_tokens_on_stderr(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    vocab_text, merges_text = files(["t h", "th e"], [EOT])
    (tmp_path / "vocab.json").write_text(vocab_text, encoding="utf-8")
    (tmp_path / "merges.txt").write_text(merges_text, encoding="utf-8")
    code = main(["import", "--vocab", str(tmp_path / "vocab.json"), "--merges", str(tmp_path / "merges.txt"),
                 "-o", str(tmp_path / "t.json")])
    out, err = capsys.readouterr()
    assert (code, out) == (0, f"Imported 259 tokens; wrote {tmp_path / 't.json'}.\n")
    assert err == ("tokenforge import: note: Taken as special token, since no special tokens were named: "
                   "'<|endoftext|>' (id 258); vocab.json holds it, no merge in merges.txt builds it, and it is "
                   "written like a special token (<…> or […]). Name the special tokens to choose others.\n")
    assert Tokenizer.from_file(tmp_path / "t.json").encode(f"the{EOT}", allowed_special="all") == [257, 258]


def test_cli_import_with_named_special_tokens_prints_no_note(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    vocab_text, merges_text = files(["t h", "th e"], [EOT])
    (tmp_path / "vocab.json").write_text(vocab_text, encoding="utf-8")
    (tmp_path / "merges.txt").write_text(merges_text, encoding="utf-8")
    code = main(["import", "--vocab", str(tmp_path / "vocab.json"), "--merges", str(tmp_path / "merges.txt"),
                 "--special-token", EOT, "-o", str(tmp_path / "t.json")])
    assert (code, capsys.readouterr().err) == (0, "")
