"""The teams blueprint: team pages, members, invite links, leaving, and deleting a team's data.

Owners invite (links expire after ``INVITE_DAYS``), promote and remove members, and delete the
team's data or the team itself; members can leave. A team always keeps an owner: the last
owner cannot leave or be removed while others remain (promote someone first). Deleting data
removes the database rows and every corpus file no other corpus still uses; a deletion that
would be refused (your only team) is refused before anything is deleted.

Every account keeps a team: a member whose last team is deleted, or who is removed from it,
gets a fresh team of their own (:func:`keep_a_team`), as at sign-up. A member may create at
most ``MAX_TEAMS_PER_MEMBER`` teams (counted as the teams they own); one more is a 429 naming
the setting, checked after the insert so that parallel requests cannot pass it together.

Joining by invite is always a logged-in user's explicit, CSRF-protected click on the invite's
page: opening a link while logged out only lets the visitor sign up, and logging in or
signing up never joins a team by itself. Joining does not change the working team either, so
nothing of yours goes to the new team until you choose it. Starting a team does switch to it,
and its flash says so, naming the team work went to before (the header shows the current team).

Left out: accounts and sessions (``accounts.py``), scoping (``auth.py``).
"""

from __future__ import annotations

import datetime as dt

from flask import Blueprint, abort, current_app, flash, redirect, request, session, url_for
from flask_login import current_user
from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session
from werkzeug.wrappers import Response

from webapp.access import auth
from webapp.access.forms import DeleteTeamForm, RoleForm, TeamForm
from webapp.corpora.storage import CorpusStore
from webapp.store.db import get_session
from webapp.store.models import Corpus, Invite, Job, Leaderboard, Membership, Team, Tokenizer, User, utcnow
from webapp.web.filters import quoted
from webapp.web.forms import MAX_NAME
from webapp.web.htmx import render

bp = Blueprint("teams", __name__)


def my_memberships() -> list[tuple[Membership, Team]]:
    """The current user's memberships with their teams, by team name."""
    rows = get_session().execute(
        select(Membership, Team).join(Team, Team.id == Membership.team_id)
        .where(Membership.user_id == current_user.id).order_by(Team.name, Team.id))
    return [(m, t) for m, t in rows]


def invite_from_session() -> Invite | None:
    """The usable invite whose link this visitor opened, if any."""
    token = session.get("invite")
    if not isinstance(token, str):
        return None
    invite = get_session().scalar(select(Invite).where(Invite.token == token))
    return invite if invite is not None and invite.usable() else None


def accept_invite(db: Session, invite: Invite, user: User) -> int:
    """Make ``user`` a member of the invite's team (once); return the team id."""
    exists = db.scalar(select(Membership.id).where(Membership.team_id == invite.team_id,
                                                   Membership.user_id == user.id))
    if exists is None:
        db.add(Membership(team_id=invite.team_id, user_id=user.id, role="member"))
        invite.uses += 1
    return invite.team_id


def personal_team(db: Session, user: User) -> Team:
    """A new team owned by ``user`` alone, named after them: sign-up's, and the one an account
    gets when it loses its last team."""
    team = Team(name=f"{user.name}'s team"[:MAX_NAME])
    db.add(team)
    db.flush()
    db.add(Membership(team_id=team.id, user_id=user.id, role="owner"))
    return team


def keep_a_team(db: Session, user_ids: set[int]) -> list[User]:
    """Give each of ``user_ids`` who is now in no team a personal team; return those users.

    Without one, the account page and every upload would be refused: a team is where work goes.
    """
    if not user_ids:
        return []
    still_in = set(db.scalars(select(Membership.user_id).where(Membership.user_id.in_(user_ids))))
    left = list(db.scalars(select(User).where(User.id.in_(user_ids - still_in)).order_by(User.id)))
    for user in left:
        personal_team(db, user)
    return left


def _member_ids(db: Session, team_id: int) -> set[int]:
    return set(db.scalars(select(Membership.user_id).where(Membership.team_id == team_id)))


