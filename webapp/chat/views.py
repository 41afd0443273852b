"""The chat page: messages with roles, wrapped in a chat template, counted as the model sees them.

``/tokenizers/<id>/chat`` serves the whole page (GET: a sample chat) or, for the htmx form that
posts as the user types, only the result block. Adding and removing messages are submit buttons
(``add``, ``remove=<n>``) that re-render the page, so the form works without script;
``static/js/chat.js`` does the same in place when script runs. A refused template or bad
messages re-render with the message and a 422. The cl100k_base and o200k_base presets open with
ChatML's ``<|im_sep|>`` form, their models' (``chat_tokens.py``). Share-link visitors open it at
``/s/<token>/chat`` (``sharing/views.py``) and post here like members: a request costs what an
encode costs, bounded by the same text limits and the template's render time, and counts
against its holder's chat budgets (``budgets.py``: renders a minute and at once).
Left out: rendering and counting (``chat.py``), the sandbox (``sandbox.py``).
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, current_app, request
from werkzeug.wrappers import Response

from engine import TokenforgeError
from webapp.chat import budgets
from webapp.chat.chat import (
    MAX_MESSAGES,
    TOKENIZER_TEMPLATE,
    ChatError,
    Message,
    count_chat,
    parse_messages,
    template_choices,
)
from webapp.chat.chat_tokens import chat_special_tokens, preset_template
from webapp.playground.encode_page import flag, inspect_base, limits
from webapp.playground.encode_view import display
from webapp.tokenizers.loaded import Loaded, load
from webapp.tokenizers.originals import chat_settings
from webapp.web.htmx import render

bp = Blueprint("chat", __name__)
ROLES = ("system", "user", "assistant")
MAX_ROLE_SHOWN = 200  # a longer posted role is cut before it is echoed (parse_messages refuses it anyway)
SAMPLE = [Message("system", "You are a helpful assistant."), Message("user", "What is a tokenizer?"),
          Message("assistant", "It splits text into tokens, the units a language model reads.")]


def render_seconds() -> float:
    """Wall seconds one template render may take (``CHAT_RENDER_SECONDS``)."""
    return float(current_app.config["CHAT_RENDER_SECONDS"])


def default_template(loaded: Loaded) -> str:
    """The tokenizer's own template when it has one, else its preset's model family's, else ChatML."""
    if TOKENIZER_TEMPLATE in template_choices(loaded.config):
        return TOKENIZER_TEMPLATE
    return preset_template(loaded.config) or "chatml"


def form_messages() -> list[Message]:
    """The posted messages (``role`` and ``content`` fields, in order), with ``add``/``remove`` applied.

    Rows are kept as typed, even empty or too long, so the form comes back as it was sent;
    :func:`chat.parse_messages` judges them.
    """
    roles, contents = request.form.getlist("role"), request.form.getlist("content")
    messages = [Message(r[:MAX_ROLE_SHOWN], c) for r, c in zip(roles[:MAX_MESSAGES + 1], contents)]
    remove = request.form.get("remove", "")
    if remove.isascii() and remove.isdigit() and int(remove) < len(messages) and len(messages) > 1:
        del messages[int(remove)]
    if request.form.get("add") and len(messages) < MAX_MESSAGES:
        last = messages[-1].role if messages else "assistant"
        messages.append(Message("assistant" if last == "user" else "user", ""))
    return messages


def chat_context(loaded: Loaded, messages: list[Message], template: str) -> tuple[dict[str, Any], int]:
    """The page's context and status: the chat's count, or the sentence that says why not."""
    max_chars, render_tokens = limits()
    options = {"show_ws": flag("show_ws", False), "add_generation_prompt": flag("add_generation_prompt", False)}
    context: dict[str, Any] = {"loaded": loaded, "messages": messages, "template": template, "options": options,
                               "choices": template_choices(loaded.config), "roles": ROLES, "chat": None,
                               "result": None, "error": None, "inspect_base": inspect_base(loaded),
                               "max_messages": MAX_MESSAGES, "own": chat_settings(loaded.config),
                               "chat_tokens": chat_special_tokens(loaded.config)}
    try:
        parsed = parse_messages([{"role": m.role, "content": m.content} for m in messages], max_chars=max_chars)
        chat = count_chat(loaded.tokenizer, parsed, template, loaded.config,
                          add_generation_prompt=options["add_generation_prompt"], max_chars=max_chars,
                          seconds=render_seconds())
        context["result"] = display(chat.tokenizer, chat.text, chat.spans, show_ws=options["show_ws"],
                                    limit=render_tokens)
    except (ChatError, TokenforgeError) as exc:
        context["error"] = str(exc)
        return context, 422
    context["chat"] = chat
    return context, 200


@bp.route("/tokenizers/<int:tokenizer_id>/chat", methods=["GET", "POST"])
def page(tokenizer_id: int) -> Response:
    """Count a chat: the rendered prompt's tokens, each message's, and the template's overhead."""
    loaded = load(tokenizer_id)
    refused = budgets.admit(loaded.row.id)
    if refused is not None:
        return refused
    if request.method == "GET":
        template = request.args.get("template", default_template(loaded))[:40]
        messages = list(SAMPLE)
    else:
        template = request.form.get("template", default_template(loaded))[:40]
        messages = form_messages()
    context, status = chat_context(loaded, messages, template)
    structural = request.method == "POST" and (request.form.get("add") or request.form.get("remove"))
    # Adding or removing a message changes the form itself: the whole page, not the result block.
    return render("playground/chat.html", None if structural else "result", status=status, **context)
