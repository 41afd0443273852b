"""Corpus uploads through the web app: good files, every kind of bad file, rename and delete.

An upload stores the file with its cheap facts only; the full statistics come from the
"analyse" job, run here by an in-process worker (``run_queued_jobs``). The analysis states of
the corpus pages are in test_corpus_analysis.py.
"""

from __future__ import annotations

import gzip
import io
import re
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from tests.webapp.conftest import run_queued_jobs
from webapp.store import db
from webapp.store.models import Corpus


def upload(client: FlaskClient, *files: tuple[bytes, str], **fields: str) -> tuple[int, str, str]:
    data: dict[str, object] = {"files": [(io.BytesIO(body), name) for body, name in files], **fields}
    response = client.post("/corpora/", data=data, content_type="multipart/form-data")
    return response.status_code, response.headers.get("Location", ""), response.get_data(as_text=True)


def corpora(app: Flask) -> list[Corpus]:
    with app.app_context():
        return list(db.get_session().scalars(select(Corpus).order_by(Corpus.id)))


def stored_files(app: Flask) -> list[str]:
    root = Path(app.config["CORPUS_DIR"])
    return sorted(p.name for p in root.rglob("*") if p.is_file())


def test_txt_upload_is_stored_by_hash_with_stats(client: FlaskClient, app: Flask) -> None:
    text = "the cat sat\non the mat<|endoftext|>the dog\n"
    status, location, _ = upload(client, (text.encode(), "pets.txt"))
    assert (status, location) == (303, "/corpora/1")
    [corpus] = corpora(app)
    assert corpus.name == "pets.txt"
    assert corpus.size_bytes == len(text.encode())
    assert corpus.stats["chars"] == len(text)
    assert corpus.stats["lines"] == 2
    assert "documents" not in corpus.stats  # the upload leaves the rest to the analysis job
    run_queued_jobs(app)
    [corpus] = corpora(app)
    assert (corpus.stats["chars"], corpus.stats["lines"]) == (len(text), 2)
    assert corpus.stats["documents"] == 2
    # " the" is one GPT-2 pre-token; the separator itself is not counted
    assert corpus.stats["distinct_pretokens"] == len({"the", " cat", " sat", "\n", "on", " the", " mat", " dog"})
    assert stored_files(app) == [f"{corpus.sha256}.txt"]
    page = client.get("/corpora/1").get_data(as_text=True)
    assert "split on <code>&lt;|endoftext|&gt;</code>" in page
    assert "the cat sat" in page


def test_jsonl_gz_uses_the_chosen_field(client: FlaskClient, app: Flask) -> None:
    body = gzip.compress(b'{"body": "first doc", "id": 1}\n\n{"body": "second"}\n')
    status, _, _ = upload(client, (body, "docs.jsonl.gz"), text_field="body")
    assert status == 303
    run_queued_jobs(app)
    [corpus] = corpora(app)
    assert (corpus.format, corpus.stats["documents"]) == ("jsonl", 2)
    stored = Path(app.config["CORPUS_DIR"], "objects", corpus.sha256[:2], f"{corpus.sha256}.txt")
    assert stored.read_text(encoding="utf-8") == "first doc<|endoftext|>second"
    assert corpus.upload_bytes == len(body)


def test_several_files_at_once(client: FlaskClient, app: Flask) -> None:
    status, location, _ = upload(client, (b"one", "a.txt"), (b"two", "b.txt"))
    assert (status, location) == (303, "/corpora/")
    assert [c.name for c in corpora(app)] == ["a.txt", "b.txt"]


def test_duplicate_upload_reuses_the_corpus(client: FlaskClient, app: Flask) -> None:
    upload(client, (b"same text", "first.txt"))
    status, location, _ = upload(client, (gzip.compress(b"same text"), "again.txt.gz"))
    assert (status, location) == (303, "/corpora/1")
    assert [c.name for c in corpora(app)] == ["first.txt"]
    page = client.get("/corpora/1").get_data(as_text=True)
    assert "“again.txt.gz” has the same content as the corpus “first.txt”" in page


