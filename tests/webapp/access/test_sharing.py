"""Share links: what a visitor with a link can open, what they cannot, revocation, expiry, texts."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from tests.webapp.playground_samples import byte_bpe, store, wordpiece
from webapp.store import db
from webapp.store.models import Corpus, SharedText, ShareLink, utcnow


@pytest.fixture
def shared(app: Flask, client: FlaskClient) -> dict[str, object]:
    """Alice's team has a corpus and two tokenizers; the first gets a share link."""
    with app.app_context():
        db.get_session().add(Corpus(team_id=1, name="private-corpus.txt", sha256="cd" * 32, format="txt", stats={}))
        db.get_session().commit()
    public = store(app, byte_bpe("public-bpe"))
    private = store(app, wordpiece())
    response = client.post(f"/tokenizers/{public}/share", data={"days": ""})
    assert response.status_code == 303
    page = client.get(f"/tokenizers/{public}/share").get_data(as_text=True)
    url = re.search(r'data-testid="share-url">([^<]+)<', page).group(1)
    return {"public": public, "private": private, "path": url.replace("http://localhost", "")}


def test_token_is_unguessable(app: Flask, shared: dict[str, object]) -> None:
    with app.app_context():
        link = db.get_session().scalar(select(ShareLink))
    assert len(link.token) == 43 and re.fullmatch(r"[A-Za-z0-9_-]{43}", link.token)  # 32 random bytes
    assert shared["path"] == f"/s/{link.token}"


def test_a_visitor_gets_the_read_only_pages_and_nothing_else(anon_client: FlaskClient,
                                                             shared: dict[str, object]) -> None:
    public, private = shared["public"], shared["private"]
    opened = anon_client.get(str(shared["path"]))
    assert opened.status_code == 200 and "Location" not in opened.headers  # served at the link's URL
    for play in (opened.get_data(as_text=True), anon_client.get(f"/tokenizers/{public}/play").get_data(as_text=True)):
        assert "public-bpe" in play and "private-corpus" not in play and "tiny-wordpiece" not in play
        assert "/insights" not in play and f"/tokenizers/{public}/share" not in play  # members' links hidden
    for url in (f"/tokenizers/{public}/vocab", f"/tokenizers/{public}/tokens/257", f"/tokenizers/{public}/downloads",
                f"/tokenizers/{public}/download/tokenizer.json/tokenizer.json", f"/tokenizers/{public}/download.zip"):
        assert anon_client.get(url).status_code == 200, url
    chat = anon_client.get(f"{shared['path']}/chat")
    assert chat.status_code == 200 and 'data-testid="chat-template"' in chat.get_data(as_text=True)
    counted = anon_client.post(f"/tokenizers/{public}/chat", data={
        "template": "chatml", "role": "user", "content": "the"})
    assert counted.status_code == 200 and 'data-testid="chat-total">' in counted.get_data(as_text=True)
    encoded = anon_client.post(f"/tokenizers/{public}/encode", data={"text": "the"})
    assert encoded.status_code == 200 and 'data-testid="count-tokens">1<' in encoded.get_data(as_text=True)
    for url in (f"/tokenizers/{private}/play", f"/tokenizers/{private}/vocab", f"/tokenizers/{private}/chat",
                f"/tokenizers/{public}/insights",
                f"/tokenizers/{public}", f"/tokenizers/{public}/share"):
        assert anon_client.get(url).status_code in (303, 404), url  # login page or not found
    assert anon_client.get(f"/tokenizers/{private}/play").status_code == 404
    for url in ("/corpora/", "/corpora/1", "/jobs", "/tokenizers", "/train", "/teams"):
        response = anon_client.get(url)
        assert response.status_code == 303 and "/login" in response.headers["Location"], url
    assert anon_client.post(f"/tokenizers/{public}/delete", data={"confirmed": "yes"}).status_code == 303
    assert anon_client.get(f"/tokenizers/{public}/play").status_code == 200  # still there


