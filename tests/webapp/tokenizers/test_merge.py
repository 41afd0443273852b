"""The merge page: both policies' costs before anything is stored, the saved merge, scoping and refusals."""

from __future__ import annotations

import re

import pytest
from flask import Flask
from flask.testing import FlaskClient

from engine.tokenizer import Tokenizer
from tests.webapp.conftest import add_user
from tests.webapp.playground_samples import byte_bpe, chinese_unigram, store, unigram
from webapp.tokenizers import merge_views


@pytest.fixture
def ids(app: Flask) -> dict[str, int]:
    _, bobs_team = add_user(app, "bob@example.com", "Bob")
    return {"base": store(app, unigram()), "donor": store(app, chinese_unigram()), "bytes": store(app, byte_bpe("bytes")),
            "bobs": store(app, chinese_unigram(), team_id=bobs_team)}


def rows(app: Flask) -> int:
    from sqlalchemy import func, select

    from webapp.store.db import get_session
    from webapp.store.models import Tokenizer as Row

    with app.app_context():
        return get_session().scalar(select(func.count()).select_from(Row)) or 0


def test_the_costs_of_both_policies_come_first_and_nothing_is_stored(app: Flask, client: FlaskClient,
                                                                     ids: dict[str, int]) -> None:
    assert client.get(f"/tokenizers/merge?a={ids['base']}&b={ids['donor']}").status_code == 200
    before = rows(app)
    form = {"a": ids["base"], "b": ids["donor"], "reference": "the cat\nthe", "held_out": "中国人\n中国", "action": "preview"}
    response = client.post("/tokenizers/merge", data=form)
    html = response.get_data(as_text=True)
    assert response.status_code == 200 and rows(app) == before
    for policy in ("zero", "after"):
        row = re.search(rf'<tr data-testid="merge-cost-{policy}">(.*?)</tr>', html, re.S)
        assert row is not None
        cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row.group(1), re.S)]
        # ▁中国, 中, 国 and 人 appended (▁ and ▁the the base has); English untouched; Chinese 4 tokens to 3
        assert cells[:5] == [policy, "4 (ids 10 to 13)", "2", "0", "0 of 2"], cells
        assert cells[6] == "0.8 → 0.6"  # ▁ <unk> twice; then ▁中国 人, ▁中国
    assert 'data-testid="merge-save"' in html
    assert 'data-testid="merge-zero-ties"' not in html  # a Unigram base: scores, no merge list to tie


def test_saving_stores_the_chosen_merge_in_the_team(app: Flask, client: FlaskClient, ids: dict[str, int]) -> None:
    form = {"a": ids["base"], "b": ids["donor"], "reference": "", "held_out": "", "policy": "after", "action": "save"}
    response = client.post("/tokenizers/merge", data=form)
    assert response.status_code == 303
    new_id = int(re.search(r"/tokenizers/(\d+)", response.headers["Location"]).group(1))  # type: ignore[union-attr]
    from webapp.store.db import get_session
    from webapp.store.models import Tokenizer as Row

    with app.app_context():
        row = get_session().get(Row, new_id)
        assert row is not None and row.team_id == 1 and row.name == "tiny-unigram + donor (after)"
        assert row.config["algorithm"] == "merge" and row.config["report"]["pieces_added"] == 4
        merged = Tokenizer.from_json(row.tokenizer_json)
    assert merged.model.pieces()[:10] == unigram().model.pieces()
    assert [p for p, _ in merged.model.pieces()[10:]] == ["▁中国", "中", "国", "人"]
    assert {s for _, s in merged.model.pieces()[10:]} == {-3.5}  # "after": the base's lowest score
    assert merged.encode("中国人") == [10, 13]
    assert client.get(response.headers["Location"]).status_code == 200
    page = client.get(f"/tokenizers/{new_id}").get_data(as_text=True)  # the report, as an extension's
    assert "Merge of donor's pieces into" in page and 'data-testid="merge-policy">after<' in page
    assert 'data-testid="pieces-added">4<' in page
    assert f'href="/tokenizers/diff?a={ids["base"]}&amp;b={new_id}"' in page


def test_refusals(app: Flask, client: FlaskClient, ids: dict[str, int], monkeypatch: pytest.MonkeyPatch) -> None:
    def post(**form: object) -> tuple[int, str]:
        response = client.post("/tokenizers/merge", data={"action": "preview", **form})
        return response.status_code, response.get_data(as_text=True)

    assert post(a=ids["base"], b=ids["bobs"])[0] == 404  # another team's tokenizer
    assert post(a=ids["base"], b="x")[0] == 404
    status, html = post(a=ids["bytes"], b=ids["donor"])
    assert status == 422 and "The base is a byte-level bpe tokenizer; merging vocabularies supports" in html
    status, html = post(a=ids["base"], b=ids["base"])
    assert status == 422 and "The donor has no piece the base lacks" in html
    assert post(a=ids["base"])[0] == 422
    monkeypatch.setattr(merge_views, "MERGE_MAX_APPENDED", 2)
    status, html = post(a=ids["base"], b=ids["donor"])
    assert status == 422 and re.search(r"pieces the base lacks; at most 2 may be appended here\. tokenforge merge on "
                                       r"the command line has no such bound\.", html)
    monkeypatch.undo()
    app.config["PLAYGROUND_MAX_CHARS"] = 10
    status, html = post(a=ids["base"], b=ids["donor"], reference="x" * 11)
    assert status == 422 and "The reference text has 11 characters; measure at most 10." in html
    before = rows(app)
    app.config["PLAYGROUND_MAX_CHARS"] = 100
    app.config["TEAM_TOKENIZER_BYTES"] = 1
    status, html = post(a=ids["base"], b=ids["donor"], action="save")
    assert status == 413 and rows(app) == before
