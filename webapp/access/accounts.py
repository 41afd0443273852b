"""The accounts blueprint: sign up, log in and out, the account page, API keys, closing an account.

Sign-up is open while no account exists (that first account becomes the admin and owns any
data that predates teams), to holders of a valid invite link, and to anyone when
``TOKENFORGE_OPEN_SIGNUP=1``. Every new account gets a team of its own and works in it; an
invite is only offered afterwards, on its confirmation page (``teams.join``). Logins are
rate-limited per IP address and per e-mail address, sign-ups per IP address. The session is
renewed on login so a cookie planted before it (session fixation) is worthless afterwards.
Logging out, changing the password and "sign out everywhere" end every session of the account
(``auth.end_sessions``); the last two keep the current one going under the new generation.

Left out: teams and invites (``teams.py``), the scoping rules (``auth.py``).
"""

from __future__ import annotations

from flask import Blueprint, abort, current_app, flash, redirect, request, session, url_for
from flask_login import current_user, login_required, login_user, logout_user
from sqlalchemy import func, select
from werkzeug.wrappers import Response

from webapp.access import auth, teams
from webapp.access.forms import (
    MIN_PASSWORD,
    ApiKeyForm,
    ChooseTeamForm,
    ConfirmByTypingForm,
    LoginForm,
    PasswordForm,
    SignupForm,
)
from webapp.store.db import get_session
from webapp.store.models import ApiKey, Invite, User
from webapp.web import ratelimit
from webapp.web.filters import quoted
from webapp.web.htmx import render

bp = Blueprint("accounts", __name__)
KEEP_ON_LOGIN = ("shares",)  # session entries that survive the session renewal (share links)


def _signup_allowed() -> tuple[bool, Invite | None]:
    db = get_session()
    invite = teams.invite_from_session()
    if invite is not None:
        return True, invite
    if not db.scalar(select(func.count()).select_from(User)):
        return True, None
    return bool(current_app.config.get("OPEN_SIGNUP")), None


@bp.route("/signup", methods=["GET", "POST"])
def signup() -> Response:
    """Create an account (and its own team); the first account becomes the admin."""
    allowed, invite = _signup_allowed()
    form = SignupForm()
    if not allowed:
        return render("auth/signup.html", closed=True, form=form, errors={}, invite=None, status=403)
    if request.method == "GET":
        return render("auth/signup.html", closed=False, form=form, errors={}, invite=invite)
    refused = ratelimit.refuse("SIGNUP_RATE_LIMIT", f"signup-ip:{ratelimit.client_ip()}",
                               "sign-ups from this address")
    if refused is not None:
        return refused
    if not form.validate():
        return render("auth/signup.html", closed=False, form=form, errors=form.first_errors(), invite=invite,
                      status=422)
    email, name, password = form.email.data, form.name.data, form.password.data
    db = get_session()
    first = not db.scalar(select(func.count()).select_from(User))
    user = User(email=email, name=name, password_hash=auth.hash_password(password), is_admin=first)
    db.add(user)
    db.flush()
    team = teams.personal_team(db, user)
    if first:
        teams.claim_orphan_teams(db, user)
    db.commit()
    auth.start_session(user, keep=KEEP_ON_LOGIN)
    session["team_id"] = team.id
    flash(f"Welcome, {name}." + (" You are the administrator of this Tokenforge." if first else ""))
    if invite is not None:  # joining is the user's own decision, on the invite's page
        return redirect(url_for("teams.join", token=invite.token), 303)
    return redirect(url_for("index"), 303)


@bp.route("/login", methods=["GET", "POST"])
def login() -> Response:
    """Log in with e-mail and password; too many attempts are refused for a while."""
    target = auth.safe_next(request.values.get("next"))
    if request.method == "GET":
        return render("auth/login.html", error=None, email="", next=target)
    form = LoginForm()
    email = form.email.data or ""
    for key in (f"login-ip:{ratelimit.client_ip()}", f"login-email:{email}"):
        refused = ratelimit.refuse("LOGIN_RATE_LIMIT", key, "login attempts")
        if refused is not None:
            return refused
    user = get_session().scalar(select(User).where(User.email == email))
    matches = auth.check_password(user, form.password.data or "")
    if user is None or not matches:
        return render("auth/login.html", error="The e-mail address or the password is wrong.",
                      email=email, next=target, status=401)
    ratelimit.limiter().reset(f"login-email:{email}")
    # Nothing else happens at login: a pending invite is joined on its own page, by a click.
    auth.start_session(user, keep=KEEP_ON_LOGIN)
    return redirect(target, 303)


