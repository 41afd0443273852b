"""The access area's forms: sign-up, log-in, the account page's forms, teams and share links.

Each is a Flask-WTF form (``web/forms.py``) whose field names are the HTML's; the views keep
what needs the database or the session (is the e-mail address taken, is the password right, is
the team the user's, is the link still active) and the templates their hand-written markup.
Left out: the training form (``training/form.py``), corpora, imports and leaderboards (their areas).
"""

from __future__ import annotations

from collections.abc import Callable

from flask import current_app
from sqlalchemy import select
from wtforms import Field, PasswordField, SelectField, StringField, TextAreaField
from wtforms.validators import StopValidation, ValidationError

from webapp.store.db import get_session
from webapp.store.models import User
from webapp.web.forms import Form, WholeNumberField, name_field, strip
from webapp.web.numbers import MAX_ID

MIN_PASSWORD = 10
MAX_PASSWORD = 1000
MAX_EMAIL = 254  # the longest address SMTP carries
MAX_EXPIRY_DAYS = 3650


def _email(value: object) -> object:
    """A filter: the address as accounts store it (no surrounding space, lower case)."""
    return value.strip().lower() if isinstance(value, str) else value


def _capped(limit: int) -> Callable[[object], object]:
    """A filter: at most ``limit`` characters (a login compares, it does not judge)."""
    return lambda value: value[:limit] if isinstance(value, str) else value


def _new_password(form: Form, field: Field) -> None:
    password = field.data or ""
    if len(password) < MIN_PASSWORD:
        raise StopValidation(f"Choose a password of at least {MIN_PASSWORD} characters.")
    if len(password) > MAX_PASSWORD:
        raise StopValidation(f"Choose a password of at most {MAX_PASSWORD:,} characters.")


def _same_password(form: Form, field: Field) -> None:
    if not form.password.errors and field.data != form.password.data:  # type: ignore[attr-defined]
        raise StopValidation("The two passwords differ; type the same password twice.")


class SignupForm(Form):
    """A new account: e-mail address, name, password twice."""

    email = StringField("E-mail", filters=[_email])
    name = name_field(empty="Enter your name.")
    password = PasswordField("Password", validators=[_new_password])
    confirm = PasswordField("Password again", validators=[_same_password])

    def validate_email(self, field: Field) -> None:
        email = field.data or ""
        if "@" not in email or len(email) > MAX_EMAIL or any(c.isspace() for c in email):
            raise ValidationError("Enter an e-mail address, such as ada@example.com.")
        if get_session().scalar(select(User.id).where(User.email == email)) is not None:
            raise ValidationError("An account with this e-mail address already exists; log in instead.")


class LoginForm(Form):
    """E-mail and password; the view checks them (and the rate limits), so nothing here refuses."""

    email = StringField("E-mail", filters=[_email, _capped(MAX_EMAIL)])
    password = PasswordField("Password", filters=[_capped(MAX_PASSWORD)])
    next = StringField()


class PasswordForm(Form):
    """A new password: the current one (checked by the view), the new one twice."""

    current = PasswordField("Current password", filters=[_capped(MAX_PASSWORD)])
    password = PasswordField("New password", validators=[_new_password])
    confirm = PasswordField("New password again", validators=[_same_password])

    def validate_password(self, field: Field) -> None:
        if field.data == self.current.data:
            raise ValidationError("Choose a new password that differs from the current one.")


class ChooseTeamForm(Form):
    """The working team (the view checks it is one of the user's), and where to go next."""

    team_id = WholeNumberField(low=1, high=MAX_ID, required=True, strip=False, message="Choose one of your teams.")
    next = StringField()


class ApiKeyForm(Form):
    """A new API key's name."""

    name = name_field(empty="Give the key a name, such as “CI”.")


class ConfirmByTypingForm(Form):
    """A dangerous action, confirmed by typing a known text (the view compares it)."""

    confirm = StringField(filters=[strip])


class TeamForm(Form):
    """A new team's name."""

    name = name_field(empty="Give the team a name.")


class RoleForm(Form):
    """A member's new role."""

    role = SelectField(choices=["owner", "member"])


class DeleteTeamForm(ConfirmByTypingForm):
    """Deleting a team's data, or the team with it: the page's two buttons send ``what``."""

    what = SelectField(choices=["data", "team"])


class ShareLinkForm(Form):
    """A new share link, expiring after a number of days, or never (empty)."""

    days = WholeNumberField(low=1, high=MAX_EXPIRY_DAYS, message=(
        "The expiry must be a whole number of days from {low} to {high}, or empty for a link that never "
        "expires; got {text}."))


def _max_shared_chars() -> int:
    return int(current_app.config.get("PLAYGROUND_MAX_CHARS", 200_000))


class ShareTextForm(Form):
    """A text shared beside a link: not blank, and no longer than the playground encodes."""

    text = TextAreaField()

    def validate_text(self, field: Field) -> None:
        text = field.data or ""
        if not text.strip():
            raise ValidationError("Type or paste the text to share.")
        if len(text) > _max_shared_chars():
            raise ValidationError(f"The text has {len(text):,} characters; share at most {_max_shared_chars():,}.")

