"""Leaderboards (issue 15, item 2): a board of tokenizers × held-out corpora filled in by its job
with exactly the figures of ``engine.metrics.evaluate`` (what ``tokenforge eval`` prints), sorted,
exported as CSV, shared read-only, scoped to its team, cancelled, bounded, and with a failing
pair that fails alone. The job runs in its real ``spawn`` child (``run_queued_jobs``)."""

from __future__ import annotations

import csv
import html
import io
import re
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError

from engine.metrics import evaluate
from tests.hostile_patterns import SLOW
from tests.live import wait_for
from tests.webapp.conftest import add_corpus, add_user, login_as, run_queued_jobs
from tests.webapp.playground_samples import byte_bpe, store, unigram, wordpiece
from webapp.jobs import queue as jobs
from webapp.leaderboards import views as leaderboard_views
from webapp.leaderboards.child import evaluate_pairs
from webapp.leaderboards.job_kinds import enqueue_leaderboard
from webapp.leaderboards.leaderboard import SliceError, kept, read_slice
from webapp.store import db
from webapp.store.models import Corpus, Job, Leaderboard, ShareLink, Tokenizer

ENGLISH = "".join(f"the cat sat on the mat {i}\nhello world, unable to see {i % 5}\n" for i in range(40))
FRENCH = "".join(f"le thé est très chaud {i}\nl'été à Paris\n" for i in range(30))


@pytest.fixture
def setup(app: Flask) -> dict[str, list[int]]:
    """Three tokenizers and two corpora of team 1."""
    return {"tokenizers": [store(app, byte_bpe()), store(app, wordpiece()), store(app, unigram())],
            "corpora": [add_corpus(app, ENGLISH, "english.txt"), add_corpus(app, FRENCH, "french.txt")]}


def build(client: FlaskClient, tokenizer_ids: list[int], corpus_ids: list[int], **extra: str) -> int:
    response = client.post("/leaderboards", data={"tokenizer_ids": [str(i) for i in tokenizer_ids],
                                                  "corpus_ids": [str(i) for i in corpus_ids], **extra})
    assert response.status_code == 303, response.get_data(as_text=True)
    return int(response.headers["Location"].rsplit("/", 1)[1])


def board_row(app: Flask, board_id: int) -> Leaderboard:
    with app.app_context():
        board = db.get_session().get(Leaderboard, board_id)
        assert board is not None
        return board


def job_status(app: Flask, board_id: int) -> str:
    with app.app_context():
        return db.get_session().scalar(select(Job.status).join(Leaderboard, Leaderboard.job_id == Job.id)
                                       .where(Leaderboard.id == board_id))


def test_a_board_fills_in_with_the_figures_of_tokenforge_eval(app: Flask, client: FlaskClient,
                                                               setup: dict[str, list[int]]) -> None:
    board_id = build(client, setup["tokenizers"], setup["corpora"], name="Which is best?")
    page = client.get(f"/leaderboards/{board_id}").get_data(as_text=True)
    assert "0 of 6 pairs evaluated" in page and 'hx-trigger="every 1s"' in page
    run_queued_jobs(app)
    assert job_status(app, board_id) == "succeeded"
    board = board_row(app, board_id)
    samples = [byte_bpe(), wordpiece(), unigram()]
    for corpus_id, text in zip(setup["corpora"], (ENGLISH, FRENCH)):
        for tokenizer_id, tokenizer in zip(setup["tokenizers"], samples):
            assert board.results[f"{corpus_id}:{tokenizer_id}"] == kept(evaluate(tokenizer, text))
    # Pinned figures, so a change in both the board and evaluate cannot hide: the tiny BPE merges
    # "th" and the two bytes of "é" (30 and 90 times in FRENCH), one token per other byte.
    french_bpe = board.results[f"{setup['corpora'][1]}:{setup['tokenizers'][0]}"]
    assert (french_bpe["bytes"], french_bpe["tokens"], french_bpe["lossless"]) == (1310, 1310 - 30 - 90, True)
    page = client.get(f"/leaderboards/{board_id}").get_data(as_text=True)
    assert "6 of 6 pairs evaluated" in page and "hx-trigger" not in page
    assert page.count('<svg class="chart"') == 2
    assert client.get("/leaderboards").get_data(as_text=True).count("Which is best?") == 1