def claim_orphan_teams(db: Session, user: User) -> None:
    """Make ``user`` the owner of teams without members (data from before accounts existed)."""
    members = select(Membership.team_id)
    for team_id in db.scalars(select(Team.id).where(Team.id.not_in(members))):
        db.add(Membership(team_id=team_id, user_id=user.id, role="owner"))


def delete_team_data(db: Session, team_id: int) -> dict[str, int]:
    """Delete a team's leaderboards, jobs, tokenizers and corpora, and the corpus files nobody else uses."""
    shas = set(db.scalars(select(Corpus.sha256).where(Corpus.team_id == team_id)))
    counts = {
        "leaderboards": db.execute(delete(Leaderboard).where(Leaderboard.team_id == team_id)).rowcount,
        "tokenizers": db.execute(delete(Tokenizer).where(Tokenizer.team_id == team_id)).rowcount,
        "jobs": db.execute(delete(Job).where(Job.team_id == team_id)).rowcount,  # a running job's
        # worker notices at its next heartbeat that the row is gone and stops training
        "corpora": db.execute(delete(Corpus).where(Corpus.team_id == team_id)).rowcount,
    }
    db.commit()
    remove_unused_files(db, shas)
    return counts


def remove_unused_files(db: Session, shas: set[str]) -> None:
    """Delete the stored corpus objects among ``shas`` that no corpus row refers to any more."""
    store = CorpusStore(current_app.config["CORPUS_DIR"])
    for sha in shas:
        if not db.scalar(select(func.count()).select_from(Corpus).where(Corpus.sha256 == sha)):
            store.delete(sha)


def close_account(db: Session, user: User) -> str | None:
    """Delete ``user``; teams they alone belong to go too. Return why not, if it cannot be done."""
    for membership, team in my_memberships():
        others = db.scalar(select(func.count()).select_from(Membership).where(
            Membership.team_id == team.id, Membership.user_id != user.id))
        other_owners = db.scalar(select(func.count()).select_from(Membership).where(
            Membership.team_id == team.id, Membership.user_id != user.id, Membership.role == "owner"))
        if others and membership.role == "owner" and not other_owners:
            return (f"You are the only owner of {quoted(team.name)}, which has other members. Make one of "
                    "them an owner, or remove them, before closing your account.")
    for membership, team in my_memberships():
        alone = not db.scalar(select(func.count()).select_from(Membership).where(
            Membership.team_id == team.id, Membership.user_id != user.id))
        if alone:
            delete_team_data(db, team.id)
            db.execute(delete(Team).where(Team.id == team.id))
    db.execute(delete(User).where(User.id == user.id))
    db.commit()
    return None


def _team_or_404(team_id: int, *, owner: bool = False) -> Team:
    role = auth.role_in(team_id)
    if role is None:
        abort(404)
    if owner and role != "owner":
        abort(403)
    team = get_session().get(Team, team_id)
    if team is None:
        abort(404)
    return team


def _back(team_id: int) -> Response:
    return redirect(url_for("teams.show", team_id=team_id), 303)


@bp.get("/teams")
def index() -> Response:
    """Your teams, and a form to start a new one."""
    return render("teams/index.html", memberships=my_memberships(), error=None)


