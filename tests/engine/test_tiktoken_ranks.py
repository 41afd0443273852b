"""The npm ``js-tiktoken`` rank tables and the preset catalogue, against tiktoken itself.

The parser tests use small hand-made tables and need nothing downloaded. The parity tests read
the real tables from ``$TOKENFORGE_TEST_PRESETS_DIR`` (``scripts/test.sh`` fills it once with
``tokenforge presets install --dir``) and skip cleanly without it. They build tiktoken's own
encoding from tiktoken's own definitions (``tiktoken_ext.openai_public``, its download swapped for
the same ranks) and compare ids one for one on multilingual text.
"""

from __future__ import annotations

import base64
import json

import pytest

from engine.errors import FormatError
from engine.formats.js_tiktoken import parse_rank_table
from engine.formats.tiktoken import build_tiktoken
from engine.presets import TIKTOKEN_ENCODINGS
from tests.preset_tables import presets_dir
from tests.shared_data import CS336

MULTILINGUAL = [
    "Hello, world! It's a test: we'll see if they're right; I've said I'd go.",
    "Grüße aus München: Äpfel, Öl und Übermut kosten 12,50 €.",
    "L'été dernier, nous sommes allés à l'île — c'était très agréable.",
    "Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "我们今天学习分词器。機械学習は楽しいです。ひらがなとカタカナ。",
    "안녕하세요, 토크나이저를 테스트합니다.",
    "مرحبا بالعالم، هذا اختبار للمقسم.",
    "नमस्ते दुनिया, यह एक परीक्षण है।",
    "Emoji 🤖🎉👍🏽 and flags 🇫🇷 and ZWJ 👩‍💻.",
    "def f(x):\n\treturn x**2  # squares\n\n\n    if x >= 10_000: print(f'{x:,}')\r\n",
    "Numbers 1234567890 3.14159 2024-01-31 and CAPS LOCK WORDS AND MiXeD cAsE.",
    "   leading spaces, trailing spaces   \n\n\nand many newlines\n \n\t\t tabs ",
    "URL https://example.com/a/b?c=d&e=f#g, e-mail someone@example.org, path /usr/local/bin/",
    "<|endoftext|> is text here, and so are <|fim_prefix|> and <|endofprompt|>.",
    "DON'T WON'T He'S THEY'RE — apostrophes ’curly’ and 'straight'.",
]


def js_table(specials: dict[str, int], runs: list[tuple[int, list[bytes]]]) -> str:
    """A table in the package's format: one line per run of consecutive ranks."""
    lines = [f"{chr(33 + i)} {start} " + " ".join(base64.b64encode(t).decode() for t in tokens)
             for i, (start, tokens) in enumerate(runs)]
    body = {"pat_str": "ignored", "special_tokens": specials, "bpe_ranks": "\n".join(lines)}
    return "export default " + json.dumps(body) + ";"


# The parser, on hand-made tables ------------------------------------------------------------

def test_runs_number_their_tokens_from_the_first_rank() -> None:
    text = js_table({"<|end|>": 9}, [(0, [b"a", b"b"]), (5, [b"ab", b"\xff\x00"])])
    table = parse_rank_table(text, source="tiny.js")
    assert [(token, rank) for token, rank, _ in table.entries] == [(b"a", 0), (b"b", 1), (b"ab", 5), (b"\xff\x00", 6)]
    assert [line for _, _, line in table.entries] == [1, 1, 2, 2]
    assert table.special_tokens == {"<|end|>": 9}
    assert table.ranks() == {b"a": 0, b"b": 1, b"ab": 5, b"\xff\x00": 6}


@pytest.mark.parametrize(("text", "message"), [
    pytest.param('module.exports = {"bpe_ranks": ""}', "starts with 'export default'", id="not-an-es-module"),
    pytest.param("export default {bpe_ranks: 1};", "not a JSON object", id="javascript-not-json"),
    pytest.param('export default {"bpe_ranks": 7};', '"bpe_ranks" string', id="ranks-not-a-string"),
    pytest.param('export default {"bpe_ranks": "! x YQ=="};', "first rank must be a non-negative integer",
                 id="bad-first-rank"),
    pytest.param('export default {"bpe_ranks": "! 0"};', "a key, a first rank and tokens", id="empty-run"),
    pytest.param('export default {"bpe_ranks": "! 0 YQ== %%%"};', "is not valid base64", id="bad-base64"),
    pytest.param('export default {"bpe_ranks": "! 0 YQ== Yg==\\n\\" 1 Yw=="};', "The rank 1 is used twice",
                 id="overlapping-runs"),
    pytest.param('export default {"bpe_ranks": "! 0 YQ== YQ=="};', "appears twice", id="duplicate-token"),
    pytest.param('export default {"bpe_ranks": "! 0 YQ==", "special_tokens": {"<|x|>": -1}};',
                 "non-negative integer id", id="negative-special"),
    pytest.param('export default {"bpe_ranks": ""};', "holds no tokens", id="no-tokens"),
])
def test_malformed_tables_are_refused_with_the_reason(text: str, message: str) -> None:
    with pytest.raises(FormatError, match=message.replace("(", r"\(")) as caught:
        parse_rank_table(text, source="bad.js")
    assert "bad.js" in str(caught.value)


