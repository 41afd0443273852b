"""Attacks on the web app: CSRF, script injection through corpora and vocabularies, the CSP,
path traversal in upload names, API floods and oversized input, a locked database, and the rate
limiter that every web process shares."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from tests.live import EMAIL, REPO, Client, LiveApp
from tests.webapp.conftest import PASSWORD, login_as, make_app
from tests.webapp.playground_samples import byte_bpe, store
from webapp.corpora.views import clean_filename
from webapp.store import db
from webapp.web import ratelimit
from webapp.web.config import SettingsError, parse_limit

EVIL = ["<script>alert(1)</script>", '"><img src=x onerror=alert(1)>', "\u202eevil\u200b\u200d"]


def test_templates_have_no_inline_script_handler_or_style() -> None:
    """What the CSP would block must not be in the templates in the first place."""
    for path in sorted((REPO / "templates").rglob("*.html")):
        text = path.read_text(encoding="utf-8")
        for tag in re.findall(r"<script\b[^>]*>", text):
            assert "src=" in tag, f"{path.name}: inline script {tag}"
        assert not re.search(r"\son[a-z]+\s*=", text), f"{path.name}: an on*= handler"
        assert not re.search(r"\sstyle\s*=", text), f"{path.name}: a style= attribute"


def test_every_page_sends_the_csp_and_security_headers(client: FlaskClient, anon_client: FlaskClient) -> None:
    for response in (client.get("/tokenizers"), anon_client.get("/login"), client.get("/nope")):
        csp = response.headers["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "style-src 'self'" in csp and "unsafe" not in csp
        assert "frame-ancestors 'none'" in csp and "object-src 'none'" in csp
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        assert response.headers["Referrer-Policy"] == "no-referrer"  # share tokens never leak


def test_every_form_post_needs_the_csrf_token(tmp_path: Path) -> None:
    app = make_app(tmp_path, f"sqlite:///{tmp_path / 'csrf.sqlite3'}", WTF_CSRF_ENABLED=True)
    client = login_as(app.test_client(), 1)
    posts = [r for r in app.url_map.iter_rules() if "POST" in r.methods and not r.endpoint.startswith("api.")]
    assert len(posts) >= 25
    for rule in posts:
        url = rule.build({a: 1 for a in rule.arguments} | {"token": "x" * 43, "text_token": "y" * 43})[1]
        response = client.post(url, data={"name": "x", "confirmed": "yes"})
        assert response.status_code == 400, f"POST {url} answered {response.status_code} without a token"
    anonymous = app.test_client().post("/login", data={"email": "alice@example.com", "password": "x"})
    assert anonymous.status_code == 400  # login forms too (login CSRF)
    page = client.get("/teams").get_data(as_text=True)
    header = re.search(r'hx-headers=\'\{"X-CSRFToken": "([^"]+)"\}\'', page).group(1)
    ok = client.post("/teams", data={"name": "Red team"}, headers={"X-CSRFToken": header})
    assert ok.status_code == 303
    db.get_engine(app).dispose()


def assert_escaped(html: str) -> None:
    assert "<script>alert" not in html
    assert "<img src=x" not in html and '"><img' not in html
    assert "onerror=alert(1)>" not in html.replace("onerror=alert(1)&gt;", "")


def test_corpus_text_and_name_are_escaped(client: FlaskClient) -> None:
    body = "\n".join(EVIL).encode("utf-8")
    name = "<img src=x onerror=alert(1)>.txt"  # (a '"' in a multipart filename is lost in transit)
    response = client.post("/corpora/", data={"files": [(io.BytesIO(body), name)]})
    assert response.status_code == 303
    for url in (response.headers["Location"], "/corpora/", "/train"):
        html = client.get(url).get_data(as_text=True)
        assert_escaped(html)
    html = client.get(response.headers["Location"]).get_data(as_text=True)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "\u202eevil\u200b\u200d" in html  # shown as text, inside the escaped preview
    assert "&lt;img src=x onerror=alert(1)&gt;.txt" in html


def test_imported_vocabulary_tokens_are_escaped(client: FlaskClient) -> None:
    vocab = "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "<script>", '"><img', "onerror>", "\u202e", "\u200b", "a"])
    response = client.post("/import", data={"kind": "vocab_txt", "name": "<script>evil</script>",
                                            "file": (io.BytesIO(vocab.encode("utf-8")), "vocab.txt")})
    assert response.status_code == 303, response.get_data(as_text=True)
    tokenizer_id = int(response.headers["Location"].split("/")[2])
    pages = [client.get(f"/tokenizers/{tokenizer_id}/vocab"),
             client.get(f"/tokenizers/{tokenizer_id}/vocab?q=%3Cscript%3E"),
             client.post(f"/tokenizers/{tokenizer_id}/encode", data={"text": '<script> "><img onerror> \u202e'}),
             client.get(f"/tokenizers/{tokenizer_id}/tokens/4"), client.get("/tokenizers")]
    for page in pages:
        assert page.status_code == 200
        html = page.get_data(as_text=True)
        assert "<script>" not in html.split("</head>", 1)[-1].replace('<script src=', ''), page.request.path
        assert '"><img' not in html
    assert "&lt;script&gt;" in pages[0].get_data(as_text=True)


@pytest.mark.parametrize(("raw", "expected"), [
    ("../../etc/passwd", "passwd"), ("..\\..\\windows\\win.ini", "win.ini"), ("/abs/path/x.txt", "x.txt"),
    ("a\x00b.txt", "ab.txt"), ("..", "upload"), ("", "upload"), ("report\u202etxt.exe", "reporttxt.exe"),
    ("line\nbreak.txt", "linebreak.txt"), ("x" * 300 + ".txt", "x" * 200),
], ids=["dotdot", "windows", "absolute", "nul", "only-dots", "empty", "rtl-override", "newline", "long"])
def test_upload_names_are_sanitised(raw: str, expected: str) -> None:
    assert clean_filename(raw) == expected


def test_a_traversal_name_stores_only_inside_the_store(app: Flask, client: FlaskClient, tmp_path: Path) -> None:
    response = client.post("/corpora/", data={"files": [(io.BytesIO(b"payload"), "../../../../escape.txt")]})
    assert response.status_code == 303
    assert "escape.txt" in client.get(response.headers["Location"]).get_data(as_text=True)
    outside = [p for p in tmp_path.rglob("*") if p.is_file() and Path(app.config["CORPUS_DIR"]) not in p.parents]
    assert all(p.read_bytes() != b"payload" for p in outside)
    assert not any(p.name == "escape.txt" for p in tmp_path.parent.rglob("escape.txt"))


def test_the_encode_api_is_rate_limited(app: Flask, client: FlaskClient) -> None:
    app.config["API_RATE_LIMIT"] = "3/60"
    ref = store(app, byte_bpe())
    codes = [client.post("/api/v1/encode", json={"tokenizer": ref, "text": "the"}).status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    refused = client.post("/api/v1/decode", json={"tokenizer": ref, "ids": [1]})
    assert refused.status_code == 429 and refused.get_json()["error"].startswith("Too many API calls.")
    assert refused.headers["Retry-After"].isdigit()
    assert client.get("/api/v1/tokenizers").status_code == 200  # listing is not limited


def test_encode_input_size_is_capped(app: Flask, client: FlaskClient) -> None:
    app.config["PLAYGROUND_MAX_CHARS"] = 100
    ref = store(app, byte_bpe())
    api = client.post("/api/v1/encode", json={"tokenizer": ref, "text": "a" * 101})
    assert api.status_code == 413 and "at most 100" in api.get_json()["error"]
    page = client.post(f"/tokenizers/{ref}/encode", data={"text": "a" * 101})
    assert page.status_code == 422 and "at most 100" in page.get_data(as_text=True)
    assert client.post("/api/v1/encode", json={"tokenizer": ref, "text": "a" * 100}).status_code == 200


def test_a_locked_database_is_a_503_with_a_sentence(app: Flask, client: FlaskClient) -> None:
    def locked() -> None:
        raise OperationalError("UPDATE jobs", {}, Exception("database is locked"))

    app.view_functions["training.job_list"] = locked
    app.view_functions["api.tokenizers"] = locked
    page = client.get("/jobs")
    assert page.status_code == 503
    assert "Nothing was lost; please try again" in page.get_data(as_text=True)
    assert "locked" not in page.get_data(as_text=True)
    api = client.get("/api/v1/tokenizers")
    assert api.status_code == 503 and "locked" not in api.get_json()["error"]


# The shared rate limiter (issue #11, finding 9) ---------------------------------------------------

class FakeClock:
    """Wall-clock seconds that only move when a test says so (at a window boundary to start)."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def limiter_on(app: Flask, clock: FakeClock) -> ratelimit.Limiter:
    with app.app_context():
        found = ratelimit.limiter()
    found.clock = clock
    return found


