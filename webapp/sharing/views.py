"""Share links: read-only access to one tokenizer, or one leaderboard, for anyone holding an unguessable URL.

A link's token is ``secrets.token_urlsafe(32)`` (256 bits). ``/s/<token>`` *is* the shared
tokenizer's encode page, served at that URL (``?text=`` works as on the team's page), and
``/s/<token>/chat``, ``/s/<token>/vocab`` and ``/s/<token>/downloads`` its other read-only pages, so the address bar
always holds a URL that can be passed on. Opening one also records the token in the visitor's
session (``access/visitors.py``): the pages' own requests (encoding as you type, the inspector, chat, compare)
go to the team's URLs, which accept that tokenizer from then on, and compare offers every
tokenizer shared with this visitor. Each request re-checks the links, so revoking or expiring one takes
effect at once; a revoked or expired link answers 410 with a page that says so and nothing
else (no name, no date), an unknown one 404. "Share this text too" stores a (tokenizer, text)
pair on the server under its own token, so long texts never travel in URLs.

A link to a leaderboard (``ShareLink.leaderboard_id``) opens the board's read-only page at
``/s/<token>`` (``?format=csv`` its export), through the same tokens, expiry and revocation:
``share_links.create_link`` and ``share_links.revoke_link`` serve both kinds of link, and the
board's page comes from ``leaderboard_views.shared_board``.

Left out: the encode page itself (``playground/encode_page.py``), creating and revoking links
(``access/share_links.py``), what a visitor may read once a link is opened
(``access/visitors.py``) and scoping (``access/auth.py``, whose gate lets visitors with a share
reach the pages listed there).
"""

from __future__ import annotations

from flask import Blueprint, abort, current_app, redirect, request, url_for
from flask_login import current_user
from sqlalchemy import select
from werkzeug.wrappers import Response

from webapp.access import auth
from webapp.access.forms import ShareLinkForm, ShareTextForm
from webapp.access.share_links import create_link, revoke_link
from webapp.access.visitors import remember
from webapp.leaderboards.views import shared_board
from webapp.playground.encode_page import play_page
from webapp.store.db import get_session
from webapp.store.models import SharedText, ShareLink, Tokenizer, utcnow
from webapp.tokenizers.loaded import load
from webapp.web import ratelimit
from webapp.web.config import parse_limit
from webapp.web.htmx import render

bp = Blueprint("sharing", __name__)
TEXT_LIMIT = "30/60"  # stored texts per user per minute: enough for people, not for a flood


def _active_link(token: str) -> ShareLink:
    """The link, if it still opens; a 404 if there is no such link, a 410 page if it stopped."""
    link = get_session().scalar(select(ShareLink).where(ShareLink.token == token[:64]))
    if link is None:
        abort(404)
    if not link.active():
        # Only someone who holds the token sees this, and it names nothing: not the
        # tokenizer, not its team, not when.
        abort(render("share/gone.html", status=410, revoked=link.revoked_at is not None))
    return link


def _manage_context(tokenizer: Tokenizer, **extra: object) -> dict[str, object]:
    links = get_session().scalars(select(ShareLink).where(ShareLink.tokenizer_id == tokenizer.id)
                                  .order_by(ShareLink.id.desc())).all()
    return {"tokenizer": tokenizer, "links": links, "error": None, "text_url": None, "now": utcnow(), **extra}


@bp.get("/tokenizers/<int:tokenizer_id>/share")
def manage(tokenizer_id: int) -> Response:
    """The share links of a tokenizer, and forms to create, revoke and share a text."""
    return render("share/manage.html", **_manage_context(auth.owned_or_404(Tokenizer, tokenizer_id)))


@bp.post("/tokenizers/<int:tokenizer_id>/share")
def create(tokenizer_id: int) -> Response:
    """Create a share link, optionally expiring after a number of days."""
    tokenizer = auth.owned_or_404(Tokenizer, tokenizer_id)
    form = ShareLinkForm()
    if not form.validate():
        return render("share/manage.html", status=422, **_manage_context(tokenizer, error=form.days.errors[0]))
    create_link(form.days.data, tokenizer_id=tokenizer.id)
    return redirect(url_for("sharing.manage", tokenizer_id=tokenizer.id), 303)