BAD_UPLOADS = [
    pytest.param(b"caf\xc3\xa9 ok \xff no", "bad.txt",
                 "“bad.txt” is not valid UTF-8: the byte 0xff at byte offset 9", id="invalid-utf8"),
    pytest.param(b"", "empty.txt", "“empty.txt” is empty.", id="empty"),
    pytest.param(b"%PDF-1.7\n", "slides.pdf", "“slides.pdf” is not a text file. Upload plain text", id="not-text"),
    pytest.param(b"plain", "fake.txt.gz", "“fake.txt.gz” is not a valid gzip file", id="not-gzip"),
    pytest.param(gzip.compress(b"x" * 5000)[:-12], "cut.txt.gz", "is a truncated gzip file", id="truncated-gzip"),
    pytest.param(gzip.compress(b"0" * 1_000_000), "bomb.txt.gz",
                 "“bomb.txt.gz” expands to more than the limit of 4 KiB", id="gzip-bomb"),
    pytest.param(b"y" * 5000, "big.txt", "“big.txt” is larger than the upload limit of 4 KiB", id="over-limit"),
    pytest.param(b'{"text": "ok"}\nnot json\n', "x.jsonl", "“x.jsonl”, line 2 is not valid JSON", id="bad-json"),
    pytest.param(b'{"content": "ok"}\n', "y.jsonl",
                 "line 1 has no text field “text” (its fields: &#39;content&#39;)", id="missing-field"),
]


@pytest.mark.parametrize(("body", "name", "message"), BAD_UPLOADS)
def test_bad_uploads_explain_and_store_nothing(
    tmp_path: Path, body: bytes, name: str, message: str
) -> None:
    from tests.webapp.conftest import login_as, make_app

    app = make_app(tmp_path, f"sqlite:///{tmp_path / 'a.sqlite3'}", MAX_UPLOAD_BYTES=4096)
    status, _, page = upload(login_as(app.test_client(), 1), (body, name))
    db.get_engine(app).dispose()
    assert status == 422
    assert message in page
    assert corpora(app) == []
    assert stored_files(app) == []


def test_invalid_utf8_offers_decoding_with_replacement(client: FlaskClient, app: Flask) -> None:
    _, _, page = upload(client, (b"ab\xffcd", "bad.txt"))
    assert 'class="checkbox highlight"' in page
    assert "choose the file again" in page
    status, _, _ = upload(client, (b"ab\xffcd", "bad.txt"), replace_errors="on")
    assert status == 303
    [corpus] = corpora(app)
    assert corpus.stats["preview"] == "ab\N{REPLACEMENT CHARACTER}cd"


def test_interrupted_upload_stores_nothing(app: Flask) -> None:
    class Broken(io.RawIOBase):
        def __init__(self) -> None:
            self.sent = False

        def readable(self) -> bool:
            return True

        def readinto(self, buffer: bytearray) -> int:  # type: ignore[override]
            if self.sent:
                raise ConnectionResetError("connection reset by peer")
            self.sent = True
            buffer[:5] = b"hello"
            return 5

    from webapp.corpora.storage import CorpusStore, UploadError

    store = CorpusStore(app.config["CORPUS_DIR"])
    with pytest.raises(UploadError, match="The upload of “x.txt” was interrupted") as info:
        store.ingest(io.BufferedReader(Broken()), "x.txt", max_bytes=1000)
    assert info.value.kind == "interrupted"
    assert stored_files(app) == []


def test_client_disconnect_mid_body_is_a_clear_error(client: FlaskClient, app: Flask) -> None:
    boundary = "XyZ"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"a.txt\"\r\n"
            "Content-Type: text/plain\r\n\r\nhello wor").encode()
    response = client.post(
        "/corpora/", input_stream=io.BytesIO(body),
        content_type=f"multipart/form-data; boundary={boundary}",
        environ_overrides={"CONTENT_LENGTH": str(len(body) + 500)},  # 500 bytes never arrive
    )
    assert response.status_code == 400
    assert "The upload was interrupted before it finished. Nothing was stored" in response.get_data(as_text=True)
    assert corpora(app) == []
    assert stored_files(app) == []


def test_a_megabyte_word_gets_a_warning(client: FlaskClient, app: Flask) -> None:
    upload(client, (b"normal words then " + b"x" * 150_000 + b" end", "odd.txt"))
    run_queued_jobs(app)
    [corpus] = corpora(app)
    assert corpus.stats["longest_word"] == 150_000
    page = client.get(f"/corpora/{corpus.id}").get_data(as_text=True)
    assert "The longest run of text without whitespace is 150,000 characters." in page