def test_the_window_slides_and_retry_after_is_exact(app: Flask) -> None:
    clock = FakeClock()  # 1_800_000_000 is a multiple of 100 s: a window starts here
    limiter = limiter_on(app, clock)
    limit = (4, 100.0)
    clock.now += 50
    assert [limiter.hit("k", limit) for _ in range(4)] == [None] * 4
    assert limiter.hit("k", limit) == pytest.approx(75.0)  # full; in the next window 3/4 of it slides out at 125
    clock.now += 50  # a new window: the previous one still weighs 4 × 1.0
    assert limiter.hit("k", limit) == pytest.approx(25.0)
    clock.now += 24.5
    assert limiter.hit("k", limit) == pytest.approx(0.5)
    clock.now += 0.5  # 4 × 0.75 + 0 + 1 = 4: room for exactly one
    assert limiter.hit("k", limit) is None
    assert limiter.hit("k", limit) is not None  # refused events are not counted...
    clock.now += 25  # ...so 4 × 0.5 + 1 + 1 = 4: one more fits
    assert limiter.hit("k", limit) is None
    assert limiter.hit("other", limit) is None  # keys are counted apart
    clock.now += 300  # two windows of silence: a fresh start
    assert [limiter.hit("k", limit) for _ in range(4)] == [None] * 4


