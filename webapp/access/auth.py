"""Who is asking, and what they may see: login sessions, API keys, and the one scoping helper.

Every corpus, job and tokenizer belongs to a team. A request may read a row when the user is a
member of its team; tokenizers can also be read through a share link the visitor has opened
(``visitors.py`` reads those from the session). There is exactly one way to fetch a row by id
in a view, :func:`owned_or_404` (or :func:`scoped` for lists), and both answer 404, never 403,
for rows of other teams, so guessing ids reveals nothing, not even that the row exists. Rows of no
team are the preset tokenizers: reads admit them (``scoped(..., presets=True)``), and
:func:`owned_or_404`, which the views that change a row use, refuses them with a 403.

:func:`gate` runs before every request: pages need a login (the read-only playground pages are
open to visitors holding a share link), and the JSON API answers 401 in JSON without a session
or a valid ``Authorization: Bearer`` key.

A session ends for good: its login id is ``"<user id>:<session generation>"`` (``User.get_id``),
and :func:`end_sessions` raises the generation on logout, password change and "sign out
everywhere", so every cookie issued before (a copied one too) stops working. A session also
ends ``SESSION_DAYS`` after its login, however active it stays.

Every request reads its user, their teams and roles afresh (one statement), into records
(``store/records.py``): ``current_user`` is a :class:`~webapp.store.records.SignedIn`, not the ORM
row, and a view that changes the account loads that with :func:`user_row`. Nothing about access
is kept between requests. Left out: the pages (``accounts.py``, ``teams.py``).
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import secrets
import time
from collections.abc import Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit

from flask import Flask, abort, current_app, g, has_app_context, jsonify, redirect, request, session, url_for
from flask_login import LoginManager, current_user, login_user
from sqlalchemy import Select, bindparam, event, or_, select, update
from sqlalchemy.orm import Session
from werkzeug.security import check_password_hash, generate_password_hash
from werkzeug.wrappers import Response

from webapp.access.visitors import shared_tokenizer_ids
from webapp.store import records
from webapp.store.db import get_session
from webapp.store.models import ApiKey, Membership, Team, User, utcnow
from webapp.store.records import SignedIn, TeamRecord
from webapp.web.numbers import parse_id, parse_int

PRESET_READ_ONLY = ("This is a preset tokenizer, shared read-only with every team: it cannot be renamed, "
                    "deleted or shared, and has no training data. Encode, compare, browse and download it freely.")

login_manager = LoginManager()
login_manager.login_view = "accounts.login"
login_manager.login_message = "Log in to see that page."

Row = TypeVar("Row")
Record = TypeVar("Record")
LOGIN_AT = "_login_at"  # session key: when this session logged in (epoch seconds)
MAX_NEXT = 2000  # longest ``next`` path kept after login; longer ones go to the home page
API_KEY_PREFIX = "tf_"
API_KEY_TOUCH_SECONDS = 60  # how stale last_used_at may get; writing it on every call would
                            # turn every API read into a database write
PUBLIC_ENDPOINTS = frozenset({"static", "healthz", "accounts.login", "accounts.signup", "accounts.logout",
                              "sharing.open_link", "sharing.open_text", "sharing.open_vocab", "sharing.open_chat",
                              "sharing.open_downloads", "teams.join"})
#: Read-only tokenizer pages a share-link visitor may open; ``loaded.load`` checks the row.
SHAREABLE_ENDPOINTS = frozenset({
    "playground.play", "playground.encode", "playground.decode", "playground.inspector",
    "vocab.browse", "transfer.downloads", "transfer.download", "transfer.download_zip",
    "compare.page", "compare.run", "chat.page",
})


def hash_password(password: str) -> str:
    """A memory-hard scrypt hash (werkzeug's defaults: n=2**15, r=8, p=1)."""
    return generate_password_hash(password, method="scrypt")


def check_password(user: User | None, password: str) -> bool:
    """Whether ``password`` is the user's; hashes anyway when there is no user (no timing hint)."""
    if user is None:
        check_password_hash(_DUMMY_HASH, password)
        return False
    return check_password_hash(user.password_hash, password)


_DUMMY_HASH = generate_password_hash(secrets.token_hex(16), method="scrypt")


def new_token() -> str:
    """An unguessable URL-safe token: 32 random bytes, 256 bits."""
    return secrets.token_urlsafe(32)


def digest(secret: str) -> str:
    """The SHA-256 hex digest under which API keys are stored."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def new_api_key(user: User | SignedIn, name: str) -> tuple[ApiKey, str]:
    """Create a key row for ``user``; return it and the key itself (shown once, never stored)."""
    secret = API_KEY_PREFIX + new_token()
    row = ApiKey(user_id=user.id, name=name, prefix=secret[:11], key_hash=digest(secret))
    return row, secret


@login_manager.user_loader
def _load_user(login_id: str) -> SignedIn | None:
    """The session's user, unless the session has ended (older generation, or too old).

    Read afresh on every request, with the generation, the teams and the roles: a logout
    everywhere or a membership changed elsewhere holds from the very next request.
    """
    user_part, _, generation_part = login_id.partition(":")
    user_id = parse_id(user_part)
    # A plain "<id>" (sessions from before generations existed) is generation 0.
    generation = parse_int(generation_part) if generation_part else 0
    if user_id is None or generation is None:
        return None
    # The user and their teams in one statement (see _USER_AND_TEAMS), as records: every
    # logged-in request needs both, and the ORM cost more than the database (store/records.py).
    rows = records.read(_USER_AND_TEAMS, {"user_id": user_id})
    if not rows:
        return None
    user = SignedIn(*rows[0][:_USER_FIELDS])
    if user.session_generation != generation:
        return None
    login_at = session.get(LOGIN_AT)
    if not isinstance(login_at, (int, float)) or isinstance(login_at, bool):
        session[LOGIN_AT] = time.time()  # an older session: its lifetime starts counting now
    elif time.time() - login_at > session_lifetime().total_seconds():
        return None
    g.memberships = [(TeamRecord(*row[_USER_FIELDS:-1]), row[-1]) for row in rows if row[_USER_FIELDS] is not None]
    return user


def user_row() -> User:
    """The current user's ORM row, for the views that change it (``current_user`` is a record)."""
    user = get_session().get(User, current_user.id) if current_user.is_authenticated else None
    if user is None:  # logged out, or the account was closed during this request
        abort(404)
    return user


def session_lifetime() -> dt.timedelta:
    """How long a login lasts, from ``SESSION_DAYS``."""
    return dt.timedelta(days=float(current_app.config["SESSION_DAYS"]))


def start_session(user: User, *, keep: tuple[str, ...] = ()) -> None:
    """Log ``user`` in on a fresh session (only the ``keep`` entries survive): no fixation."""
    kept = {key: session[key] for key in keep if key in session}
    session.clear()
    session.update(kept)
    session.permanent = True  # the cookie lasts SESSION_DAYS (PERMANENT_SESSION_LIFETIME)
    session[LOGIN_AT] = time.time()
    g.pop("memberships", None)  # the teams of whoever this request had loaded before
    login_user(user)


def end_sessions(user: User) -> None:
    """End every session of ``user``, everywhere, by raising their session generation."""
    db = get_session()
    db.execute(update(User).where(User.id == user.id)
               .values(session_generation=User.session_generation + 1))
    db.commit()
    db.refresh(user)


@login_manager.request_loader
def _load_user_from_key(req: Any) -> SignedIn | None:
    """``Authorization: Bearer tf_…`` on the JSON API; anything else is ignored here."""
    if not req.path.startswith("/api/"):
        return None
    header = req.headers.get("Authorization", "")
    scheme, _, secret = header.partition(" ")
    if scheme.lower() != "bearer" or not secret.strip().startswith(API_KEY_PREFIX):
        return None
    # The key and its user in one statement, as a record: the API pays for this on every call.
    found = records.read(_KEY_AND_USER, {"key_hash": digest(secret.strip())})
    if not found:
        return None
    key_id, last_used_at, *user = found[0]
    now = utcnow()
    if last_used_at is None or (now - last_used_at).total_seconds() > API_KEY_TOUCH_SECONDS:
        db = get_session()
        db.execute(update(ApiKey).where(ApiKey.id == key_id).values(last_used_at=now))
        db.commit()
    g.api_key_id = key_id
    return SignedIn(*user)


# Built once (every logged-in request runs them): building a statement cost more than running it.
# Each reads the columns of its records (store/records.py): the ORM's loading cost more still.
_USER_FIELDS = len(records.columns(SignedIn, User))
_MEMBERSHIPS = (select(*records.columns(TeamRecord, Team), Membership.role)
                .join(Membership, Membership.team_id == Team.id)
                .where(Membership.user_id == bindparam("user_id")).order_by(Team.name, Team.id))
# A session's user with each of their teams and their role in it (one row with no team when in
# none), as _memberships orders them: what _load_user reads, so that it needs no second statement.
_USER_AND_TEAMS = (select(*records.columns(SignedIn, User), *records.columns(TeamRecord, Team), Membership.role)
                   .outerjoin(Membership, Membership.user_id == User.id)
                   .outerjoin(Team, Team.id == Membership.team_id)
                   .where(User.id == bindparam("user_id")).order_by(Team.name, Team.id))
# An API key's id and last use, then its user's columns.
_KEY_AND_USER = (select(ApiKey.id, ApiKey.last_used_at, *records.columns(SignedIn, User))
                 .join(User, User.id == ApiKey.user_id).where(ApiKey.key_hash == bindparam("key_hash")))


def _memberships() -> list[tuple[TeamRecord, str]]:
    """The current user's teams with their role in each, by name: one query per request.

    Every page asks several questions of them (the scope of each read, the header's switcher,
    the team new work goes to), so they are read once and kept for the request (``g``); a view
    that changes memberships redirects, and the next request reads them again. A login session's
    user is loaded with them (:func:`_load_user`), so those requests never run this query.
    """
    if not current_user.is_authenticated:  # a visitor, or logged out during this request
        return []
    if "memberships" not in g:
        found = records.read(_MEMBERSHIPS, {"user_id": current_user.id})
        g.memberships = [(TeamRecord(team_id, name), role) for team_id, name, role in found]
    return g.memberships


@event.listens_for(Session, "after_flush")
def _teams_changed(db: Session, _context: Any) -> None:
    """A request that writes a membership or a team reads its teams again afterwards.

    The teams come with the user, before the view runs (:func:`_load_user`); a view that adds,
    changes or removes one (starting a team, joining one) then sees them as it did when it was
    the first to ask. (``session.new``, ``dirty`` and ``deleted`` still hold what was flushed.)
    """
    if has_app_context() and "memberships" in g and any(
            isinstance(row, (Membership, Team)) for rows in (db.new, db.dirty, db.deleted) for row in rows):
        g.pop("memberships", None)


def team_ids() -> list[int]:
    """The ids of the teams the current user belongs to (none for visitors)."""
    return [team.id for team, _ in _memberships()]


def role_in(team_id: int) -> str | None:
    """The current user's role in a team, or None when not a member."""
    if not current_user.is_authenticated:
        return None
    return get_session().scalar(select(Membership.role).where(
        Membership.team_id == team_id, Membership.user_id == current_user.id))


def scoped(model: type[Row], *, shared_ids: list[int] | None = None, presets: bool = False) -> Select[tuple[Row]]:
    """``select(model)`` limited to the current user's teams (plus ``shared_ids`` by id).

    ``presets=True`` also admits the rows of no team, the preset tokenizers every team may read;
    only reads ask for them (``loaded.rows_query``). Visitors who are in no team (share-link
    visitors) see only what was shared with them, presets excluded.
    """
    column = model.team_id  # type: ignore[attr-defined]
    teams = team_ids()
    condition = column.in_(teams)
    if shared_ids:
        condition = or_(condition, model.id.in_(shared_ids))  # type: ignore[attr-defined]
    if presets and teams:
        condition = or_(condition, column.is_(None))
    return select(model).where(condition)


def scoped_by_id(model: type[Row], row_id: int, *, shared_ids: list[int] | None = None, presets: bool = False,
                 options: Sequence[Any] = ()) -> Row | None:
    """``scoped(model, ...).where(model.id == row_id)`` with ``options``: the row, or None.

    The same rows as :func:`scoped`, through a statement built once per shape (with or without
    share links and presets) whose team ids, share-link ids and row id are parameters: every
    encode reads its tokenizer this way, and building the statement cost more than running it.
    ``options`` must be one tuple built once (it is part of the cache key).
    """
    teams, params = _scope_params(shared_ids, row_id=row_id)
    statement = _by_id(model, bool(shared_ids), presets and bool(teams), tuple(options))
    row: Row | None = get_session().scalar(statement, params)
    return row


def scoped_record(record: type[Record], model: type[Any], row_id: int, *, shared_ids: list[int] | None = None,
                  presets: bool = False) -> Record | None:
    """:func:`scoped_by_id`'s row as a ``record`` of its columns (``store/records.py``), or None.

    The same condition and parameters, with no ORM work: every encode reads its tokenizer so.
    """
    teams, params = _scope_params(shared_ids, row_id=row_id)
    statement = _record_by_id(record, model, bool(shared_ids), presets and bool(teams))
    rows = records.read(statement, params)
    return record(*rows[0]) if rows else None


def scoped_list(record: type[Record], model: type[Any], *, shared_ids: list[int] | None = None,
                presets: bool = False, order_by: Sequence[Any] = (), limit: int | None = None,
                offset: int = 0) -> list[Record]:
    """``scoped(model, ...)`` in ``order_by``, with ``limit`` and ``offset``: the rows, each a ``record``.

    The list counterpart of :func:`scoped_record`, through a statement built once per shape (the
    pickers of every encode page run it); ``order_by`` must be a tuple built once.
    """
    teams, params = _scope_params(shared_ids, limit=limit, offset=offset)
    statement = _listed(record, model, bool(shared_ids), presets and bool(teams), tuple(order_by),
                        limit is not None, bool(offset))
    return [record(*row) for row in records.read(statement, params)]


def _scope_params(shared_ids: list[int] | None, **values: Any) -> tuple[list[int], dict[str, Any]]:
    """The current user's team ids, and a scoped statement's parameters: those ids, the share
    links' tokenizer ids where given, and ``values``."""
    teams = team_ids()
    params: dict[str, Any] = {"teams": teams, **values}
    if shared_ids:
        params["shared"] = shared_ids
    return teams, params


@functools.lru_cache(maxsize=64)
def _scoped_condition(model: type[Any], shared: bool, presets: bool) -> Any:
    """:func:`scoped`'s condition (in the same order) with its values as parameters."""
    column = model.team_id
    condition = column.in_(bindparam("teams", expanding=True))
    if shared:
        condition = or_(condition, model.id.in_(bindparam("shared", expanding=True)))
    if presets:
        condition = or_(condition, column.is_(None))
    return condition


@functools.lru_cache(maxsize=64)
def _scoped_statement(model: type[Row], shared: bool, presets: bool, options: tuple[Any, ...]) -> Select[tuple[Row]]:
    """:func:`scoped`'s rows, with ``options``."""
    return select(model).where(_scoped_condition(model, shared, presets)).options(*options)


@functools.lru_cache(maxsize=64)
def _record_statement(record: type[Any], model: type[Any], shared: bool, presets: bool) -> Select[Any]:
    """The columns of ``record`` of :func:`scoped`'s rows."""
    return select(*records.columns(record, model)).where(_scoped_condition(model, shared, presets))


@functools.lru_cache(maxsize=64)
def _record_by_id(record: type[Any], model: type[Any], shared: bool, presets: bool) -> Select[Any]:
    """:func:`_record_statement` and the id."""
    return _record_statement(record, model, shared, presets).where(model.id == bindparam("row_id"))


@functools.lru_cache(maxsize=64)
def _by_id(model: type[Row], shared: bool, presets: bool, options: tuple[Any, ...]) -> Select[tuple[Row]]:
    """:func:`_scoped_statement` and the id."""
    return _scoped_statement(model, shared, presets, options).where(model.id == bindparam("row_id"))  # type: ignore[attr-defined]


@functools.lru_cache(maxsize=64)
def _listed(record: type[Any], model: type[Any], shared: bool, presets: bool, order_by: tuple[Any, ...],
            limited: bool, offset: bool) -> Select[Any]:
    """:func:`_record_statement` in ``order_by``, with the limit and offset as parameters where given."""
    statement = _record_statement(record, model, shared, presets).order_by(*order_by)
    if limited:
        statement = statement.limit(bindparam("limit"))
    return statement.offset(bindparam("offset")) if offset else statement


def owned_or_404(model: type[Row], row_id: int) -> Row:
    """The ``model`` row with ``row_id`` if it belongs to one of the user's teams, else a 404.

    Views that change a row fetch it here, so a preset (a row of no team) is never theirs: it
    answers 403 with the reason, since every team can see that it exists.
    """
    row = readable_or_404(model, row_id)
    if row.team_id is None:  # type: ignore[attr-defined]
        abort(403, description=PRESET_READ_ONLY)
    return row


def readable_or_404(model: type[Row], row_id: int) -> Row:
    """The ``model`` row with ``row_id`` if it belongs to one of the user's teams or is a preset."""
    if not 0 < row_id < 2**63:  # a URL can carry any integer; the database cannot compare it
        abort(404)
    row = scoped_by_id(model, row_id, presets=True)
    if row is None:
        abort(404)
    return row


def current_team() -> TeamRecord:
    """The team new corpora, jobs and tokenizers go to: the one chosen, else the first owned."""
    team = working_team()
    if team is None:
        # Every account keeps a team (``teams.keep_a_team``); older data may hold one without.
        abort(403, description="You are in no team, so new work has nowhere to go. Start a team on "
                               "the Teams page, or ask a team's owner for an invite link.")
    return team


def working_team() -> TeamRecord | None:
    """:func:`current_team`, or None for visitors and accounts in no team (the header shows it)."""
    teams = {team.id: (team, role) for team, role in _memberships()}
    if not teams:
        return None
    chosen = session.get("team_id")
    if type(chosen) is not int or chosen not in teams:
        # A fresh session: a team of one's own, never one joined later that has a smaller id.
        owned = [team_id for team_id, (_, role) in teams.items() if role == "owner"]
        chosen = min(owned or teams)
    return teams[chosen][0]


def team_names() -> dict[int, str]:
    """The current user's teams, id to name, by name: the header's switcher and the team
    column of lists that mix teams (shown only when there is more than one)."""
    return {team.id: team.name for team, _ in _memberships()}


def safe_next(target: str | None) -> str:
    """A path on this site to return to after login; anything else becomes the home page.

    Only a plain relative path is kept: it starts with one ``/``, holds no ``//`` (a
    scheme-relative URL), no backslash (browsers read ``/\\host`` as ``//host``), no control
    characters (a CR/LF would break the ``Location`` header) and no spaces.
    """
    if not target or not isinstance(target, str) or len(target) > MAX_NEXT:
        return url_for("index")
    if (not target.startswith("/") or "//" in target or "\\" in target
            or any(ch.isspace() or not ch.isprintable() for ch in target)):
        return url_for("index")
    parts = urlsplit(target)
    if parts.scheme or parts.netloc:
        return url_for("index")
    return target


def gate() -> Response | None:
    """Before every request: require a login, except for public and share-link pages."""
    endpoint = request.endpoint
    if endpoint is None or current_user.is_authenticated or endpoint in PUBLIC_ENDPOINTS:
        return None
    if endpoint in SHAREABLE_ENDPOINTS and shared_tokenizer_ids():
        return None
    if request.path.startswith("/api/"):
        response = jsonify({"error": "Log in, or send an API key in the header "
                                     "Authorization: Bearer <key> (create one on your account page)."})
        response.status_code = 401
        response.headers["WWW-Authenticate"] = 'Bearer realm="tokenforge"'
        return response
    return redirect(url_for("accounts.login", next=request.full_path.rstrip("?")), 303)


def init_app(app: Flask) -> None:
    """Attach flask-login and the gate; give templates ``current_user``, ``role_in`` and the teams."""
    # Flask checks a session cookie's signature age against this, and a permanent session's
    # cookie expires after it; the "remember me" cookie (not offered today) would too.
    days = dt.timedelta(days=float(app.config["SESSION_DAYS"]))
    app.config["PERMANENT_SESSION_LIFETIME"] = days
    app.config["REMEMBER_COOKIE_DURATION"] = days
    # A login ends SESSION_DAYS after it began, however active, so the cookie is only written
    # when the session changes: re-signing it on every answer cost about 5% of a web process.
    app.config["SESSION_REFRESH_EACH_REQUEST"] = False
    login_manager.init_app(app)
    app.before_request(gate)
    app.jinja_env.globals.update(role_in=role_in, team_ids=team_ids, team_names=team_names,
                                 working_team=working_team)
