"""Chat renders have budgets (issue #22, finding 6): a rate per holder, and renders at once.

A holder is a member, or for share-link visitors the link itself, so fresh sessions buy no
more. Renders "at once" are held here as the slots a running render holds; one test runs
renders of a template that loops until it is stopped, in parallel, through one share link.
"""

from __future__ import annotations

import html
import re
import threading
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from tests.webapp.conftest import HX, login_as, make_app, statements
from tests.webapp.playground_samples import byte_bpe, store
from webapp.store import db
from webapp.store.models import ShareLink
from webapp.store.models import Tokenizer as Row
from webapp.web import slots

BURNER = "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}"


def chat_app(tmp_path: Path, **config: object) -> Flask:
    return make_app(tmp_path, f"sqlite:///{tmp_path / 'chat.sqlite3'}", **config)


def shared(app: Flask, template: str | None = None) -> tuple[int, str]:
    """A tokenizer of Alice's team (with ``template`` as its own chat template), shared; (id, link path)."""
    tokenizer_id = store(app, byte_bpe("shared-bpe"))
    if template is not None:
        with app.app_context():
            row = db.get_session().get(Row, tokenizer_id)
            row.config = {"chat": {"template": template}}
            db.get_session().commit()
    client = login_as(app.test_client(), 1)
    assert client.post(f"/tokenizers/{tokenizer_id}/share", data={"days": ""}).status_code == 303
    with app.app_context():
        token = db.get_session().scalar(select(ShareLink.token).where(ShareLink.tokenizer_id == tokenizer_id))
    return tokenizer_id, f"/s/{token}"


def post_chat(client: FlaskClient, tokenizer_id: int, template: str = "chatml") -> tuple[int, str]:
    response = client.post(f"/tokenizers/{tokenizer_id}/chat", data={"template": template, "role": "user",
                                                                      "content": "the"})
    return response.status_code, html.unescape(response.get_data(as_text=True))


def test_a_members_chat_renders_are_rate_limited(tmp_path: Path) -> None:
    app = chat_app(tmp_path, CHAT_RATE_LIMIT="2/60")
    tokenizer_id = store(app, byte_bpe("mine"))
    client = login_as(app.test_client(), 1)
    assert client.get(f"/tokenizers/{tokenizer_id}/chat").status_code == 200
    assert post_chat(client, tokenizer_id)[0] == 200
    refused = client.post(f"/tokenizers/{tokenizer_id}/chat", data={"template": "chatml", "role": "user",
                                                                      "content": "the"})
    text = refused.get_data(as_text=True)
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 0
    assert "Too many chat renders. Wait" in text
    assert "The server allows 2 per 60 seconds (TOKENFORGE_CHAT_RATE_LIMIT raises it)." in text


def test_share_link_visitors_share_the_links_budget(tmp_path: Path) -> None:
    app = chat_app(tmp_path, CHAT_RATE_LIMIT="2/60")
    tokenizer_id, path = shared(app)
    first, second = app.test_client(), app.test_client()  # two sessions: no more budget for it
    assert first.get(f"{path}/chat").status_code == 200
    assert second.get(f"{path}/chat").status_code == 200
    assert post_chat(second, tokenizer_id)[0] == 429
    assert first.get(f"{path}/chat").status_code == 429  # the link's page counts too
    assert post_chat(login_as(app.test_client(), 1), tokenizer_id)[0] == 200  # the member has her own


def test_a_holders_render_beyond_those_running_gets_429(app: Flask, client: FlaskClient) -> None:
    tokenizer_id, path = shared(app)
    folder = Path(app.config["DATA_DIR"]) / "slots"
    running = [slots.take(folder, "chat:member:1", 2) for _ in range(2)]
    status, text = post_chat(client, tokenizer_id)
    assert status == 429
    assert ("Other chat renders of yours are still running. The server runs at most 2 at once "
            "(TOKENFORGE_CHAT_CONCURRENCY raises it); wait for one to finish, then try again.") in text
    visitor = app.test_client()
    assert visitor.get(f"{path}/chat").status_code == 200  # a link's visitors are another holder
    for slot in running:
        slot.release()  # type: ignore[union-attr]
    assert post_chat(client, tokenizer_id)[0] == 200
    link = path.removeprefix("/s/")
    held = [slots.take(folder, f"chat:link:{link}", 2) for _ in range(2)]
    assert visitor.get(f"{path}/chat").status_code == 429
    for slot in held:
        slot.release()  # type: ignore[union-attr]


def test_a_render_refused_for_a_slot_spends_none_of_the_rate(tmp_path: Path) -> None:
    """Refused for want of a slot, a render is not counted: once the running ones end, the holder
    has every render of the minute. The refusal asks the database nothing more than the page's
    access does (no rate counter) and renders no header of the member's teams."""
    app = chat_app(tmp_path, CHAT_RATE_LIMIT="2/60")
    tokenizer_id = store(app, byte_bpe("mine"))
    client = login_as(app.test_client(), 1)
    folder = Path(app.config["DATA_DIR"]) / "slots"
    running = [slots.take(folder, "chat:member:1", 2) for _ in range(2)]
    for _ in range(3):
        with statements(app) as seen:
            status, text = post_chat(client, tokenizer_id)
        assert status == 429 and "TOKENFORGE_CHAT_CONCURRENCY" in text
        assert not [s for s in seen if "rate_limits" in s] and 'aria-label="Main"' not in text
    for slot in running:
        slot.release()  # type: ignore[union-attr]
    assert [post_chat(client, tokenizer_id)[0] for _ in range(3)] == [200, 200, 429]


