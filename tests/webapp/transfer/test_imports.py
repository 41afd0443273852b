"""Imports through the web form: each kind works, and every bad file is a 422 naming the problem."""

from __future__ import annotations

import io
import json

import pytest
from flask import Flask
from flask.testing import FlaskClient

from engine.formats import gpt2 as gpt2_format
from engine.formats import tiktoken as tiktoken_format
from tests.gpt2_samples import STORY, STORY_IDS, TINY
from tests.shared_data import gpt2_files
from tests.webapp.playground_samples import EOT, byte_bpe
from webapp.transfer import imports


def upload(data: bytes | str, name: str) -> tuple[io.BytesIO, str]:
    return io.BytesIO(data.encode() if isinstance(data, str) else data), name


def encode(client: FlaskClient, ref: int, text: str) -> list[int]:
    return client.post("/api/v1/encode", json={"tokenizer": ref, "text": text, "allowed_special": "all"}).json["ids"]


def imported_id(response) -> int:
    assert response.status_code == 303, response.get_data(as_text=True)[:2000]
    return int(response.headers["Location"].split("/")[2])


def test_import_tokenizer_json(client: FlaskClient) -> None:
    response = client.post("/import", data={"kind": "tokenizer_json", "name": "mine",
                                            "file": upload(byte_bpe().to_json(), "tokenizer.json")})
    ref = imported_id(response)
    assert encode(client, ref, f"the wé{EOT}") == [257, 258, 260, 261]
    listed = client.get("/api/v1/tokenizers").json["tokenizers"][0]
    assert listed == {"id": ref, "name": "mine", "algorithm": "bpe", "vocab_size": 262, "source": "imported"}


def test_import_gpt2_vocab_and_merges(client: FlaskClient) -> None:
    tok = byte_bpe()
    response = client.post("/import", data={
        "kind": "gpt2", "pattern": "gpt2", "special_tokens": EOT,
        "vocab": upload(gpt2_format.dumps_vocab(tok), "vocab.json"),
        "merges": upload(gpt2_format.dumps_merges(tok), "merges.txt")})
    ref = imported_id(response)
    assert encode(client, ref, f"the wé{EOT}") == [257, 258, 260, 261]


def test_import_real_gpt2_matches_tiktoken(client: FlaskClient) -> None:
    tiktoken = pytest.importorskip("tiktoken")
    vocab_path, merges_path = gpt2_files()
    response = client.post("/import", data={
        "kind": "gpt2", "pattern": "gpt2", "special_tokens": EOT,
        "vocab": upload(vocab_path.read_bytes(), "vocab.json"), "merges": upload(merges_path.read_bytes(), "merges.txt")})
    ref = imported_id(response)
    from engine.byte_unicode import symbols_to_bytes
    from engine.pretokenizers import PATTERNS

    vocab = json.loads(vocab_path.read_text(encoding="utf-8"))
    enc = tiktoken.Encoding("gpt2-local", pat_str=PATTERNS["gpt2"], special_tokens={EOT: 50256},
                            mergeable_ranks={symbols_to_bytes(t): i for t, i in vocab.items() if t != EOT})
    text = "The playground's tokens: naïve café, 日本語, 🇫🇷 and   spaces\n\n"
    assert encode(client, ref, text) == enc.encode(text)



def test_import_real_gpt2_with_no_special_tokens_named_takes_endoftext(client: FlaskClient) -> None:
    """The Special tokens box left empty: <|endoftext|> is still 50256, so the preset's 76 ids come back."""
    vocab_path, merges_path = gpt2_files()
    response = client.post("/import", data={
        "kind": "gpt2", "pattern": "gpt2", "special_tokens": "",
        "vocab": upload(vocab_path.read_bytes(), "vocab.json"), "merges": upload(merges_path.read_bytes(), "merges.txt")})
    ref = imported_id(response)
    assert encode(client, ref, STORY) == STORY_IDS
    assert encode(client, ref, EOT) == [50256]
    plain = client.post("/api/v1/encode", json={"tokenizer": ref, "text": STORY}).json["ids"]
    assert len(plain) == 83  # not allowed (the default): the ordinary text it spells
    page = client.get(f"/tokenizers/{ref}/play").get_data(as_text=True)
    assert "This tokenizer's special tokens: <code>&lt;|endoftext|&gt;</code>." in page
    assert "Taken as special token, since no special tokens were named: &#39;&lt;|endoftext|&gt;&#39; (id 50256)" in page