def test_compare_offers_only_what_was_shared_with_you(app: Flask, client: FlaskClient, anon_client: FlaskClient,
                                                      shared: dict[str, object]) -> None:
    public, private = shared["public"], shared["private"]
    one = anon_client.get(str(shared["path"])).get_data(as_text=True)
    assert 'data-testid="nav-compare"' not in one  # one tokenizer: nothing to compare it with
    assert 'data-testid="compare-one-shared"' in anon_client.get(f"/compare?ids={public}").get_data(as_text=True)
    other = store(app, byte_bpe("second-public", merges=[]))
    client.post(f"/tokenizers/{other}/share", data={})
    with app.app_context():
        second = db.get_session().scalar(select(ShareLink).where(ShareLink.tokenizer_id == other))
    anon_client.get(str(shared["path"]))
    anon_client.get(f"/s/{second.token}")
    assert 'data-testid="nav-compare"' in anon_client.get(str(shared["path"])).get_data(as_text=True)
    page = anon_client.get(f"/compare?ids={public}&ids={other}&text=the")
    assert page.status_code == 200 and 'data-testid="compare-one-shared"' not in page.get_data(as_text=True)
    html = page.get_data(as_text=True)
    assert "second-public" in html and "tiny-wordpiece" not in html
    assert anon_client.get(f"/compare?ids={public}&ids={private}").status_code == 404


def test_revoked_and_expired_links_stop_at_once(app: Flask, client: FlaskClient, anon_client: FlaskClient,
                                                shared: dict[str, object]) -> None:
    public = shared["public"]
    assert anon_client.get(str(shared["path"])).status_code == 200
    with app.app_context():
        link = db.get_session().scalar(select(ShareLink))
    client.post(f"/tokenizers/{public}/share/{link.id}/revoke")
    assert anon_client.get(f"/tokenizers/{public}/play").status_code == 303  # back to the login page
    assert anon_client.get(str(shared["path"])).status_code == 410
    assert anon_client.get(f"{shared['path']}/chat").status_code == 410
    assert anon_client.post(f"/tokenizers/{public}/chat", data={"role": "user", "content": "the"}).status_code == 303
    client.post(f"/tokenizers/{public}/share", data={"days": "1"})
    with app.app_context():
        session = db.get_session()
        fresh = session.scalar(select(ShareLink).where(ShareLink.revoked_at.is_(None)))
        assert fresh.expires_at - utcnow() > dt.timedelta(hours=23)
        fresh.expires_at = utcnow() - dt.timedelta(seconds=1)
        session.commit()
    assert anon_client.get(f"/s/{fresh.token}").status_code == 410
    bad = client.post(f"/tokenizers/{public}/share", data={"days": "-3"})
    assert bad.status_code == 422 and "whole number of days" in bad.get_data(as_text=True)


def test_share_this_text_too(app: Flask, client: FlaskClient, anon_client: FlaskClient,
                             shared: dict[str, object]) -> None:
    public = shared["public"]
    with app.app_context():
        link = db.get_session().scalar(select(ShareLink))
    text = "the <b>long</b> text " * 500
    page = client.post(f"/tokenizers/{public}/share/{link.id}/texts", data={"text": text}).get_data(as_text=True)
    url = re.search(r'data-testid="text-url">([^<]+)<', page).group(1).replace("http://localhost", "")
    assert len(url) < 120  # the text is on the server, not in the URL
    with app.app_context():
        stored = db.get_session().scalar(select(SharedText))
    assert stored.text == text and url == f"/s/{link.token}/t/{stored.token}"
    shown = anon_client.get(url)
    assert shown.status_code == 200
    body = shown.get_data(as_text=True)
    assert "the &lt;b&gt;long&lt;/b&gt; text" in body and "<b>long</b>" not in body
    # Edits of the stored text go to the link's own page in the address bar, not to this fixed text.
    assert f'data-text-from="shared" data-address="/s/{link.token}">' in body
    assert anon_client.get(f"/s/{link.token}/t/{'x' * 43}").status_code == 404
    client.post(f"/tokenizers/{public}/share/{link.id}/revoke")
    assert anon_client.get(url).status_code == 410
    empty = client.post(f"/tokenizers/{public}/share/{link.id}/texts", data={"text": "hi"})
    assert empty.status_code == 422 and "revoked or expired" in empty.get_data(as_text=True)


def test_deleting_the_tokenizer_kills_its_links(app: Flask, client: FlaskClient, anon_client: FlaskClient,
                                                shared: dict[str, object]) -> None:
    public = shared["public"]
    client.post(f"/tokenizers/{public}/delete", data={"confirmed": "yes"})
    assert anon_client.get(str(shared["path"])).status_code == 404
    with app.app_context():
        assert db.get_session().scalar(select(ShareLink)) is None


