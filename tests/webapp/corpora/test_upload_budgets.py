"""What a member and a team may spend on uploads (issue #22, findings 1 and 5): the team's disk
quota, uploads an hour, and uploads at once per member and per address.

"Refused before reading" is asserted as bytes read from a counting body, not as time. Uploads
running at once are held here as the slots a running upload holds (``web/slots.py``); the slow
uploads of a real server are in ``test_slow_uploads.py``.
"""

from __future__ import annotations

import gzip
import html
import io
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from tests.webapp.conftest import add_user, login_as, make_app, post_unread, statements
from webapp.store import db
from webapp.store.models import Corpus
from webapp.web import slots

MIB = 1 << 20


def budget_app(tmp_path: Path, **config: object) -> Flask:
    return make_app(tmp_path, f"sqlite:///{tmp_path / 'budgets.sqlite3'}", **config)


def upload(client: FlaskClient, *files: tuple[bytes, str]) -> tuple[int, str]:
    data = {"files": [(io.BytesIO(body), name) for body, name in files]}
    response = client.post("/corpora/", data=data, content_type="multipart/form-data")
    return response.status_code, html.unescape(response.get_data(as_text=True))



def corpora(app: Flask) -> list[Corpus]:
    with app.app_context():
        return list(db.get_session().scalars(select(Corpus).order_by(Corpus.id)))


def stored_objects(app: Flask) -> list[Path]:
    return sorted(p for p in Path(app.config["CORPUS_DIR"], "objects").rglob("*") if p.is_file())


def partial_files(app: Flask) -> list[Path]:
    return sorted(Path(app.config["UPLOAD_TMP_DIR"]).iterdir())


def held(app: Flask, key: str, count: int) -> list[slots.Slot]:
    """``count`` slots of ``key``, as that many running uploads hold them."""
    taken = [slots.take(Path(app.config["DATA_DIR"]) / "slots", key, count) for _ in range(count)]
    assert all(taken)
    return taken  # type: ignore[return-value]


# --- The team's disk quota (finding 5) --------------------------------------------------------

def test_the_corpora_page_shows_what_the_team_uses(app: Flask, client: FlaskClient) -> None:
    assert upload(client, (b"a b c a b", "c.txt"))[0] == 303
    page = client.get("/corpora/").get_data(as_text=True)
    assert "Your team's corpora use 9 Bytes of its 20.0 GiB." in html.unescape(page)


def test_a_gzip_bomb_stops_at_the_team_quota_and_leaves_nothing(tmp_path: Path) -> None:
    app = budget_app(tmp_path, TEAM_CORPUS_BYTES=MIB)
    status, text = upload(login_as(app.test_client(), 1), (gzip.compress(b"0" * (64 * MIB)), "bomb.txt.gz"))
    assert status == 413
    assert ("“bomb.txt.gz” would take your team's corpora past its quota of 1 MiB (0 bytes are in use; "
            "TOKENFORGE_TEAM_CORPUS_BYTES raises it). Nothing was stored") in text
    assert corpora(app) == [] and stored_objects(app) == [] and partial_files(app) == []


def test_two_files_of_one_request_share_what_is_left(tmp_path: Path) -> None:
    app = budget_app(tmp_path, TEAM_CORPUS_BYTES=1000)
    status, text = upload(login_as(app.test_client(), 1), (b"a" * 600, "first.txt"), (b"b" * 600, "second.txt"))
    assert status == 413
    assert "“second.txt” would take your team's corpora past its quota of 1,000 bytes (600 bytes are in use;" in text
    assert [(c.name, c.size_bytes) for c in corpora(app)] == [("first.txt", 600)]
    assert len(stored_objects(app)) == 1 and partial_files(app) == []


def test_a_full_team_is_refused_before_its_body_is_read(tmp_path: Path) -> None:
    app = budget_app(tmp_path, TEAM_CORPUS_BYTES=9, WTF_CSRF_ENABLED=True)  # CSRF parses forms: it must come after
    client = login_as(app.test_client(), 1)
    with app.app_context():
        db.get_session().add(Corpus(team_id=1, name="full.txt", sha256="ab" * 32, format="txt", size_bytes=9,
                                    stats={}))
        db.get_session().commit()
    status, text, body = post_unread(client, "/corpora/", 2 * MIB)
    assert status == 413 and body.read_bytes == 0 and partial_files(app) == []
    assert ("Your team's corpora use 9 bytes of its quota of 9 bytes, so nothing more can be uploaded. "
            "Delete corpora you no longer need, or ask the server's admin to raise TOKENFORGE_TEAM_CORPUS_BYTES.") in text
    assert "it is full" in client.get("/corpora/").get_data(as_text=True)


def test_a_team_keeps_its_own_quota(tmp_path: Path) -> None:
    app = budget_app(tmp_path, TEAM_CORPUS_BYTES=10)
    bob, _ = add_user(app, "bob@example.com")
    assert upload(login_as(app.test_client(), 1), (b"a" * 10, "alice.txt"))[0] == 303
    assert upload(login_as(app.test_client(), bob), (b"b" * 10, "bob.txt"))[0] == 303
    assert upload(login_as(app.test_client(), 1), (b"c", "more.txt"))[0] == 413