def test_file_names_are_reduced_to_their_last_component(client: FlaskClient, app: Flask) -> None:
    upload(client, (b"text", "../../etc/evil.txt"))
    upload(client, (b"other", "C:\\Users\\me\\win.txt"))
    evil, windows = (c.name for c in corpora(app))
    assert evil == "evil.txt"
    # Werkzeug 3.1.9+ reads backslashes in the multipart header as quoted-string escapes, so the
    # server may receive "C:Usersmewin.txt"; either way no drive or folder survives.
    assert windows in ("win.txt", "Usersmewin.txt")


def test_rename_swaps_the_title_and_escapes(client: FlaskClient, app: Flask) -> None:
    upload(client, (b"text", "a.txt"))
    response = client.post("/corpora/1/rename", data={"name": "<script>x</script>"},
                           headers={"HX-Request": "true"})
    html = response.get_data(as_text=True)
    assert response.status_code == 200
    assert html.lstrip().startswith('<div id="corpus-title"')
    assert "<h1>&lt;script&gt;x&lt;/script&gt;</h1>" in html
    assert "<script>x" not in html
    response = client.post("/corpora/1/rename", data={"name": "  "}, headers={"HX-Request": "true"})
    assert response.status_code == 422
    assert "Give the corpus a name." in response.get_data(as_text=True)
    assert corpora(app)[0].name == "<script>x</script>"


def test_delete_removes_the_row_and_the_file(client: FlaskClient, app: Flask) -> None:
    upload(client, (b"text", "a.txt"))
    unconfirmed = client.post("/corpora/1/delete")  # deleting asks first, on a page of its own
    assert (unconfirmed.status_code, unconfirmed.headers["Location"]) == (303, "/corpora/1/delete")
    assert len(corpora(app)) == 1 and len(stored_files(app)) == 1
    assert "Delete the corpus “a.txt”?" in client.get("/corpora/1/delete").get_data(as_text=True)
    response = client.post("/corpora/1/delete", data={"confirmed": "yes"})
    assert (response.status_code, response.headers["Location"]) == (303, "/corpora/")
    assert corpora(app) == []
    assert stored_files(app) == []
    assert client.get("/corpora/1").status_code == 404


@pytest.mark.parametrize("name", ["corpus.en", "README", "notes.md", "corpus.en.gz"])
def test_a_text_file_of_any_name_is_stored_as_text(client: FlaskClient, app: Flask, name: str) -> None:
    data = "the cat sat on the mat\n".encode() * 3
    status, location, _ = upload(client, (gzip.compress(data) if name.endswith(".gz") else data, name))
    assert (status, location) == (303, "/corpora/1")
    assert [(c.name, c.format, c.size_bytes) for c in corpora(app)] == [(name, "txt", len(data))]


def test_a_jsonl_corpus_is_one_document_per_line(client: FlaskClient, app: Flask) -> None:
    body = b'{"text": "first doc"}\n{"text": "second"}\n'
    client.post("/corpora/", data={"files": [(io.BytesIO(body), "docs.jsonl")]}, content_type="multipart/form-data")
    client.post("/corpora/", data={"files": [(io.BytesIO(b"a<|endoftext|>b"), "plain.txt")]},
                content_type="multipart/form-data")
    run_queued_jobs(app)
    jsonl_page = client.get("/corpora/1").get_data(as_text=True)
    hint = re.search(r'<span class="hint" data-testid="documents-hint">(.*?)</span>', jsonl_page)
    assert hint is not None and hint.group(1) == "one per line of the .jsonl file (one JSON record each)"
    assert "endoftext" not in hint.group(1)
    assert "split on <code>&lt;|endoftext|&gt;</code>" in client.get("/corpora/2").get_data(as_text=True)


@pytest.mark.parametrize("name", ["corpus.gz", "corpus.txt.gz", "corpus.jsonl.gz"])
def test_a_fake_gz_is_not_a_valid_gzip_file(client: FlaskClient, name: str) -> None:
    response = client.post("/corpora/", data={"files": [(io.BytesIO(b"plain text, not gzip"), name)]},
                           content_type="multipart/form-data")
    html = response.get_data(as_text=True)
    assert response.status_code == 422
    assert f"“{name}” is not a valid gzip file." in html and "unknown format" not in html


def test_a_real_bare_gz_is_read_as_text(client: FlaskClient, app: Flask) -> None:
    response = client.post("/corpora/", data={"files": [(io.BytesIO(gzip.compress(b"hello there")), "corpus.gz")]},
                           content_type="multipart/form-data")
    assert response.status_code == 303
    assert "hello there" in client.get(response.headers["Location"]).get_data(as_text=True)