def test_the_slice_is_the_first_bytes_cut_at_a_line_and_the_text_link_gives_it(
        app: Flask, client: FlaskClient, tmp_path: Path) -> None:
    path = tmp_path / "c.txt"
    path.write_bytes(b"first line\nsecond \xc3\xa9t\xc3\xa9\nthird")
    assert read_slice(str(path), 10**6) == "first line\nsecond été\nthird"
    assert read_slice(str(path), 20) == "first line\n"  # the cap falls inside the second line
    assert read_slice(str(path), 4) == "firs"  # no boundary at all: the bytes that fit
    path.write_bytes("doc one<|endoftext|>doc two<|endoftext|>doc th".encode())
    assert read_slice(str(path), 40) == "doc one\ndoc two"
    path.write_bytes(b"ok \xff bad")
    with pytest.raises(SliceError, match="not valid UTF-8"):
        read_slice(str(path), 100)
    tokenizer_id = store(app, byte_bpe())
    corpus_id = add_corpus(app, ENGLISH, "english.txt")
    board_id = build(client, [tokenizer_id], [corpus_id], kib="1")
    text = client.get(f"/leaderboards/{board_id}/corpora/{corpus_id}/text").get_data(as_text=True)
    assert ENGLISH.startswith(text) and text.endswith("\n") and 1024 - 40 < len(text.encode()) <= 1024
    run_queued_jobs(app)
    assert board_row(app, board_id).results[f"{corpus_id}:{tokenizer_id}"] == kept(evaluate(byte_bpe(), text))


def test_tables_sort_by_a_column_through_the_address(app: Flask, client: FlaskClient,
                                                     setup: dict[str, list[int]]) -> None:
    board_id = build(client, setup["tokenizers"], setup["corpora"][:1])
    run_queued_jobs(app)
    results = board_row(app, board_id).results
    corpus = setup["corpora"][0]

    def order(query: str) -> list[int]:
        page = client.get(f"/leaderboards/{board_id}{query}").get_data(as_text=True)
        return [int(i) for i in re.findall(r'<tr data-tokenizer="(\d+)"', page)]

    # ``lossy=mixed``: purely by the column (the default ranks lossy pairs last: test_lossy_ranking.py)
    by_fertility = sorted(setup["tokenizers"], key=lambda t: results[f"{corpus}:{t}"]["fertility"])
    assert order("?sort=fertility&order=asc&lossy=mixed") == by_fertility
    assert order("?sort=fertility&order=desc&lossy=mixed") == by_fertility[::-1]
    by_bpt = sorted(setup["tokenizers"], key=lambda t: -results[f"{corpus}:{t}"]["bytes_per_token"])
    assert order("?lossy=mixed") == by_bpt  # bytes per token, best first
    assert order("?sort=nonsense&order=sideways&lossy=mixed") == by_bpt  # unknown values fall back, never a 500
    lossy = {t for t in setup["tokenizers"]
             if results[f"{corpus}:{t}"]["unk_rate"] or not results[f"{corpus}:{t}"]["lossless"]}
    assert order("") == [t for t in by_bpt if t not in lossy] + [t for t in by_bpt if t in lossy]
    assert order("?sort=tokenizer&lossy=mixed") == sorted(setup["tokenizers"], key=lambda t: ["tiny-bpe", "tiny-unigram",
                                                                                 "tiny-wordpiece"].index(
        {setup["tokenizers"][0]: "tiny-bpe", setup["tokenizers"][1]: "tiny-wordpiece",
         setup["tokenizers"][2]: "tiny-unigram"}[t]))


