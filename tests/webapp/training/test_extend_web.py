"""Extending a tokenizer from its page: the form, its sentences, the job through the worker, the
stored row (the base's ids kept), its report and the link to the diff."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from engine import Tokenizer
from engine.errors import ConfigError
from engine.extend import check_extendable
from engine.formats.spm_model import load_spm_model
from engine.limits import MAX_VOCAB_SIZE
from tests.engine.spm_samples import english, train_spm
from tests.webapp.conftest import add_corpus, add_user, login_as, run_queued_jobs
from tests.webapp.jobs_support import job_row, session_for
from tests.webapp.playground_samples import byte_bpe, store
from tests.webapp.training.extend_support import ENGLISH, RARE, chinese, extend_form
from webapp.store.models import Corpus, Job
from webapp.store.models import Tokenizer as Row
from webapp.tokenizers.originals import keep_original

BASE_VOCAB = 256 + 5 + 1  # byte_bpe: the bytes, five merges, <|endoftext|>
ROOM = MAX_VOCAB_SIZE - BASE_VOCAB


@pytest.fixture
def ids(app: Flask) -> dict[str, int]:
    _bob, bobs_team = add_user(app, "bob@example.com", "Bob")
    return {"base": store(app, byte_bpe("base")), "zh": add_corpus(app, chinese(), "zh.txt"),
            "en": add_corpus(app, ENGLISH, "en.txt"), "zh_held": add_corpus(app, chinese(60, seed=7), "zh-held.txt"),
            "bobs": store(app, byte_bpe("bob's"), team_id=bobs_team),
            "bobs_corpus": add_corpus(app, chinese(), "bob.txt", team_id=bobs_team)}


def alert(html: str) -> list[str]:
    return [unescape(m) for m in re.findall(r'role="alert">([^<]*)<', html)]


def stored_extension(app: Flask, job_id: int) -> Row:
    with session_for(app) as session:
        return session.scalars(select(Row).where(Row.job_id == job_id)).one()


def test_the_tokenizer_page_has_the_form(client: FlaskClient, ids: dict[str, int]) -> None:
    page = client.get(f"/tokenizers/{ids['base']}").get_data(as_text=True)
    assert 'id="extend-form"' in page
    assert f'action="/tokenizers/{ids["base"]}/extend"' in page
    assert f'name="add" value="1000" min="1" max="{ROOM}"' in page
    assert re.search(r'name="protected" checked', page)
    for name in ("zh.txt", "en.txt"):
        assert name in page
    assert "bob.txt" not in page  # another team's corpus is never offered
    assert client.get(f"/tokenizers/{ids['base']}/extend").status_code == 200


def word_level() -> Tokenizer:
    """A base of a type extend refuses (Unigram and WordPiece are extendable since issue #23)."""
    from engine.models.baselines import WordLevel
    from engine.pretokenizers import WhitespaceSplit

    return Tokenizer(WordLevel({"[UNK]": 0, "the": 1, "cat": 2}), pre_tokenizer=WhitespaceSplit(), name="tiny-words")


def test_a_base_the_engine_cannot_extend_gets_one_sentence(app: Flask, client: FlaskClient,
                                                           ids: dict[str, int]) -> None:
    uni = store(app, word_level())
    with pytest.raises(ConfigError) as refused:
        check_extendable(word_level())
    sentence = str(refused.value)
    page = client.get(f"/tokenizers/{uni}").get_data(as_text=True)
    assert 'id="extend-form"' not in page
    assert unescape(re.search(r'data-testid="extend-unsupported">([^<]*)<', page).group(1)) == sentence
    response = client.post(f"/tokenizers/{uni}/extend", data=extend_form(ids["zh"]))
    assert response.status_code == 422
    assert sentence in unescape(response.get_data(as_text=True))
    with session_for(app) as session:
        assert session.scalars(select(Job)).all() == []


def test_a_base_the_team_cannot_read_is_404(client: FlaskClient, ids: dict[str, int]) -> None:
    assert client.get(f"/tokenizers/{ids['bobs']}/extend").status_code == 404
    assert client.post(f"/tokenizers/{ids['bobs']}/extend", data=extend_form(ids["zh"])).status_code == 404
    assert client.post("/tokenizers/999999/extend", data=extend_form(ids["zh"])).status_code == 404


@pytest.mark.parametrize(("add", "sentence"), [
    ("0", f"The number of tokens to add must be a whole number from 1 to {ROOM:,}, not '0'."),
    ("abc", f"The number of tokens to add must be a whole number from 1 to {ROOM:,}, not 'abc'."),
    ("", f"The number of tokens to add must be a whole number from 1 to {ROOM:,}, not ''."),
    ("2000000", f"2,000,000 new tokens would take the vocabulary past the engine's limit of 2,000,000 tokens; "
                f"add at most {ROOM:,}."),
], ids=["zero", "letters", "empty", "past-the-limit"])
def test_the_number_of_tokens_is_bounded(client: FlaskClient, ids: dict[str, int], add: str, sentence: str) -> None:
    response = client.post(f"/tokenizers/{ids['base']}/extend", data=extend_form(ids["zh"], add=add))
    assert response.status_code == 422
    assert alert(response.get_data(as_text=True)) == [sentence]


def test_the_corpora_sentences(client: FlaskClient, ids: dict[str, int]) -> None:
    url = f"/tokenizers/{ids['base']}/extend"

    def sentences(**fields: object) -> list[str]:
        response = client.post(url, data=fields)
        assert response.status_code == 422
        return alert(response.get_data(as_text=True))

    assert sentences(**extend_form()) == ["Choose at least one corpus to learn the new tokens from."]
    assert sentences(**extend_form(ids["bobs_corpus"])) == [
        "Choose the corpora from the list; one of the chosen ones is not your team's."]
    assert sentences(**extend_form(ids["zh"], held_out=str(ids["zh"]))) == [
        "The held-out corpus 'zh.txt' is also one to learn from; choose another, or none (the last tenth "
        "of the last corpus is then held out)."]
    assert sentences(**extend_form(ids["zh"], reference=str(ids["bobs_corpus"]))) == [
        f"Choose the reference corpus from the list; '{ids['bobs_corpus']}' is not one of your team's corpora."]


def test_the_queue_cap_applies(app: Flask, client: FlaskClient, ids: dict[str, int]) -> None:
    app.config["MAX_QUEUED_JOBS"] = 1
    url = f"/tokenizers/{ids['base']}/extend"
    assert client.post(url, data=extend_form(ids["zh"])).status_code == 303
    response = client.post(url, data=extend_form(ids["zh"]))
    assert response.status_code == 429
    assert alert(response.get_data(as_text=True)) == [
        "Your team already has 1 training jobs waiting; cancel one, or wait until one starts, then try again."]


def test_an_extension_job_keeps_the_base_ids(app: Flask, client: FlaskClient, ids: dict[str, int]) -> None:
    response = client.post(f"/tokenizers/{ids['base']}/extend",
                           data=extend_form(ids["zh"], add="40", held_out=str(ids["zh_held"]),
                                            reference=str(ids["en"])))
    assert response.status_code == 303
    job_id = int(response.headers["Location"].rsplit("/", 1)[1])
    job = job_row(app, job_id)
    assert (job.kind, job.algorithm, job.status, job.corpus_ids) == ("train", "extend", "queued", [ids["zh"]])
    assert job.name == "base + 40 (zh.txt)"
    run_queued_jobs(app)
    job = job_row(app, job_id)
    assert (job.status, job.error) == ("succeeded", None)
    row = stored_extension(app, job_id)
    report = row.config["report"]
    assert (row.team_id, row.algorithm, row.source) == (1, "bpe", "trained")
    assert row.config["extended_from"] == ids["base"]
    assert report["pieces_added"] == 40 and row.name == "base + 40 (zh.txt)"
    assert (report["base_vocab_size"], report["vocab_size"]) == (BASE_VOCAB, BASE_VOCAB + 40)
    assert (report["new_embedding_rows"], report["unreachable"], report["protected"]) == (40, 0, True)
    assert row.vocab_size == BASE_VOCAB + 40
    # The base's ids are the extension's first ids; English encodes exactly as before.
    base, extended = byte_bpe("base"), Tokenizer.from_json(row.tokenizer_json)
    assert [extended.id_to_token(i) for i in range(BASE_VOCAB)] == [base.id_to_token(i) for i in range(BASE_VOCAB)]
    english = "The teacher said: the quick brown fox jumps over the lazy dog. Café!"
    assert extended.encode(english) == base.encode(english)
    assert report["reference"]["lines_changed"] == 0
    assert report["reference"]["tokens_before"] == report["reference"]["tokens_after"]
    held = report["held_out"]
    assert held["tokens_per_char_after"] < held["tokens_per_char_before"]
    zh = chinese(3, seed=99)
    assert len(extended.encode(zh)) < len(base.encode(zh))
    assert extended.decode(extended.encode(zh)) == zh
    # The page shows the report and links to the diff with the base.
    page = client.get(f"/tokenizers/{row.id}").get_data(as_text=True)
    assert 'data-testid="pieces-added">40<' in page
    assert 'data-testid="unreachable">0<' in page
    assert 'data-testid="new-rows">40<' in page
    assert f"model.resize_token_embeddings({BASE_VOCAB + 40})" in page
    assert 'data-testid="reference-changed">0 of 200<' in page
    diff_url = f"/tokenizers/diff?a={ids['base']}&amp;b={row.id}"
    assert diff_url in page
    diff = client.get(unescape(diff_url))
    assert diff.status_code == 200
    job_page = client.get(f"/jobs/{job_id}").get_data(as_text=True)
    assert f'href="/tokenizers/{row.id}" data-testid="extension-page"' in job_page


def test_unprotected_changes_english(app: Flask, client: FlaskClient, ids: dict[str, int]) -> None:
    response = client.post(f"/tokenizers/{ids['base']}/extend", data=extend_form(ids["en"], add="30", protected=False))
    job_id = int(response.headers["Location"].rsplit("/", 1)[1])
    run_queued_jobs(app)
    row = stored_extension(app, job_id)
    assert row.config["report"]["protected"] is False
    assert row.config["options"] == {"add": 30, "protected": False}
    extended, base = Tokenizer.from_json(row.tokenizer_json), byte_bpe("base")
    assert len(extended.encode("the quick brown fox")) < len(base.encode("the quick brown fox"))


def test_a_corpus_with_nothing_new_fails_with_the_engines_sentence(app: Flask, client: FlaskClient,
                                                                   ids: dict[str, int]) -> None:
    response = client.post(f"/tokenizers/{ids['base']}/extend", data=extend_form(ids["en"]))
    job_id = int(response.headers["Location"].rsplit("/", 1)[1])
    run_queued_jobs(app)
    job = job_row(app, job_id)
    sentence = ("The corpus has nothing new to learn for this tokenizer: it holds no character the base falls "
                "back on; turn protection off (untick “Protected” in the form) to learn merges of text the "
                "base already handles.")
    assert (job.status, job.error) == ("failed", sentence)
    assert sentence in unescape(client.get(f"/jobs/{job_id}").get_data(as_text=True))
    with session_for(app) as session:
        assert session.scalars(select(Row).where(Row.job_id == job_id)).all() == []


def test_a_preset_extends_into_the_team_of_the_corpora(app: Flask, client: FlaskClient, ids: dict[str, int]) -> None:
    with session_for(app) as session:
        preset = Row(team_id=None, preset="tiny_bytes", source="preset", name="Tiny bytes", algorithm="bpe",
                     tokenizer_json=byte_bpe("Tiny bytes").to_json(), vocab_size=BASE_VOCAB, stats={}, config={})
        session.add(preset)
        session.commit()
        preset_id = preset.id
    assert 'id="extend-form"' in client.get(f"/tokenizers/{preset_id}").get_data(as_text=True)
    response = client.post(f"/tokenizers/{preset_id}/extend", data=extend_form(ids["zh"], add="10"))
    job_id = int(response.headers["Location"].rsplit("/", 1)[1])
    run_queued_jobs(app)
    row = stored_extension(app, job_id)
    assert (row.team_id, row.name, row.config["extended_from"]) == (1, "Tiny bytes + 10 (zh.txt)", preset_id)
    # Bob's team sees the preset's form with only its own corpora, and not Alice's extension.
    bob = login_as(app.test_client(), 2)
    page = bob.get(f"/tokenizers/{preset_id}").get_data(as_text=True)
    assert "bob.txt" in page and "zh.txt" not in page
    assert bob.get(f"/tokenizers/{row.id}").status_code == 404


def test_a_base_or_corpus_deleted_before_the_job_runs(app: Flask, client: FlaskClient, ids: dict[str, int]) -> None:
    other = store(app, byte_bpe("gone"))
    url = "/tokenizers/{}/extend"
    first = client.post(url.format(other), data=extend_form(ids["zh"]))
    second = client.post(url.format(ids["base"]), data=extend_form(ids["zh"], held_out=str(ids["zh_held"])))
    first_id, second_id = (int(r.headers["Location"].rsplit("/", 1)[1]) for r in (first, second))
    with session_for(app) as session:
        session.delete(session.get(Row, other))
        session.delete(session.get(Corpus, ids["zh_held"]))
        session.commit()
    run_queued_jobs(app)
    assert (job_row(app, first_id).status, job_row(app, first_id).error) == (
        "failed", f"The base tokenizer #{other} was deleted before the extension started.")
    assert (job_row(app, second_id).status, job_row(app, second_id).error) == (
        "failed", f"The held-out corpus #{ids['zh_held']} was deleted before the extension started.")


def test_a_llama2_base_extends_with_its_ids_kept(app: Flask, client: FlaskClient, ids: dict[str, int]) -> None:
    from tests.open_models import open_model_file

    document = open_model_file("llama2").read_text(encoding="utf-8")  # skips without the folder
    base = Tokenizer.from_json(document)
    if base.vocab_size != 32_000:
        pytest.skip("not Llama 2's tokenizer.json")
    with session_for(app) as session:
        row = Row(team_id=1, name="Llama 2", source="imported", algorithm="bpe", tokenizer_json=document,
                  vocab_size=base.vocab_size, stats={}, config={})
        session.add(row)
        session.commit()
        base_id = row.id
    assert 'id="extend-form"' in client.get(f"/tokenizers/{base_id}").get_data(as_text=True)
    rare = add_corpus(app, chinese(alphabet=RARE), "rare.txt")
    response = client.post(f"/tokenizers/{base_id}/extend",
                           data=extend_form(rare, add="200", reference=str(ids["en"])))
    job_id = int(response.headers["Location"].rsplit("/", 1)[1])
    run_queued_jobs(app)
    job = job_row(app, job_id)
    assert (job.status, job.error) == ("succeeded", None)
    stored = stored_extension(app, job_id)
    extended = Tokenizer.from_json(stored.tokenizer_json)
    assert [extended.id_to_token(i) for i in range(32_000)] == [base.id_to_token(i) for i in range(32_000)]
    english = "The teacher said: the quick brown fox jumps over the lazy dog."
    assert extended.encode(english) == base.encode(english)
    report = stored.config["report"]
    assert report["reference"]["lines_changed"] == 0 and report["unreachable"] == 0
    assert report["held_out"]["tokens_per_char_after"] < report["held_out"]["tokens_per_char_before"]


def test_an_extension_keeps_the_bases_chat_template(app: Flask, client: FlaskClient, ids: dict[str, int]) -> None:
    """The base's ids are kept, so its chat template and bos/eos still fit: the new row carries them,
    and its tokenizer_config.json download writes them."""
    template = "{% for m in messages %}<|endoftext|>{{ m.content }}{% endfor %}"
    chat = {"template": template, "eos_token": "<|endoftext|>"}
    with session_for(app) as session:
        session.get(Row, ids["base"]).config = {"chat": chat}
        session.commit()
    response = client.post(f"/tokenizers/{ids['base']}/extend", data=extend_form(ids["zh"], add="20"))
    job_id = int(response.headers["Location"].rsplit("/", 1)[1])
    run_queued_jobs(app)
    row = stored_extension(app, job_id)
    assert row.config["chat"] == chat
    config = client.get(f"/tokenizers/{row.id}/download/tokenizer.json/tokenizer_config.json")
    assert config.status_code == 200
    assert (config.json["chat_template"], config.json["eos_token"]) == (template, "<|endoftext|>")
    own = client.post(f"/tokenizers/{row.id}/chat", headers={"HX-Request": "true"},
                      data={"template": "tokenizer", "role": ["user"], "content": ["x"]})
    assert own.status_code == 200, own.get_data(as_text=True)


def test_a_sentencepiece_bpe_model_base_extends_into_a_model(app: Flask, client: FlaskClient, ids: dict[str, int],
                                                             tmp_path: Path) -> None:
    """An imported Llama 2 style .model: the job appends to its proto, and the download is that .model."""
    spm = pytest.importorskip("sentencepiece")
    data = train_spm(tmp_path, "en", english(3000, 1), model_type="bpe", vocab_size=330, byte_fallback=True)
    base = load_spm_model(data)
    with session_for(app) as session:
        row = Row(team_id=1, name="en.model", algorithm="bpe", source="imported", tokenizer_json=base.to_json(),
                  vocab_size=base.vocab_size, stats={}, config=keep_original("spm_model", data))
        session.add(row)
        session.commit()
        base_id = row.id
    response = client.post(f"/tokenizers/{base_id}/extend", data=extend_form(ids["zh"], add="30"))
    assert response.status_code == 303
    job_id = int(response.headers["Location"].rsplit("/", 1)[1])
    run_queued_jobs(app)
    assert job_row(app, job_id).status == "succeeded"
    stored = stored_extension(app, job_id)
    assert "original" not in stored.stats and stored.config["report"]["pieces_added"] == 30
    model = client.get(f"/tokenizers/{stored.id}/download/spm_model/tokenizer.model")
    assert model.status_code == 200
    reference = spm.SentencePieceProcessor(model_proto=model.data)
    assert reference.get_piece_size() == 330 + 30
    assert [reference.id_to_piece(i) for i in range(330)] == [base.id_to_token(i) for i in range(330)]
    zh = chinese(3, seed=99)
    api = client.post("/api/v1/encode", json={"tokenizer": stored.id, "text": zh})
    assert api.json["ids"] == reference.encode(zh)  # the app encodes with the grown .model
    assert len(reference.encode(zh)) < len(base.encode(zh))