def test_two_processes_share_the_counts_and_a_restart_forgets_nothing(app: Flask, tmp_path: Path) -> None:
    """Two apps on one database stand for two gunicorn workers; a third for a restarted one."""
    url = app.config["DATABASE_URL"]
    second = make_app(tmp_path / "second", url, seed=False, LOGIN_RATE_LIMIT="4/300")
    app.config["LOGIN_RATE_LIMIT"] = "4/300"
    one, two = app.test_client(), second.test_client()
    codes = [c.post("/login", data={"email": "alice@example.com", "password": "guess"}).status_code
             for c in (one, two, one, two, one, two)]
    assert codes == [401, 401, 401, 401, 429, 429]
    db.get_engine(second).dispose()
    restarted = make_app(tmp_path / "restarted", url, seed=False, LOGIN_RATE_LIMIT="4/300")
    again = restarted.test_client().post("/login", data={"email": "alice@example.com", "password": PASSWORD})
    assert again.status_code == 429
    db.get_engine(restarted).dispose()


def test_expired_rows_go_by_their_own_window_and_keys_are_not_stored(app: Flask) -> None:
    clock = FakeClock()
    limiter = limiter_on(app, clock)
    limiter.hit("login-email:alice@example.com", (10, 300.0))
    limiter.hit("api:ip:10.0.0.1", (600, 60.0))
    clock.now += 150  # past two API windows, inside the login window
    assert limiter.cleanup() == 1
    with db.get_engine(app).connect() as conn:
        rows = conn.execute(text("SELECT key, hits FROM rate_limits")).all()
    assert [hits for _key, hits in rows] == [1]  # the login row is left, with its count
    assert "alice" not in rows[0][0] and len(rows[0][0]) == 64  # only a digest of the key
    clock.now += 451  # now the login row's own two windows are over too
    assert limiter.cleanup() == 1


