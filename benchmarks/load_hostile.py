"""The hostile member of ``load_test.py --hostile``: slow uploads and a chat-template burner.

Issue #22 asked what one member can cost the others. During each measurement this module runs,
from a second account in a team of its own:

- **Slow uploaders**: ``--slow-uploads`` connections (8) that each POST a corpus upload
  declaring a 1 GiB body and send it at ``--slow-rate`` bytes a second (10 KB/s), starting again
  when the server answers or closes. The server lets two of a member's uploads run at once
  (``TOKENFORGE_UPLOADS_PER_MEMBER``) and refuses the others with 429 before reading their
  bodies; a running one is cut off (408) when it falls under the rate floor after its first
  window, which at 10 KB/s it never does in a 30 s measurement: two request threads stay held.
- **Chat burners**: ``--burners`` visitors (6) of a share link to a tokenizer whose chat
  template nests two ``range(100000)`` loops, posting its chat form in a loop. Each render is
  stopped after ``TOKENFORGE_CHAT_RENDER_SECONDS`` (3 s, 422), two at a time per link
  (``TOKENFORGE_CHAT_CONCURRENCY``), the rest 429.

It counts the answers each got (by status) so the report shows the budgets acting; the
playground users' latencies are ``load_test.py``'s. The hostile clients' requests are not in
the users' figures.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections import Counter
from dataclasses import dataclass, field

from load_support import Browser, Connection, SetupError

EMAIL, PASSWORD = "hostile@example.com", "hostile-password-123"
BURNER_TEMPLATE = "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}"
DECLARED = 1 << 30  # the slow uploads' declared body: 1 GiB


@dataclass
class Hostile:
    """What the hostile member set up: its cookies, a CSRF token, and the burner's share link."""

    port: int
    cookies: dict[str, str]
    csrf: str
    tokenizer_id: int
    link: str
    outcomes: Counter[str] = field(default_factory=Counter)


def prepare_hostile(base: str, port: int, tokenizer_json: bytes) -> Hostile:
    """Sign the hostile member up (open sign-up is on for the run), import the burner tokenizer
    with its template, and share it; the server must run with ``TOKENFORGE_OPEN_SIGNUP=1``."""
    browser = Browser(base)
    browser.post("signup", {"email": EMAIL, "name": "Hostile", "password": PASSWORD, "confirm": PASSWORD})
    config = json.dumps({"chat_template": BURNER_TEMPLATE}).encode()
    url, _ = browser.post("import", {"kind": "tokenizer_json", "name": "burner"},
                          {"file": ("tokenizer.json", tokenizer_json), "config": ("tokenizer_config.json", config)})
    found = re.search(r"/tokenizers/(\d+)", url)
    if found is None:
        raise SetupError(f"importing the burner tokenizer did not open its page but {url}")
    tokenizer_id = int(found.group(1))
    _, page = browser.post(f"tokenizers/{tokenizer_id}/share", {"days": ""},
                           form_page=f"tokenizers/{tokenizer_id}/share")
    link = re.search(r"/s/([A-Za-z0-9_-]{16,})", page)
    if link is None:
        raise SetupError("sharing the burner tokenizer showed no link")
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', browser.get("corpora/"))
    if csrf is None:
        raise SetupError("the hostile member's corpora page has no CSRF token")
    return Hostile(port, browser.cookies(), csrf.group(1), tokenizer_id, link.group(1))


def _cookie_header(cookies: dict[str, str]) -> str:
    return "; ".join(f"{name}={value}" for name, value in cookies.items())


async def slow_upload(hostile: Hostile, rate: int, stop: float) -> None:
    """Upload a declared 1 GiB at ``rate`` bytes/s, again and again until ``stop``; count answers."""
    boundary = "hostileupload"
    head = (f'--{boundary}\r\nContent-Disposition: form-data; name="csrf_token"\r\n\r\n{hostile.csrf}\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="slow.txt"\r\n'
            "Content-Type: text/plain\r\n\r\n").encode()
    while time.monotonic() < stop:
        reader, writer = await asyncio.open_connection("127.0.0.1", hostile.port)
        writer.write((f"POST /corpora/ HTTP/1.1\r\nHost: 127.0.0.1:{hostile.port}\r\n"
                      f"Cookie: {_cookie_header(hostile.cookies)}\r\n"
                      f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
                      f"Content-Length: {DECLARED}\r\nConnection: close\r\n\r\n").encode() + head)
        status = "no answer"
        try:
            answer = asyncio.ensure_future(reader.readline())
            while time.monotonic() < stop and not answer.done():
                writer.write(b"slow words " * (rate // 11))
                await writer.drain()
                await asyncio.wait([answer], timeout=1.0)
            if answer.done():
                line = answer.result().decode("latin-1")
                status = line.split(" ")[1] if line.count(" ") >= 2 else "closed"
            else:
                answer.cancel()
                status = "still uploading at the end"
        except (ConnectionError, OSError):
            status = "reset"
        finally:
            writer.close()
        hostile.outcomes[f"upload {status}"] += 1
        await asyncio.sleep(0.5)


async def burn_chat(hostile: Hostile, stop: float) -> None:
    """Post the burner's chat form through its share link until ``stop``; count answers. One
    keep-alive :class:`load_support.Connection`, which keeps the cookies each answer sets."""
    conn = Connection(hostile.port, {})
    token: str | None = None
    while time.monotonic() < stop:
        try:
            if token is None:  # a visitor of the link: its page sets the session that may post
                status, page = await asyncio.wait_for(conn.request("GET", f"/s/{hostile.link}/chat", {}), 60)
                found = re.search(rb'name="csrf_token" value="([^"]+)"', page)
                if found is None:  # the page itself was refused (a render budget): ask again, as a
                    hostile.outcomes[f"chat page {status}"] += 1  # visitor would; posting without
                    await asyncio.sleep(0.5)  # its token would only earn CSRF 400s, which cost nothing
                    continue
                token = found.group(1).decode()
                continue
            body = f"csrf_token={token}&template=tokenizer&role=user&content=hello".encode()
            status, _ = await asyncio.wait_for(conn.request(
                "POST", f"/tokenizers/{hostile.tokenizer_id}/chat",
                {"Content-Type": "application/x-www-form-urlencoded"}, body), 60)
            hostile.outcomes[f"chat {status}"] += 1
        except (OSError, EOFError, asyncio.IncompleteReadError, asyncio.TimeoutError):
            conn.close()
            hostile.outcomes["chat reset"] += 1
    conn.close()


async def run_hostile(hostile: Hostile, stop: float, uploads: int, rate: int, burners: int) -> None:
    """Every hostile client at once, until ``stop``."""
    await asyncio.gather(*(slow_upload(hostile, rate, stop) for _ in range(uploads)),
                         *(burn_chat(hostile, stop) for _ in range(burners)))