def test_read_says_which_tokens_it_took_as_special() -> None:
    notes: list[str] = []
    files = {"vocab": imports.Upload("my-vocab.json", TINY[0].encode()),
             "merges": imports.Upload("my-merges.txt", TINY[1].encode())}
    tokenizer = imports.read("gpt2", files, pattern="gpt2", specials=" \n", notes=notes)
    assert tokenizer.special_tokens == {EOT: 260, "[CLS]": 262}
    assert notes == [
        "Taken as special tokens, since no special tokens were named: '<|endoftext|>' (id 260), '[CLS]' (id 262); "
        "vocab.json holds them, no merge in merges.txt builds them, and they are written like a special token "
        "(<…> or […]). Name the special tokens to choose others.",
        "No merge in merges.txt builds 'zz' (id 261), so encoding never gives it; it stays in the vocabulary and "
        "still decodes. If it is a special token, name it among the special tokens."]
    named: list[str] = []
    assert imports.read("gpt2", files, specials="[CLS], <|endoftext|>", notes=named).special_tokens == {
        "[CLS]": 262, EOT: 260}
    assert named == ["No merge in merges.txt builds 'zz' (id 261), so encoding never gives it; it stays in the "
                     "vocabulary and still decodes. If it is a special token, name it among the special tokens."]

def test_import_tiktoken_with_sidecar_and_vocab_txt(client: FlaskClient) -> None:
    tok = byte_bpe()
    response = client.post("/import", data={
        "kind": "tiktoken", "pattern": "",
        "file": upload(tiktoken_format.dumps_ranks(tok), "tiny.tiktoken"),
        "sidecar": upload(tiktoken_format.dumps_sidecar(tok), "tiny.tiktoken.json")})
    assert encode(client, imported_id(response), "the wé") == [257, 258, 260]
    vocab = "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\nworld\n##s\n"
    response = client.post("/import", data={"kind": "vocab_txt", "lowercase": "on", "file": upload(vocab, "vocab.txt")})
    assert encode(client, imported_id(response), "Hello worlds") == [2, 4, 5, 6, 3]


@pytest.mark.parametrize("data, message", [
    pytest.param({"kind": "tokenizer_json"}, "Choose the tokenizer.json file", id="no-file"),
    pytest.param({"kind": "tokenizer_json", "file": ("{oops", "t.json")}, "The file is not valid JSON", id="bad-json"),
    pytest.param({"kind": "tokenizer_json", "file": (b"\xff\xfe", "t.json")}, "t.json is not UTF-8 text: byte 0 is 0xFF", id="not-utf8"),
    pytest.param({"kind": "tokenizer_json", "file": ('{"model": {"type": "Magic"}}', "t.json")}, "The model type &#39;Magic&#39; is not supported", id="unknown-model"),
    pytest.param({"kind": "gpt2", "pattern": "gpt2", "vocab": ('{"a": 0}', "vocab.json"), "merges": ("a b\n", "merges.txt")}, "vocab.json: The vocabulary lacks the single byte 0x00", id="bad-vocab"),
    pytest.param({"kind": "gpt2", "pattern": "klingon", "vocab": ("{}", "v.json"), "merges": ("", "m.txt")}, "Choose the merges.txt file", id="empty-merges"),
    pytest.param({"kind": "vocab_txt", "file": ("hello\nhello\n", "vocab.txt")}, "line 2: The token &#39;hello&#39; already appeared on line 1", id="duplicate-line"),
    pytest.param({"kind": "vocab_txt", "file": ("hello\n", "vocab.txt")}, "has no [UNK] token", id="no-unk"),
    pytest.param({"kind": "tiktoken", "pattern": "gpt2", "file": ("not base64 at all\n", "r.tiktoken")}, "r", id="bad-ranks"),
    pytest.param({"kind": "magic"}, "Choose what kind of file to import", id="unknown-kind"),
])
def test_bad_imports_are_422_with_the_problem_named(client: FlaskClient, data: dict, message: str) -> None:
    form = {k: upload(*v) if isinstance(v, tuple) else v for k, v in data.items()}
    response = client.post("/import", data=form)
    html = response.get_data(as_text=True)
    assert response.status_code == 422
    error = html.split('data-testid="import-error">', 1)[1].split("</p>", 1)[0]
    assert message in error


