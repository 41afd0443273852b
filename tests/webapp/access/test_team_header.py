"""Teams as a member sees them (issue 24, finding 8): the current team in the header with a
switcher, a team column on lists that mix teams, a flash that says where work goes after
starting a team, no "Leave" for a team's only member or only owner, and a copy button on invite links."""

from __future__ import annotations

import html
import io
import re

from flask import Flask
from flask.testing import FlaskClient

from tests.webapp.conftest import add_user, login_as
from tests.webapp.playground_samples import byte_bpe, store


def page(client: FlaskClient, path: str) -> str:
    return html.unescape(client.get(path).get_data(as_text=True))


def flashes(text: str) -> list[str]:
    return re.findall(r'<p class="flash" role="status">([^<]*)</p>', text)


def start_team(client: FlaskClient, name: str) -> str:
    response = client.post("/teams", data={"name": name}, follow_redirects=True)
    assert response.status_code == 200
    return html.unescape(response.get_data(as_text=True))


def header_choice(text: str) -> tuple[list[str], str]:
    """The header switcher's team names and the selected one."""
    select = text.split('data-testid="current-team-select">', 1)[1].split("</select>", 1)[0]
    names = re.findall(r"<option value=\"\d+\"(?: selected)?>([^<]*)</option>", select)
    chosen = re.findall(r"<option value=\"\d+\" selected>([^<]*)</option>", select)
    return names, chosen[0]


def test_the_header_names_the_one_team(client: FlaskClient) -> None:
    text = page(client, "/tokenizers")
    assert re.search(r'<a href="/teams/1" data-testid="current-team">Alice\'s team</a>', text)
    assert 'data-testid="team-switch"' not in text  # nothing to switch to


def test_starting_a_team_switches_to_it_and_says_so(client: FlaskClient) -> None:
    text = start_team(client, "Lab")
    assert flashes(text) == ["You started “Lab”. New corpora, trainings and imports now go to it, no longer "
                             "to “Alice's team”; switch teams at the top of any page."]
    assert header_choice(text) == (["Alice's team", "Lab"], "Lab")
    client.post("/corpora/", data={"files": [(io.BytesIO(b"a b c"), "c.txt")]}, content_type="multipart/form-data")
    assert "1 corpora" in page(client, "/teams/2") and "0 corpora" in page(client, "/teams/1")  # it went to Lab


def test_the_header_switch_is_a_post_back_to_the_page(client: FlaskClient) -> None:
    start_team(client, "Lab")
    text = page(client, "/corpora/?x=1")
    form = text[text.rindex("<form", 0, text.index('data-testid="team-switch"')):].split("</form>", 1)[0]
    assert 'method="post" action="/account/team"' in form and 'name="csrf_token"' in form
    assert 'name="next" value="/corpora/?x=1"' in form
    response = client.post("/account/team", data={"team_id": "1", "next": "/corpora/"})
    assert (response.status_code, response.headers["Location"]) == (303, "/corpora/")
    text = page(client, "/corpora/")
    assert flashes(text) == ["New corpora, trainings and imports now go to “Alice's team”."]
    assert header_choice(text)[1] == "Alice's team"
    assert client.post("/account/team", data={"team_id": "99", "next": "/corpora/"}).status_code == 404


def test_lists_of_several_teams_name_each_rows_team(app: Flask, client: FlaskClient) -> None:
    store(app, byte_bpe("ours"), team_id=1)
    text = page(client, "/tokenizers")
    assert "<th>Team</th>" not in text  # one team: the column would say the same on every row
    start_team(client, "Lab")
    store(app, byte_bpe("theirs"), team_id=2)
    client.post("/corpora/", data={"files": [(io.BytesIO(b"a b c"), "lab.txt")]}, content_type="multipart/form-data")
    client.post("/account/team", data={"team_id": "1"})
    client.post("/corpora/", data={"files": [(io.BytesIO(b"d e f"), "home.txt")]}, content_type="multipart/form-data")
    rows = re.findall(r'data-carry-text>([^<]+)</a></td><td data-testid="tokenizer-team">([^<]*)</td>',
                      page(client, "/tokenizers"))
    assert rows == [("theirs", "Lab"), ("ours", "Alice's team")]
    corpora = re.findall(r'>([^<]+\.txt)</a></td><td data-testid="corpus-team">([^<]*)</td>', page(client, "/corpora/"))
    assert corpora == [("home.txt", "Alice's team"), ("lab.txt", "Lab")]


def test_a_sole_member_or_sole_owner_is_not_offered_leave(app: Flask, client: FlaskClient) -> None:
    text = page(client, "/teams/1")
    assert 'data-testid="leave-team"' not in text
    assert "You are its only member, so there is no leaving it: it is your only team; close your account to go." \
        in re.sub(r"<[^>]+>", "", text)
    bob, _ = add_user(app, "bob@example.com", "Bob", team_id=1, role="member")
    text = page(client, "/teams/1")
    assert 'data-testid="leave-team"' not in text
    assert "You are its only owner: make another member an owner before you leave." in text
    bob_text = page(login_as(app.test_client(), bob), "/teams/1")
    assert bob_text.count('data-testid="leave-team"') == 1
    client.post(f"/teams/1/members/{bob}/role", data={"role": "owner"})
    assert page(client, "/teams/1").count('data-testid="leave-team"') == 1  # another owner: Alice may go


def test_invite_links_have_a_copy_button_and_revoking_asks(client: FlaskClient) -> None:
    client.post("/teams/1/invites")
    text = page(client, "/teams/1")
    code = re.search(r'<code id="(invite-url-\d+)" data-testid="invite-url">http://localhost/join/[\w-]{43}</code>', text)
    assert code
    assert f'<button type="button" class="small" data-copy="#{code.group(1)}" data-testid="copy-invite-url">Copy link</button>' in text
    assert 'data-confirm="Revoke this invite link? Nobody can join with it afterwards."' in text