@bp.post("/teams")
def create() -> Response:
    """Start a new team, owned by you."""
    form = TeamForm()
    if not form.validate():
        return render("teams/index.html", memberships=my_memberships(), status=422, error=form.name.errors[0])
    db = get_session()
    # PostgreSQL: one creation per member at a time (the row lock); SQLite serialises writers,
    # and the count below runs after this request's insert holds the write lock.
    db.scalar(select(User.id).where(User.id == current_user.id).with_for_update())
    team = Team(name=form.name.data)
    db.add(team)
    db.flush()
    db.add(Membership(team_id=team.id, user_id=current_user.id, role="owner"))
    db.flush()
    most = int(current_app.config["MAX_TEAMS_PER_MEMBER"])
    owned = db.scalar(select(func.count()).select_from(Membership).where(
        Membership.user_id == current_user.id, Membership.role == "owner"))
    if owned > most:
        db.rollback()
        return render("teams/index.html", memberships=my_memberships(), status=429,
                      error=f"You already own {owned - 1:,} teams, the most one member may create "
                            f"(TOKENFORGE_MAX_TEAMS_PER_MEMBER is {most:,}). Delete a team you no longer "
                            "need, or ask the administrator to raise that setting.")
    db.commit()
    was = auth.working_team()
    session["team_id"] = team.id  # a new team is empty: you start it to fill it, so work goes there
    flash(f"You started {quoted(team.name)}. New corpora, trainings and imports now go to it"
          + (f", no longer to {quoted(was.name)}" if was is not None and was.id != team.id else "")
          + "; switch teams at the top of any page.")
    return _back(team.id)


@bp.get("/teams/<int:team_id>")
def show(team_id: int) -> Response:
    """A team: its members, invite links and data."""
    team = _team_or_404(team_id)
    db = get_session()
    members = db.execute(select(Membership, User).join(User, User.id == Membership.user_id)
                         .where(Membership.team_id == team_id).order_by(User.name, User.id)).all()
    invites = db.scalars(select(Invite).where(Invite.team_id == team_id, Invite.expires_at > utcnow())
                         .order_by(Invite.id)).all()
    counts = {name: db.scalar(select(func.count()).select_from(model).where(model.team_id == team_id))
              for name, model in (("corpora", Corpus), ("tokenizers", Tokenizer))}
    counts["jobs"] = db.scalar(select(func.count()).select_from(Job).where(  # training jobs
        Job.team_id == team_id, Job.kind == "train"))
    owners = sum(1 for m, _ in members if m.role == "owner")
    return render("teams/show.html", team=team, members=members, invites=invites, counts=counts,
                  role=auth.role_in(team_id), owners=owners)


@bp.post("/teams/<int:team_id>/invites")
def invite(team_id: int) -> Response:
    """Create an invite link (owners only)."""
    _team_or_404(team_id, owner=True)
    days = float(current_app.config.get("INVITE_DAYS", 7))
    get_session().add(Invite(team_id=team_id, token=auth.new_token(), created_by=current_user.id,
                             expires_at=utcnow() + dt.timedelta(days=days)))
    get_session().commit()
    return _back(team_id)


@bp.post("/teams/<int:team_id>/invites/<int:invite_id>/delete")
def revoke_invite(team_id: int, invite_id: int) -> Response:
    """Revoke an invite link (owners only)."""
    _team_or_404(team_id, owner=True)
    get_session().execute(delete(Invite).where(Invite.id == invite_id, Invite.team_id == team_id))
    get_session().commit()
    return _back(team_id)


@bp.route("/join/<token>", methods=["GET", "POST"])
def join(token: str) -> Response:
    """An invite's page: visitors sign up or log in first; logged-in users confirm with a POST."""
    db = get_session()
    invite = db.scalar(select(Invite).where(Invite.token == token[:64]))
    if invite is None or not invite.usable():
        return render("teams/join.html", invite=None, team=None, status=404)
    team = db.get(Team, invite.team_id)
    inviter = db.get(User, invite.created_by) if invite.created_by is not None else None
    if not current_user.is_authenticated:
        session["invite"] = invite.token  # lets the visitor sign up; it joins nothing by itself
        return render("teams/join.html", invite=invite, team=team, inviter=inviter, member=False)
    member = auth.role_in(invite.team_id) is not None
    if request.method == "GET" or member:
        return render("teams/join.html", invite=invite, team=team, inviter=inviter, member=member,
                      current=auth.current_team())
    working = auth.current_team()
    # Pin the working team: without a choice it falls back to the lowest team id, which the
    # joined team may have, and the user's next upload would go there unasked.
    session["team_id"] = working.id
    accept_invite(db, invite, auth.user_row())
    db.commit()
    session.pop("invite", None)
    flash(f"You joined {quoted(team.name) if team else 'the team'}. New work still goes to "
          f"{quoted(working.name)}; switch teams at the top of any page to change that.")
    return _back(invite.team_id)