def _owned_link(tokenizer_id: int, link_id: int) -> tuple[Tokenizer, ShareLink]:
    tokenizer = auth.owned_or_404(Tokenizer, tokenizer_id)
    link = get_session().scalar(select(ShareLink).where(ShareLink.id == link_id,
                                                        ShareLink.tokenizer_id == tokenizer.id))
    if link is None:
        abort(404)
    return tokenizer, link


@bp.post("/tokenizers/<int:tokenizer_id>/share/<int:link_id>/revoke")
def revoke(tokenizer_id: int, link_id: int) -> Response:
    """Revoke a link: it, and every text shared through it, stops opening at once."""
    _tokenizer, link = _owned_link(tokenizer_id, link_id)
    revoke_link(link)
    return redirect(url_for("sharing.manage", tokenizer_id=tokenizer_id), 303)


@bp.post("/tokenizers/<int:tokenizer_id>/share/<int:link_id>/texts")
def share_text(tokenizer_id: int, link_id: int) -> Response:
    """"Share this text too": store the text and show its permalink."""
    tokenizer, link = _owned_link(tokenizer_id, link_id)
    form = ShareTextForm()
    error = None
    if not link.active():
        error = "This link is revoked or expired; create a new link to share a text."
    elif not form.validate():
        error = form.text.errors[0]
    if error:
        return render("share/manage.html", status=422, **_manage_context(tokenizer, error=error))
    wait = ratelimit.limiter().hit(f"share-text:{current_user.id}", parse_limit(TEXT_LIMIT))
    if wait is not None:
        return ratelimit.too_many(wait, "shared texts")
    row = SharedText(share_link_id=link.id, token=auth.new_token(), text=form.text.data)
    get_session().add(row)
    get_session().commit()
    url = url_for("sharing.open_text", token=link.token, text_token=row.token, _external=True)
    return render("share/manage.html", **_manage_context(tokenizer, text_url=url))


@bp.get("/s/<token>")
def open_link(token: str) -> Response:
    """A share link: the tokenizer's encode page at the link's own URL (``?text=`` works too),
    or the leaderboard's read-only page."""
    link = _active_link(token)
    if link.leaderboard_id is not None:
        return shared_board(link)
    remember(link.token)
    return play_page(load(link.tokenizer_id), request.args.get("text"))


def _shared_page(token: str, endpoint: str) -> Response:
    """Serve another read-only page of the link's tokenizer (its view, scoped as usual) at the link's URL."""
    link = _active_link(token)
    if link.tokenizer_id is None:
        abort(404)
    remember(link.token)
    return current_app.make_response(current_app.view_functions[endpoint](tokenizer_id=link.tokenizer_id))


@bp.get("/s/<token>/vocab")
def open_vocab(token: str) -> Response:
    """A share link's vocabulary browser."""
    return _shared_page(token, "vocab.browse")


@bp.get("/s/<token>/chat")
def open_chat(token: str) -> Response:
    """A share link's chat page (its form posts to the team's URL, which accepts this visitor)."""
    return _shared_page(token, "chat.page")


@bp.get("/s/<token>/downloads")
def open_downloads(token: str) -> Response:
    """A share link's downloads."""
    return _shared_page(token, "transfer.downloads")


@bp.get("/s/<token>/t/<text_token>")
def open_text(token: str, text_token: str) -> Response:
    """A shared text: the tokenizer's encode page with the stored text already encoded."""
    link = _active_link(token)
    shared = get_session().scalar(select(SharedText).where(SharedText.token == text_token[:64],
                                                           SharedText.share_link_id == link.id))
    if shared is None or link.tokenizer_id is None:
        abort(404)
    remember(link.token)
    # Edits go to the link's own URL in the address bar, not to this fixed text's.
    return play_page(load(link.tokenizer_id), shared.text, text_from="shared",
                     address=url_for("sharing.open_link", token=link.token))