def test_a_hand_made_table_encodes_as_tiktoken_does() -> None:
    tiktoken = pytest.importorskip("tiktoken")
    # 256 single bytes in a scrambled order, then merges whose ranks tiktoken must respect.
    singles = [bytes([b]) for b in range(256)]
    singles = singles[128:] + singles[:128]
    merged = [b"th", b"he", b"the", b" t", b" the", b"in", b"ing", b" th"]
    text = js_table({"<|endoftext|>": 300}, [(0, singles), (256, merged)])
    table = parse_rank_table(text)
    ours = build_tiktoken(table.entries, pattern="gpt2", special_tokens=table.special_tokens)
    theirs = tiktoken.Encoding(name="tiny", pat_str=TIKTOKEN_ENCODINGS["r50k_base"].pat_str,
                               mergeable_ranks=table.ranks(), special_tokens=table.special_tokens)
    sample = "the theme thing: the thin bathing<|endoftext|> sing, THE the"
    assert ours.encode(sample, allowed_special="all") == theirs.encode(sample, allowed_special="all")
    assert ours.encode(" the") == [260] == theirs.encode(" the")


# The catalogue, against tiktoken's definitions -----------------------------------------------

def tiktoken_definition(name: str, ranks: dict[bytes, int], monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """tiktoken's own constructor arguments for ``name``, with ``ranks`` in place of its download."""
    openai_public = pytest.importorskip("tiktoken_ext.openai_public")
    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", lambda *args, **kwargs: ranks)
    definition: dict[str, object] = getattr(openai_public, name)()
    return definition


def texts() -> list[str]:
    extra = [CS336 / "german.txt", CS336 / "address.txt", CS336 / "tinystories_sample.txt"]
    return MULTILINGUAL + [p.read_text(encoding="utf-8") for p in extra if p.is_file()]


@pytest.mark.parametrize("name", list(TIKTOKEN_ENCODINGS))
def test_each_preset_matches_tiktoken_id_for_id(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    tiktoken = pytest.importorskip("tiktoken")
    folder = presets_dir()
    table = parse_rank_table((folder / f"{name}.js").read_text(encoding="utf-8"), source=f"{name}.js")
    definition = tiktoken_definition(name, table.ranks(), monkeypatch)
    encoding = TIKTOKEN_ENCODINGS[name]
    assert encoding.pat_str == definition["pat_str"]
    assert dict(encoding.special_tokens) == definition["special_tokens"]
    theirs = tiktoken.Encoding(**definition)  # type: ignore[arg-type]
    ours = build_tiktoken(table.entries, pattern=encoding.pattern, special_tokens=encoding.special_tokens)
    assert ours.vocab_size == theirs.n_vocab
    for text in texts():
        expected = theirs.encode(text, allowed_special="all")
        assert ours.encode(text, allowed_special="all") == expected, text[:60]
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text), text[:60]
        assert ours.decode(expected) == text


def test_known_ids() -> None:
    """A few ids anyone can check against the published tokenizers (tiktokenizer, OpenAI's docs)."""
    folder = presets_dir()
    built = {name: build_tiktoken(parse_rank_table((folder / f"{name}.js").read_text(encoding="utf-8")).entries,
                                  pattern=e.pattern, special_tokens=e.special_tokens)
             for name, e in TIKTOKEN_ENCODINGS.items() if name in ("r50k_base", "cl100k_base")}
    assert built["r50k_base"].encode("hello world") == [31373, 995]
    assert built["cl100k_base"].encode("hello world") == [15339, 1917]
    assert built["cl100k_base"].encode("<|endoftext|>", allowed_special="all") == [100257]


# Reading rank files: every merge tiktoken can make ------------------------------------------

_LETTERS = r"[a-z]+| "


def _tiktoken_and_ours(tokens: list[bytes]) -> tuple[object, object]:
    tiktoken = pytest.importorskip("tiktoken")
    ranks = {bytes([b]): b for b in range(256)} | {t: 256 + i for i, t in enumerate(tokens)}
    theirs = tiktoken.Encoding(name="hand-made", pat_str=_LETTERS, mergeable_ranks=ranks, special_tokens={})
    return theirs, build_tiktoken([(t, r, 1) for t, r in ranks.items()], pattern=_LETTERS)


def test_a_merge_of_parts_ranked_after_their_token_is_read() -> None:
    """tiktoken makes "aac" (257) of "aa" (260) and "c": parts need not rank before their token.
    Reading only the cut that lower ranks make (tiktoken's educational code) gave "aa", "c" here."""
    theirs, ours = _tiktoken_and_ours([b"cba", b"aac", b"abca", b"bacb", b"aa"])
    assert theirs.encode_ordinary("baacabbbb") == [98, 257, 97, 98, 98, 98, 98]  # type: ignore[attr-defined]
    assert ours.encode_ordinary("baacabbbb") == [98, 257, 97, 98, 98, 98, 98]  # type: ignore[attr-defined]


def test_a_token_no_two_tokens_make_is_read_and_found_whole() -> None:
    """Llama 3's ".:.:" (rank 100421) is such a token: it was refused; tiktoken gives it for a
    pre-token that is exactly it (its first lookup), and so do we."""
    theirs, ours = _tiktoken_and_ours([b"xyz"])
    for text in ["xyz", "xyzx", "axyz", "xy z"]:
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text), text  # type: ignore[attr-defined]
    assert ours.encode_ordinary("xyz") == [256]  # type: ignore[attr-defined]


def test_random_rank_files_read_as_tiktoken_encodes() -> None:
    """300 small random rank files over "abc", 100 random words each, against tiktoken itself."""
    import random

    rng = random.Random(7)
    for _ in range(300):
        tokens: list[bytes] = []
        while len(tokens) < rng.randint(3, 8):
            token = "".join(rng.choice("abc") for _ in range(rng.randint(2, 4))).encode()
            if token not in tokens and len(token) > 1:
                tokens.append(token)
        theirs, ours = _tiktoken_and_ours(tokens)
        for _ in range(100):
            word = "".join(rng.choice("abc") for _ in range(rng.randint(1, 9)))
            assert ours.encode_ordinary(word) == theirs.encode_ordinary(word), (tokens, word)  # type: ignore[attr-defined]