@bp.post("/logout")
def logout() -> Response:
    """Log out: end every session of the account (copies of this cookie too), forget this one."""
    if current_user.is_authenticated:
        auth.end_sessions(auth.user_row())
    logout_user()
    session.clear()
    return redirect(url_for("accounts.login"), 303)


@bp.get("/account")
@login_required
def account() -> Response:
    """The account page: teams, the working team, API keys, closing the account."""
    return _account_page()


def _account_page(new_key: str | None = None, error: str | None = None, status: int = 200,
                  password_errors: dict[str, str] | None = None) -> Response:
    db = get_session()
    keys = db.scalars(select(ApiKey).where(ApiKey.user_id == current_user.id).order_by(ApiKey.id)).all()
    # No team is a state the app no longer leaves an account in (``teams.keep_a_team``), but older
    # data may hold one: the page still works, so the password, keys and closing stay reachable.
    current = auth.current_team() if auth.team_ids() else None
    return render("auth/account.html", keys=keys, new_key=new_key, error=error,
                  password_errors=password_errors or {}, min_password=MIN_PASSWORD,
                  memberships=teams.my_memberships(), current=current, status=status)


@bp.post("/account/team")
@login_required
def choose_team() -> Response:
    """Choose the team that new corpora, jobs and tokenizers belong to."""
    form = ChooseTeamForm()
    if not form.validate() or form.team_id.data not in auth.team_ids():
        abort(404)
    session["team_id"] = form.team_id.data
    flash(f"New corpora, trainings and imports now go to {quoted(auth.current_team().name)}.")
    return redirect(auth.safe_next(form.next.data) if form.next.data else url_for("accounts.account"), 303)


@bp.post("/account/password")
@login_required
def change_password() -> Response:
    """Change the password; every other session of the account ends, this one goes on."""
    # The current password is checked here: the same budget as a login.
    refused = ratelimit.refuse("LOGIN_RATE_LIMIT", f"password:{current_user.id}", "password attempts")
    if refused is not None:
        return refused
    form = PasswordForm()
    valid = form.validate()
    user = auth.user_row()  # the row itself (current_user is a record): its hash, to update and log in again
    if not auth.check_password(user, form.current.data or ""):
        form.current.errors = ["That is not your current password; type the one you log in with."]
        valid = False
    if not valid:
        return _account_page(password_errors=form.first_errors(), status=422)
    password = form.password.data
    user.password_hash = auth.hash_password(password)
    get_session().commit()
    auth.end_sessions(user)
    login_user(user)  # this session goes on under the new generation
    flash("Your password was changed. Every other session of your account was signed out.")
    return redirect(url_for("accounts.account"), 303)


@bp.post("/account/logout-elsewhere")
@login_required
def logout_elsewhere() -> Response:
    """Sign out everywhere else: every session but this one ends (copies of this cookie too)."""
    user = auth.user_row()
    auth.end_sessions(user)
    login_user(user)  # this browser gets a new login id; any copy of its old cookie has the old one
    flash("Every other session of your account was signed out.")
    return redirect(url_for("accounts.account"), 303)


@bp.post("/account/keys")
@login_required
def create_key() -> Response:
    """Create an API key and show it once."""
    form = ApiKeyForm()
    if not form.validate():
        return _account_page(error=form.name.errors[0], status=422)
    row, secret = auth.new_api_key(current_user, form.name.data)
    get_session().add(row)
    get_session().commit()
    return _account_page(new_key=secret)


@bp.post("/account/keys/<int:key_id>/delete")
@login_required
def delete_key(key_id: int) -> Response:
    """Revoke one of your API keys."""
    db = get_session()
    key = db.scalar(select(ApiKey).where(ApiKey.id == key_id, ApiKey.user_id == current_user.id))
    if key is None:
        abort(404)
    db.delete(key)
    db.commit()
    flash(f"Revoked the API key {quoted(key.name)}.")
    return redirect(url_for("accounts.account"), 303)


@bp.post("/account/delete")
@login_required
def delete_account() -> Response:
    """Close the account: teams it alone belongs to are deleted with their data."""
    if ConfirmByTypingForm().confirm.data != current_user.email:
        return _account_page(error="Type your e-mail address to confirm closing the account.", status=422)
    problem = teams.close_account(get_session(), auth.user_row())
    if problem:
        return _account_page(error=problem, status=409)
    logout_user()
    session.clear()
    flash("Your account was closed and its data deleted.")
    return redirect(url_for("accounts.login"), 303)