def test_csv_is_escaped_and_safe_from_formulas(app: Flask, client: FlaskClient) -> None:
    evil = store(app, byte_bpe(), name='=HYPERLINK("http://evil.example","x")')
    plain = store(app, byte_bpe(), name='comma, "quote"\nnewline')
    corpus_id = add_corpus(app, ENGLISH, "-minus.txt")
    board_id = build(client, [evil, plain], [corpus_id])
    run_queued_jobs(app)
    response = client.get(f"/leaderboards/{board_id}/csv")
    assert response.status_code == 200 and response.mimetype == "text/csv"
    assert "attachment" in response.headers["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.get_data(as_text=True))))
    assert [row["tokenizer"] for row in rows] == ['\'=HYPERLINK("http://evil.example","x")', 'comma, "quote"\nnewline']
    assert {row["corpus"] for row in rows} == {"'-minus.txt"}
    figures = kept(evaluate(byte_bpe(), ENGLISH))
    assert rows[0]["bytes_per_token"] == str(figures["bytes_per_token"]) and rows[0]["lossless"] == "yes"
    assert rows[0]["tokens"] == str(figures["tokens"]) and rows[0]["error"] == ""


def test_a_failing_pair_shows_its_error_and_the_others_fill_in(app: Flask, client: FlaskClient,
                                                               setup: dict[str, list[int]]) -> None:
    good, broken, _ = setup["tokenizers"]
    board_id = build(client, [good, broken], setup["corpora"])
    with app.app_context():
        session = db.get_session()
        session.execute(update(Tokenizer).where(Tokenizer.id == broken).values(tokenizer_json='{"model": 1}'))
        session.delete(session.get(Corpus, setup["corpora"][1]))
        session.commit()
    run_queued_jobs(app)
    assert job_status(app, board_id) == "succeeded"
    results = board_row(app, board_id).results
    english, french = setup["corpora"]
    assert results[f"{english}:{good}"] == kept(evaluate(byte_bpe(), ENGLISH))
    assert results[f"{english}:{broken}"]["error"].startswith("The tokenizer could not be loaded")
    assert results[f"{french}:{good}"] == {"error": "The corpus was deleted before the leaderboard ran."}
    page = html.unescape(client.get(f"/leaderboards/{board_id}").get_data(as_text=True))
    assert page.count('data-testid="pair-error"') == 3 and "The corpus was deleted before the leaderboard ran." in page


def test_evaluating_stops_between_pairs_when_cancelled() -> None:
    reported: list[str] = []
    calls = iter([False, False, True])  # before the tokenizer, before its first pair, before its second
    finished = evaluate_pairs([(1, None), (2, None)], [7], load=lambda _id: None, max_bytes=100, pair_seconds=1.0,
                              report=lambda key, _result: reported.append(key),
                              progress=lambda *_args: None, should_cancel=lambda: next(calls))
    assert finished is False and reported == ["1:7"]


def test_cancelling_a_queued_board_ends_its_job(app: Flask, client: FlaskClient,
                                                setup: dict[str, list[int]]) -> None:
    board_id = build(client, setup["tokenizers"][:1], setup["corpora"][:1])
    response = client.post(f"/leaderboards/{board_id}/cancel")
    assert response.status_code == 303
    assert job_status(app, board_id) == "cancelled"
    run_queued_jobs(app)  # nothing left to run
    assert board_row(app, board_id).results == {}
    assert "This leaderboard was cancelled" in client.get(f"/leaderboards/{board_id}").get_data(as_text=True)


@pytest.mark.parametrize(("field", "values", "message"), [
    ("kib", ["0"], "The slice must be a whole number of KiB from 1 to 1,024; got '0'."),
    ("kib", ["99999999999999999999"], "The slice must be a whole number of KiB from 1 to 1,024"),
    ("tokenizer_ids", [], "Choose at least one of the tokenizers."),
    ("tokenizer_ids", ["abc"], "One of the tokenizers chosen does not exist, or is not your team's."),
    ("tokenizer_ids", [str(i) for i in range(1, 14)], "Choose at most 12 tokenizers; 13 were chosen."),
    ("corpus_ids", ["999"], "One of the corpora chosen does not exist, or is not your team's."),
    ("corpus_ids", [str(i) for i in range(1, 8)], "Choose at most 6 corpora; 7 were chosen."),
], ids=["slice-zero", "slice-huge", "no-tokenizer", "bad-id", "too-many-tokenizers", "unknown-corpus",
        "too-many-corpora"])
def test_bad_choices_are_refused_with_a_sentence(app: Flask, client: FlaskClient, setup: dict[str, list[int]],
                                                 field: str, values: list[str], message: str) -> None:
    data: dict[str, object] = {"tokenizer_ids": [str(setup["tokenizers"][0])],
                               "corpus_ids": [str(setup["corpora"][0])], field: values}
    response = client.post("/leaderboards", data=data)
    assert response.status_code == 422
    assert message in html.unescape(response.get_data(as_text=True))
    with app.app_context():
        assert db.get_session().scalar(select(Leaderboard.id)) is None


def test_the_new_board_form_offers_a_bounded_number_of_tokenizers_and_corpora(
        app: Flask, client: FlaskClient, setup: dict[str, list[int]], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(leaderboard_views, "PICKER_ROWS", 2)
    page = client.get("/leaderboards").get_data(as_text=True)
    offered = lambda name: [int(i) for i in re.findall(rf'name="{name}" value="(\d+)"', page)]  # noqa: E731
    assert offered("tokenizer_ids") == setup["tokenizers"][:0:-1]  # the newest two
    assert offered("corpus_ids") == setup["corpora"][::-1]


def test_the_team_queue_cap_counts_boards_with_trainings(app: Flask, client: FlaskClient,
                                                         setup: dict[str, list[int]]) -> None:
    app.config["MAX_QUEUED_JOBS"] = 2
    with app.app_context():
        jobs.enqueue(db.get_session(), team_id=1, name="t", algorithm="bpe", options={},
                     corpus_ids=setup["corpora"][:1])
    build(client, setup["tokenizers"][:1], setup["corpora"][:1])
    refused = client.post("/leaderboards", data={"tokenizer_ids": [str(setup["tokenizers"][0])],
                                                 "corpus_ids": [str(setup["corpora"][0])]})
    assert refused.status_code == 429
    assert ("Your team already has 2 jobs (trainings and leaderboards) waiting; cancel one, or wait until one "
            "starts, then try again." in html.unescape(refused.get_data(as_text=True)))
    with app.app_context():
        assert len(db.get_session().scalars(select(Leaderboard)).all()) == 1


def test_another_teams_board_is_a_404_everywhere(app: Flask, client: FlaskClient,
                                                  setup: dict[str, list[int]]) -> None:
    board_id = build(client, setup["tokenizers"][:1], setup["corpora"][:1])
    bob, bob_team = add_user(app, "bob@example.com", "Bob")
    bob_client = login_as(app.test_client(), bob)
    corpus = setup["corpora"][0]
    for method, path in [("get", f"/leaderboards/{board_id}"), ("get", f"/leaderboards/{board_id}/csv"),
                         ("get", f"/leaderboards/{board_id}/corpora/{corpus}/text"),
                         ("post", f"/leaderboards/{board_id}/cancel"), ("post", f"/leaderboards/{board_id}/share"),
                         ("post", f"/leaderboards/{board_id}/share/1/revoke"),
                         ("post", f"/leaderboards/{board_id}/delete")]:
        assert getattr(bob_client, method)(path).status_code == 404, path
    assert "english.txt" not in bob_client.get("/leaderboards").get_data(as_text=True)
    # Bob cannot build a board of Alice's tokenizers or corpora either.
    bob_corpus = add_corpus(app, ENGLISH, "bob.txt", team_id=bob_team)
    refused = bob_client.post("/leaderboards", data={"tokenizer_ids": [str(setup["tokenizers"][0])],
                                                     "corpus_ids": [str(bob_corpus)]})
    assert refused.status_code == 422
    assert job_status(app, board_id) == "queued"  # Bob's cancel did nothing


def test_a_share_link_shows_the_board_read_only_until_revoked(app: Flask, client: FlaskClient,
                                                              anon_client: FlaskClient,
                                                              setup: dict[str, list[int]]) -> None:
    board_id = build(client, setup["tokenizers"][:2], setup["corpora"][:1], name="Shared board")
    run_queued_jobs(app)
    assert client.post(f"/leaderboards/{board_id}/share", data={"days": "x"}).status_code == 422
    assert client.post(f"/leaderboards/{board_id}/share", data={"days": "7"}).status_code == 303
    response = client.get(f"/leaderboards/{board_id}")
    assert response.headers["Cache-Control"] == "no-store"  # the page lists the links
    page = response.get_data(as_text=True)
    url = re.search(r'data-testid="share-url">([^<]+)<', page).group(1).replace("http://localhost", "")
    shared = anon_client.get(url).get_data(as_text=True)
    assert "Shared board" in shared and 'data-testid="shared-banner"' in shared
    assert "Create a link" not in shared and "/cancel" not in shared and "/corpora/" not in shared
    exported = anon_client.get(url + "?format=csv")
    assert exported.mimetype == "text/csv" and len(list(csv.DictReader(io.StringIO(exported.get_data(as_text=True))))) == 2
    assert anon_client.get(url + "/vocab").status_code == 404  # a board's link opens no tokenizer page
    assert anon_client.get(f"/leaderboards/{board_id}").status_code in (302, 303)  # the team page still needs a login
    with app.app_context():
        link_id = db.get_session().scalar(select(ShareLink.id).where(ShareLink.leaderboard_id == board_id))
    assert client.post(f"/leaderboards/{board_id}/share/{link_id}/revoke").status_code == 303
    assert anon_client.get(url).status_code == 410


def test_a_share_link_points_at_exactly_one_thing(db_app: Flask) -> None:
    with db_app.app_context():
        session = db.get_session()
        session.add(ShareLink(tokenizer_id=None, leaderboard_id=None, token="t" * 43))
        with pytest.raises(IntegrityError):
            session.commit()


def test_the_migration_goes_down_without_boards_and_up_again(db_app: Flask) -> None:
    url = db_app.config["DATABASE_URL"]
    tokenizer_id = store(db_app, byte_bpe())
    with db_app.app_context():
        session = db.get_session()
        corpus = Corpus(team_id=1, name="c", sha256="0" * 64, format="txt", stats={})
        session.add(corpus)
        session.flush()
        board = Leaderboard(team_id=1, name="b", tokenizers=[{"id": tokenizer_id, "name": "x"}],
                            corpora=[{"id": corpus.id, "name": "c"}], max_bytes=1024, results={})
        enqueue_leaderboard(session, board, options={"max_bytes": 1024, "pair_seconds": 1.0})
        session.add_all([ShareLink(leaderboard_id=board.id, token="b" * 43),
                         ShareLink(tokenizer_id=tokenizer_id, token="a" * 43)])
        session.commit()
    db.get_engine(db_app).dispose()
    db.downgrade(url, "0005")
    engine = db.make_engine(url)
    with engine.connect() as conn:
        from sqlalchemy import inspect, text

        assert "leaderboards" not in inspect(conn).get_table_names()
        assert conn.execute(text("SELECT token FROM share_links")).scalars().all() == ["a" * 43]
        assert conn.execute(text("SELECT count(*) FROM jobs WHERE kind = 'leaderboard'")).scalar() == 0
    engine.dispose()
    db.upgrade(url)


def test_a_pair_is_bounded_by_the_engine_time_budget_and_the_next_pair_still_runs(tmp_path: Path) -> None:
    from engine import byte_level_bpe
    from engine.pretokenizers import RegexSplit

    vocab = {b: bytes([b]) for b in range(256)}
    slow = byte_level_bpe(vocab, [], pretokenizer=RegexSplit(SLOW))  # backtracks on commas
    text = "," * 2000
    path = tmp_path / "commas.txt"
    path.write_text(text, encoding="utf-8")
    reported: dict[str, dict] = {}
    documents = {5: slow.to_json(), 6: byte_bpe().to_json()}
    finished = evaluate_pairs([(1, str(path))], [5, 6], load=documents.get, max_bytes=10_000,
                              pair_seconds=0.2, report=reported.__setitem__, progress=lambda *_args: None,
                              should_cancel=lambda: False)
    assert finished is True
    assert reported["1:5"]["error"].startswith("The pre-tokenizer pattern took longer than 0.2 s on this text")
    assert reported["1:6"] == kept(evaluate(byte_bpe(), text))


def test_cancelling_a_running_board_stops_its_child_and_keeps_the_pairs_done(
        app: Flask, client: FlaskClient) -> None:
    import threading

    from engine import byte_level_bpe
    from engine.pretokenizers import RegexSplit
    from webapp.jobs.worker import Worker

    vocab = {b: bytes([b]) for b in range(256)}
    slow = store(app, byte_level_bpe(vocab, [], pretokenizer=RegexSplit(SLOW)), name="slow")
    fast = store(app, byte_bpe())
    corpus = add_corpus(app, "," * 2000, "commas.txt")
    app.config.update(LEADERBOARD_PAIR_SECONDS=120, CANCEL_GRACE_SECONDS=1)
    board_id = build(client, [fast, slow], [corpus])
    worker = Worker(dict(app.config), worker_id="test-worker")
    thread = threading.Thread(target=worker.run, kwargs={"once": True})
    thread.start()
    try:
        # Once the fast pair is in, the slow pair is running.
        wait_for(lambda: f"{corpus}:{fast}" in board_row(app, board_id).results, "the fast pair", limit=60)
        assert client.post(f"/leaderboards/{board_id}/cancel").status_code == 303
        thread.join(timeout=60)
        assert not thread.is_alive()
    finally:
        worker.stop()
        thread.join()
        worker.engine.dispose()
    assert job_status(app, board_id) == "cancelled"
    assert set(board_row(app, board_id).results) == {f"{corpus}:{fast}"}
    page = client.get(f"/leaderboards/{board_id}").get_data(as_text=True)
    assert "This leaderboard was cancelled" in page and "1 of 2 pairs evaluated" in page


def test_deleting_a_board_cancels_its_job_and_ends_its_links(app: Flask, client: FlaskClient,
                                                             anon_client: FlaskClient,
                                                             setup: dict[str, list[int]]) -> None:
    board_id = build(client, setup["tokenizers"][:1], setup["corpora"][:1])
    client.post(f"/leaderboards/{board_id}/share", data={"days": ""})
    with app.app_context():
        token = db.get_session().scalar(select(ShareLink.token).where(ShareLink.leaderboard_id == board_id))
        job_id = db.get_session().scalar(select(Leaderboard.job_id).where(Leaderboard.id == board_id))
    assert anon_client.get(f"/s/{token}").status_code == 200
    response = client.post(f"/leaderboards/{board_id}/delete")
    assert response.status_code == 303 and response.headers["Location"].endswith("/leaderboards")
    assert client.get(f"/leaderboards/{board_id}").status_code == 404
    assert anon_client.get(f"/s/{token}").status_code == 404
    with app.app_context():
        assert db.get_session().get(Job, job_id).status == "cancelled"
        assert db.get_session().get(Tokenizer, setup["tokenizers"][0]) is not None


def test_a_board_never_reads_another_teams_tokenizer_or_corpus_whatever_its_ids(
        app: Flask, setup: dict[str, list[int]]) -> None:
    _bob, bob_team = add_user(app, "bob@example.com", "Bob")
    bobs_tokenizer = store(app, byte_bpe(), team_id=bob_team)
    bobs_corpus = add_corpus(app, ENGLISH, "bob.txt", team_id=bob_team)
    with app.app_context():
        session = db.get_session()
        board = Leaderboard(team_id=1, name="forged", max_bytes=1024, results={},
                            tokenizers=[{"id": bobs_tokenizer, "name": "b"}, {"id": setup["tokenizers"][0], "name": "a"}],
                            corpora=[{"id": bobs_corpus, "name": "b"}, {"id": setup["corpora"][0], "name": "a"}])
        enqueue_leaderboard(session, board, options={"max_bytes": 1024, "pair_seconds": 5.0})
        board_id = board.id
    run_queued_jobs(app)
    results = board_row(app, board_id).results
    mine, alices_corpus = setup["tokenizers"][0], setup["corpora"][0]
    assert results[f"{alices_corpus}:{bobs_tokenizer}"] == {"error": "The tokenizer was deleted before the leaderboard ran."}
    assert results[f"{bobs_corpus}:{mine}"] == {"error": "The corpus was deleted before the leaderboard ran."}
    assert "error" not in results[f"{alices_corpus}:{mine}"]


def test_boards_share_the_fair_queue(app: Flask, setup: dict[str, list[int]]) -> None:
    _bob, bob_team = add_user(app, "bob@example.com", "Bob")
    bobs_corpus = add_corpus(app, ENGLISH, "bob.txt", team_id=bob_team)

    def board(team_id: int, corpus_id: int) -> int:
        with app.app_context():
            row = Leaderboard(team_id=team_id, name="b", max_bytes=1024, results={},
                              tokenizers=[{"id": setup["tokenizers"][0], "name": "a"}],
                              corpora=[{"id": corpus_id, "name": "c"}])
            return enqueue_leaderboard(db.get_session(), row, options={"max_bytes": 1024, "pair_seconds": 1.0}).id

    first, second = board(1, setup["corpora"][0]), board(1, setup["corpora"][0])
    bobs = board(bob_team, bobs_corpus)
    with app.app_context():
        session = db.get_session()
        assert jobs.claim(session, "w1") == first  # the oldest, no team running anything
        assert jobs.claim(session, "w2") == bobs  # then Bob's, whose team runs nothing, before Alice's second
        assert jobs.claim(session, "w3") == second
        assert jobs.claim(session, "w4", kinds=("analyse",)) is None  # the analysis lane never takes a board


def test_deleting_a_teams_data_deletes_its_boards(app: Flask, client: FlaskClient,
                                                  setup: dict[str, list[int]]) -> None:
    from webapp.access.teams import delete_team_data

    build(client, setup["tokenizers"][:1], setup["corpora"][:1])
    with app.app_context():
        counts = delete_team_data(db.get_session(), 1)
        assert counts["leaderboards"] == 1 and db.get_session().scalar(select(Leaderboard.id)) is None