# --- Uploads an hour (finding 5) ---------------------------------------------------------------

def test_each_file_counts_against_the_members_uploads_an_hour(tmp_path: Path) -> None:
    app = budget_app(tmp_path, UPLOAD_RATE_LIMIT="3/3600")
    client = login_as(app.test_client(), 1)
    assert upload(client, (b"one", "1.txt"), (b"two", "2.txt"))[0] == 303
    response = client.post("/corpora/", content_type="multipart/form-data",
                           data={"files": [(io.BytesIO(b"three"), "3.txt"), (io.BytesIO(b"four"), "4.txt")]})
    assert response.status_code == 429 and int(response.headers["Retry-After"]) > 0
    text = response.get_data(as_text=True)
    assert "Too many corpus uploads. Wait" in text
    assert "The server allows 3 per 3600 seconds (TOKENFORGE_UPLOAD_RATE_LIMIT raises it)." in text
    assert [c.name for c in corpora(app)] == ["1.txt", "2.txt"]  # nothing of the refused request
    status, _, body = post_unread(client, "/corpora/", MIB)  # the budget is spent: refused before the body
    assert status == 429 and body.read_bytes == 0


# --- Uploads at once (finding 1) -------------------------------------------------------------

def test_a_members_third_upload_at_once_gets_429_unread(app: Flask, client: FlaskClient) -> None:
    running = held(app, "upload-member:1", 2)
    status, text, body = post_unread(client, "/corpora/", 100 * MIB)
    assert status == 429 and body.read_bytes == 0 and partial_files(app) == []
    assert ("You already have uploads in progress. The server runs at most 2 at once "
            "(TOKENFORGE_UPLOADS_PER_MEMBER raises it); wait for one to finish, then try again.") in text
    running[0].release()
    assert upload(client, (b"a b c", "c.txt"))[0] == 303  # one finished: room for one
    # The upload let go of its slot when it ended: only the one still running is held.
    assert len(list((Path(app.config["DATA_DIR"]) / "slots").iterdir())) == 1
    running[1].release()


def test_an_upload_refused_for_a_slot_asks_the_database_only_for_the_member(tmp_path: Path) -> None:
    """A member whose uploads at once all run is refused from the lock files: no quota sum, no
    count against the hour (the refused upload spends none of it), and a page without the header
    that lists the member's teams. A slow uploader retrying costs little."""
    app = budget_app(tmp_path, UPLOAD_RATE_LIMIT="1/3600")
    client = login_as(app.test_client(), 1)
    running = held(app, "upload-member:1", 2)
    with statements(app) as seen:
        status, text, body = post_unread(client, "/corpora/", MIB)
    assert status == 429 and body.read_bytes == 0 and "TOKENFORGE_UPLOADS_PER_MEMBER" in text
    assert len(seen) == 1 and "FROM users" in seen[0]  # the session's member, with their teams
    for slot in running:
        slot.release()
    assert upload(client, (b"a b", "b.txt"))[0] == 303  # the hour's one upload is still there


def test_one_address_runs_at_most_its_uploads_whoever_signs_in(app: Flask) -> None:
    bob, _ = add_user(app, "bob@example.com")
    running = held(app, "upload-ip:127.0.0.1", 4)
    status, text, body = post_unread(login_as(app.test_client(), bob), "/corpora/", MIB)
    assert status == 429 and body.read_bytes == 0
    assert "Your address already has uploads in progress. The server runs at most 4 at once" in text
    assert "TOKENFORGE_UPLOADS_PER_IP" in text
    for slot in running:
        slot.release()
    assert upload(login_as(app.test_client(), bob), (b"a b", "b.txt"))[0] == 303


def test_a_slot_is_freed_when_its_holder_lets_go_or_dies(tmp_path: Path) -> None:
    folder = tmp_path / "slots"
    first, second = slots.take(folder, "k", 2), slots.take(folder, "k", 2)
    assert first is not None and second is not None and slots.take(folder, "k", 2) is None
    assert slots.take(folder, "other", 1) is not None  # keys do not share slots
    first.release()
    again = slots.take(folder, "k", 2)
    assert again is not None and again.path == first.path
    # A holder that dies without releasing (its fd closed by the kernel) frees its slot too.
    import os

    os.close(second.fd)
    second.fd = -1
    assert slots.take(folder, "k", 2) is not None


@pytest.mark.parametrize("declared, seconds", [
    pytest.param(None, 3600.0, id="chunked-gets-the-hard-cap"),
    pytest.param(81920, 40.0, id="small-gets-its-size-at-the-floor-plus-a-window"),
    pytest.param(1 << 30, 3600.0, id="1-GiB-capped-at-an-hour-not-36-hours"),
])
def test_a_body_may_take_its_declared_size_at_the_floor_and_never_more_than_the_cap(
        declared: int | None, seconds: float) -> None:
    from webapp.web.server import BodyRules

    assert BodyRules(min_rate=8192, window=30, max_seconds=3600).seconds_for(declared) == seconds