def test_an_htmx_refusal_is_the_message_alone(tmp_path: Path) -> None:
    """As for other errors, htmx gets the message fragment (``static/js/app.js`` shows it)."""
    app = chat_app(tmp_path, CHAT_RATE_LIMIT="1/60")
    tokenizer_id = store(app, byte_bpe("mine"))
    client = login_as(app.test_client(), 1)
    assert post_chat(client, tokenizer_id)[0] == 200
    refused = client.post(f"/tokenizers/{tokenizer_id}/chat", data={"template": "chatml", "role": "user",
                                                                      "content": "the"}, headers=HX)
    text = refused.get_data(as_text=True)
    assert refused.status_code == 429 and text.startswith('<p class="error-message" data-status="429">')
    assert "TOKENFORGE_CHAT_RATE_LIMIT" in text and "<html" not in text


@pytest.mark.slow
def test_parallel_renders_of_a_burning_template_run_two_at_a_time(tmp_path: Path) -> None:
    """Six visitors of one link post a template that loops until stopped, at once: two run it
    (and are stopped with a 422 after the render time), the other four get a 429 at once."""
    app = chat_app(tmp_path, CHAT_RENDER_SECONDS=5)
    tokenizer_id, path = shared(app, BURNER)
    visitors = [app.test_client() for _ in range(6)]
    for visitor in visitors:
        assert visitor.get(path).status_code == 200  # opens the link (the encode page: no render)
    start = threading.Barrier(len(visitors))
    statuses: list[int] = []

    def post(visitor: FlaskClient) -> None:
        start.wait()
        statuses.append(post_chat(visitor, tokenizer_id, template="tokenizer")[0])

    threads = [threading.Thread(target=post, args=(v,)) for v in visitors]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [422, 422, 429, 429, 429, 429]
    assert not list((Path(app.config["DATA_DIR"]) / "slots").iterdir())  # every slot let go


def test_the_429_names_no_secret(tmp_path: Path) -> None:
    """The answer names the budget and its setting, never the link's token or the holder's key."""
    app = chat_app(tmp_path, CHAT_RATE_LIMIT="1/60")
    tokenizer_id, path = shared(app)
    visitor = app.test_client()
    visitor.get(f"{path}/chat")
    text = visitor.get(f"{path}/chat").get_data(as_text=True)
    assert "TOKENFORGE_CHAT_RATE_LIMIT" in text and not re.search(re.escape(path.removeprefix("/s/")), text)


def test_the_apis_chat_encodes_share_the_chat_budget(tmp_path: Path) -> None:
    app = chat_app(tmp_path, CHAT_RATE_LIMIT="2/60")
    tokenizer_id = store(app, byte_bpe("mine"))
    client = login_as(app.test_client(), 1)
    body = {"tokenizer": tokenizer_id, "messages": [{"role": "user", "content": "the"}]}
    assert [client.post("/api/v1/encode", json=body).status_code for _ in range(2)] == [200, 200]
    refused = client.post("/api/v1/encode", json=body)
    assert refused.status_code == 429
    assert "TOKENFORGE_CHAT_RATE_LIMIT" in refused.get_json()["error"]
    assert client.post("/api/v1/encode", json={"tokenizer": tokenizer_id, "text": "the"}).status_code == 200


def test_a_render_runs_below_the_web_processes_priority() -> None:
    """A burner that loops until its deadline takes only idle CPU (sandbox.RENDER_NICE)."""
    import subprocess
    import sys

    code = ("import os; from webapp.chat.sandbox import RENDER_NICE, _lower_priority; before = os.nice(0); "
            "_lower_priority(); print(os.nice(0) - before, RENDER_NICE)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[3])
    assert done.stdout.split() == ["10", "10"]


def test_the_whole_server_runs_a_bounded_number_of_renders(tmp_path: Path) -> None:
    """Many holders together (here: the slots other members' renders hold) cannot take every thread."""
    app = chat_app(tmp_path, CHAT_RENDERS_AT_ONCE=2)
    tokenizer_id = store(app, byte_bpe("mine"))
    client = login_as(app.test_client(), 1)
    folder = Path(app.config["DATA_DIR"]) / "slots"
    running = [slots.take(folder, "chat:server", 2) for _ in range(2)]
    status, text = post_chat(client, tokenizer_id)
    assert status == 429
    assert ("The server is busy rendering other chat templates. The server runs at most 2 at once "
            "(TOKENFORGE_CHAT_RENDERS_AT_ONCE raises it); wait for one to finish, then try again.") in text
    running.pop().release()  # type: ignore[union-attr]
    assert post_chat(client, tokenizer_id)[0] == 200
    freed = slots.take(folder, "chat:server", 2)  # the render let its slot go when it ended
    assert freed is not None
    for slot in (*running, freed):
        slot.release()  # type: ignore[union-attr]