def test_the_share_url_is_the_page_and_stays_in_the_address_bar(app: Flask, anon_client: FlaskClient,
                                                                shared: dict[str, object]) -> None:
    """``/s/<token>`` serves the encode page itself (no redirect to a URL that cannot be passed on),
    its other read-only pages live under it, and ``?text=`` works there as on the team's page."""
    public, path = shared["public"], str(shared["path"])
    page = anon_client.get(f"{path}?text=the+wo")
    html = page.get_data(as_text=True)
    assert page.status_code == 200 and 'data-testid="count-tokens">2<' in html  # "the", " wo"
    assert f'href="http://localhost{path}?text=the+wo" id="permalink"' in html  # a permalink others can open
    assert f'href="{path}/vocab"' in html and f'href="{path}/downloads"' in html
    assert page.headers["Cache-Control"] == "no-store" and page.headers["Referrer-Policy"] == "no-referrer"
    fresh = app.test_client()  # someone the link was passed on to, straight to a sub-page
    vocab = fresh.get(f"{path}/vocab")
    assert vocab.status_code == 200 and "public-bpe" in vocab.get_data(as_text=True)
    assert fresh.get(f"{path}/downloads").status_code == 200
    assert fresh.get(f"{path}/insights").status_code in (303, 404)  # not a shared page
    # The picker sends a visitor to share URLs too, and refuses what was not shared.
    switched = anon_client.get(f"/play?tokenizer={public}&text=hi")
    assert (switched.status_code, switched.headers["Location"]) == (303, f"{path}?text=hi")
    assert anon_client.get(f"/play?tokenizer={shared['private']}").status_code == 404


def test_visitors_get_a_read_only_banner_with_the_summary(client: FlaskClient, anon_client: FlaskClient,
                                                         shared: dict[str, object]) -> None:
    path = str(shared["path"])
    for url in (path, f"{path}/vocab", f"{path}/downloads"):
        html = anon_client.get(url).get_data(as_text=True)
        banner = re.search(r'<section class="share-banner".*?</section>', html, re.S)
        assert banner is not None, url
        text = re.sub(r"<[^>]+>", " ", banner.group())
        assert "Shared with you, read-only." in text and "public-bpe" in text
        assert "262 tokens" in " ".join(text.split()) and "BPE" in text
    assert "&lt;|endoftext|&gt;" in banner_of(anon_client.get(path).get_data(as_text=True))  # its special token
    assert "share-banner" not in client.get(f"/tokenizers/{shared['public']}/play").get_data(as_text=True)
    assert "share-banner" not in client.get(path).get_data(as_text=True)  # the team sees its own page


def banner_of(html: str) -> str:
    return re.search(r'<section class="share-banner".*?</section>', html, re.S).group()


@pytest.mark.parametrize("how", ["revoked", "expired"])
def test_a_stopped_link_says_why_and_nothing_else(app: Flask, client: FlaskClient, anon_client: FlaskClient,
                                                  shared: dict[str, object], how: str) -> None:
    public, path = shared["public"], str(shared["path"])
    with app.app_context():
        link = db.get_session().scalar(select(ShareLink))
    text_page = client.post(f"/tokenizers/{public}/share/{link.id}/texts", data={"text": "secret words"})
    text_path = re.search(r'data-testid="text-url">([^<]+)<', text_page.get_data(as_text=True)).group(1)
    with app.app_context():
        row = db.get_session().get(ShareLink, link.id)
        if how == "revoked":
            row.revoked_at = utcnow()
        else:
            row.expires_at = utcnow() - dt.timedelta(seconds=1)
        db.get_session().commit()
    wording = "This share link was revoked" if how == "revoked" else "This share link has expired"
    for url in (path, f"{path}/vocab", text_path.replace("http://localhost", ""), f"{path}?text=hi"):
        response = anon_client.get(url)
        html = response.get_data(as_text=True)
        assert response.status_code == 410 and wording in html, url
        assert "Not found" not in html and "public-bpe" not in html and "secret words" not in html
        assert f"/tokenizers/{public}" not in html and "Alice" not in html
    unknown = anon_client.get(f"/s/{'x' * 43}")
    assert unknown.status_code == 404 and "revoked" not in unknown.get_data(as_text=True)
