"""What one member may spend on imports: imports an hour, imports at once, and the team's room.

Parsing an imported file takes a request thread for up to a few seconds (a 64 MiB ``vocab.txt``
about 2 s) and storing it takes the team's database room. So before an import's body is read
(``web/requests.add_gate``), :func:`admit` refuses it with a 413 when the team's tokenizers
already fill its quota (``tokenizers/quota.py``), and counts it against the member's
``IMPORT_RATE_LIMIT`` and holds one of the member's ``IMPORTS_PER_MEMBER`` slots
(``web/slots.py``) until the request ends; beyond either, a 429 naming the setting. The slot
is tried first, so a member retrying while two imports run costs a lock file, not the database.
"""

from __future__ import annotations

from flask_login import current_user
from werkzeug.wrappers import Response

from webapp.access.auth import current_team
from webapp.store.db import get_session
from webapp.tokenizers import quota
from webapp.web import ratelimit, slots


def admit() -> Response | None:
    """The import's gate; None lets it in."""
    if not current_user.is_authenticated:
        return None  # the login gate answers
    # The slot first: a lock file, where the quota and the hourly count ask the database (and a
    # refused import is not counted against the hour).
    refused = slots.hold("IMPORTS_PER_MEMBER", f"import-member:{current_user.id}",
                         "You already have imports in progress.")
    if refused is not None:
        return refused
    full = quota.full(get_session(), current_team().id, "no tokenizer can be imported")
    if full is not None:
        return ratelimit.refused(full, retry_after=0, status=413)
    return ratelimit.refuse("IMPORT_RATE_LIMIT", f"import:{current_user.id}", "tokenizer imports")