def test_sign_ups_are_limited_per_address(app: Flask) -> None:
    app.config.update(OPEN_SIGNUP=True, SIGNUP_RATE_LIMIT="2/3600")
    visitor = app.test_client()

    def signup(email: str) -> int:
        return visitor.post("/signup", data={"email": email, "name": "N", "password": "p" * 12,
                                             "confirm": "p" * 12}).status_code

    assert [signup("a@example.com"), signup("not-an-address"), signup("c@example.com")] == [303, 422, 429]
    refused = visitor.post("/signup", data={"email": "d@example.com"})
    retry = int(refused.headers["Retry-After"])
    assert 0 < retry <= 7200  # the sliding window counter frees a slot within two one-hour windows
    assert refused.status_code == 429
    assert f"Too many sign-ups from this address. Wait {retry} second" in refused.get_data(as_text=True)


@pytest.mark.parametrize("raw", ["10", "0/60", "10/0", "10/-1", "x/60", "10/nan", "10/inf", "2000000000/60"],
                         ids=["no-window", "zero-events", "zero-window", "negative", "words", "nan", "inf", "huge"])
def test_a_bad_rate_limit_setting_is_refused_with_its_value(raw: str) -> None:
    with pytest.raises(SettingsError, match=re.escape(repr(raw))):
        parse_limit(raw)


def test_backups_leave_the_rate_limit_counters_out(app: Flask, tmp_path: Path) -> None:
    from webapp.transfer.backup import backup, restore

    app.config["LOGIN_RATE_LIMIT"] = "1/300"
    app.test_client().post("/login", data={"email": "alice@example.com", "password": "guess"})
    archive = tmp_path / "backup.tar.gz"
    counts = backup(dict(app.config), archive)
    assert "rate_limits" not in counts and counts["users"] == 1
    target = {"DATABASE_URL": f"sqlite:///{tmp_path / 'restored.sqlite3'}", "CORPUS_DIR": str(tmp_path / "c")}
    assert restore(target, archive)["users"] == 1


@pytest.mark.slow
def test_gunicorn_workers_share_the_login_limit_across_a_restart(tmp_path: Path) -> None:
    live = LiveApp(tmp_path / "data", workers=2, threads=2, job_worker=False,
                   env={"TOKENFORGE_LOGIN_RATE_LIMIT": "4/300"})
    live.start()
    try:
        Client(live.url).signup()

        def attempt() -> int:
            client = Client(live.url)  # a new browser, a new connection: either worker answers
            return client.post("login", {"email": EMAIL, "password": "guess"}, token=client.token("login")).status

        assert [attempt() for _ in range(6)] == [401, 401, 401, 401, 429, 429]
        live.stop()
        live.start()
        assert attempt() == 429
    finally:
        live.stop()


def test_migration_0004_downgrades_keeping_the_accounts(app: Flask) -> None:
    from sqlalchemy import inspect

    app.test_client().post("/login", data={"email": "alice@example.com", "password": "guess"})
    url = app.config["DATABASE_URL"]
    db.get_engine(app).dispose()
    db.downgrade(url, "0003")
    engine = db.make_engine(url)
    try:
        with engine.connect() as conn:
            assert "rate_limits" not in inspect(conn).get_table_names()
            assert "session_generation" not in {c["name"] for c in inspect(conn).get_columns("users")}
            assert conn.execute(text("SELECT email FROM users")).scalars().all() == ["alice@example.com"]
    finally:
        engine.dispose()
    db.upgrade(url)
    assert app.test_client().post("/login", data={"email": "alice@example.com", "password": PASSWORD}).status_code == 303


def test_concurrent_hits_never_overshoot_the_limit(app: Flask) -> None:
    """The check and the count are one statement: racing callers get exactly the budget."""
    from concurrent.futures import ThreadPoolExecutor

    limiter = limiter_on(app, FakeClock())
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda _: limiter.hit("shared", (50, 100.0)), range(120)))
    assert answers.count(None) == 50