def test_import_form_and_escaped_token_names(client: FlaskClient, app: Flask) -> None:
    assert "vocab.json + merges.txt" in client.get("/import").get_data(as_text=True)
    vocab = '[UNK]\n<script>\n"><img onerror=x>\n\u202eevil\n'
    ref = imported_id(client.post("/import", data={"kind": "vocab_txt", "name": "<b>x</b>", "file": upload(vocab, "vocab.txt")}))
    html = client.get(f"/tokenizers/{ref}/vocab").get_data(as_text=True)
    assert "<script>" not in html.split("<main>", 1)[1] and "<img" not in html and "<b>x</b>" not in html
    assert "&lt;script&gt;" in html


# tokenizer_config.json beside tokenizer.json (issue 15, item 1): the chat template and bos/eos/pad.
CHAT_TEMPLATE = "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}{{ eos_token }}{% endfor %}"


def test_import_reads_tokenizer_config_chat_template_and_tokens(client: FlaskClient) -> None:
    config = {"chat_template": [{"name": "tool_use", "template": "{{ 'tools' }}"},
                                {"name": "default", "template": CHAT_TEMPLATE}],
              "bos_token": {"content": EOT, "lstrip": False}, "eos_token": EOT, "pad_token": None,
              "model_max_length": 1024}
    ref = imported_id(client.post("/import", data={
        "kind": "tokenizer_json", "file": upload(byte_bpe().to_json(), "tokenizer.json"),
        "config": upload(json.dumps(config), "tokenizer_config.json")}))
    page = client.get(f"/tokenizers/{ref}/chat").get_data(as_text=True)
    assert '<option value="tokenizer" selected>' in page and "(“default”)" in page
    body = client.post("/api/v1/encode", json={"tokenizer": ref, "template": "tokenizer",
                                               "messages": [{"role": "user", "content": "the"}]}).json
    assert body["text"] == f"{EOT}<user>the{EOT}"
    assert body["ids"] == [261, *b"<user>", 257, 261] and body["overhead"] == 8


def test_import_without_tokenizer_config_offers_only_the_builtins(client: FlaskClient) -> None:
    ref = imported_id(client.post("/import", data={"kind": "tokenizer_json",
                                                   "file": upload(byte_bpe().to_json(), "tokenizer.json")}))
    page = client.get(f"/tokenizers/{ref}/chat").get_data(as_text=True)
    assert '<option value="chatml" selected>' in page and 'value="tokenizer"' not in page


@pytest.mark.parametrize("config, message", [
    pytest.param("{not json", "tokenizer_config.json is not JSON: line 1, column 2", id="not-json"),
    pytest.param("[1, 2]", "must hold a JSON object", id="not-object"),
    pytest.param(json.dumps({"chat_template": 7}), "chat_template must be a string", id="template-type"),
    pytest.param(json.dumps({"chat_template": []}), "chat_template is an empty list", id="empty-list"),
    pytest.param(json.dumps({"chat_template": "x" * 70_000}), "at most 65,536 are accepted", id="long-template"),
    pytest.param(json.dumps({"bos_token": "b" * 300}), "bos_token must be a string of at most 256", id="long-bos"),
    pytest.param("[" * 100_000 + "]" * 100_000, "tokenizer_config.json", id="deep-nesting"),
    pytest.param(" " * ((4 << 20) + 1), "larger than 4 MiB", id="too-large"),
])
def test_bad_tokenizer_config_is_422_with_the_problem_named(client: FlaskClient, config: str, message: str) -> None:
    response = client.post("/import", data={"kind": "tokenizer_json", "file": upload(byte_bpe().to_json(), "tokenizer.json"),
                                            "config": upload(config, "tokenizer_config.json")})
    assert response.status_code == 422
    error = response.get_data(as_text=True).split('data-testid="import-error">', 1)[1].split("</p>", 1)[0]
    assert message in error