def _membership(team_id: int, user_id: int) -> Membership:
    found = get_session().scalar(select(Membership).where(Membership.team_id == team_id,
                                                          Membership.user_id == user_id))
    if found is None:
        abort(404)
    return found


def _last_owner(team_id: int, user_id: int) -> bool:
    owners = set(get_session().scalars(select(Membership.user_id).where(
        Membership.team_id == team_id, Membership.role == "owner")))
    return owners == {user_id}


@bp.post("/teams/<int:team_id>/members/<int:user_id>/remove")
def remove_member(team_id: int, user_id: int) -> Response:
    """Remove someone from the team (owners), or leave it yourself (anyone)."""
    _team_or_404(team_id, owner=user_id != current_user.id)
    membership = _membership(team_id, user_id)
    db = get_session()
    alone = not db.scalar(select(func.count()).select_from(Membership).where(
        Membership.team_id == team_id, Membership.user_id != user_id))
    if alone:
        flash("You are the team's only member; delete the team instead of leaving it.")
        return _back(team_id)
    if membership.role == "owner" and _last_owner(team_id, user_id):
        flash("A team needs an owner: make another member an owner first.")
        return _back(team_id)
    db.delete(membership)
    db.flush()
    keep_a_team(db, {user_id})  # removed from their only team: they get one of their own
    db.commit()
    if user_id == current_user.id:
        session.pop("team_id", None)
        flash("You left the team.")
        return redirect(url_for("teams.index"), 303)
    return _back(team_id)


@bp.post("/teams/<int:team_id>/members/<int:user_id>/role")
def set_role(team_id: int, user_id: int) -> Response:
    """Make a member an owner, or an owner a member (owners only; never the last owner)."""
    _team_or_404(team_id, owner=True)
    form = RoleForm()
    membership = _membership(team_id, user_id)
    if not form.validate():
        abort(400)
    role = form.role.data
    if role == "member" and _last_owner(team_id, user_id):
        flash("A team needs an owner: make another member an owner first.")
        return _back(team_id)
    get_session().execute(update(Membership).where(Membership.id == membership.id).values(role=role))
    get_session().commit()
    return _back(team_id)


@bp.post("/teams/<int:team_id>/delete")
def delete_team(team_id: int) -> Response:
    """Delete the team's data (``what=data``) or the team with its data (owners, confirmed)."""
    team = _team_or_404(team_id, owner=True)
    form = DeleteTeamForm()
    if form.confirm.data != team.name:
        flash(f"Type the team's name, {quoted(team.name)}, to confirm.")
        return _back(team_id)
    if not form.validate():
        abort(400)  # the page's two buttons send "data" or "team"; nothing else deletes anything
    what = form.what.data
    if what == "team" and len(auth.team_ids()) <= 1:  # refuse before deleting anything
        flash("This is your only team; close your account instead, or delete just the data.")
        return _back(team_id)
    db = get_session()
    members = _member_ids(db, team_id)
    counts = delete_team_data(db, team_id)
    if what == "data":
        flash(f"Deleted {counts['corpora']} corpora, {counts['tokenizers']} tokenizers and "
              f"{counts['jobs']} jobs of {quoted(team.name)}.")
        return _back(team_id)
    db.execute(delete(Membership).where(Membership.team_id == team_id))  # not left to the cascade:
    db.execute(delete(Team).where(Team.id == team_id))  # keep_a_team must see them gone
    given = keep_a_team(db, members)  # a member for whom this was the last team gets their own
    db.commit()
    session.pop("team_id", None)
    flash(f"Deleted the team {quoted(team.name)} and its data."
          + (f" {len(given):,} of its members had no other team and got one of their own." if given else ""))
    return redirect(url_for("teams.index"), 303)
