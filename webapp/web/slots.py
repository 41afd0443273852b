"""Concurrency budgets: at most N requests of one kind per key running at once, in every web process.

A rate limit (``ratelimit.py``) counts events; it cannot say how many are running *now*, and a
slow upload or an expensive chat render costs for as long as it runs. So a budget of N
concurrent requests per key (a member, an address, a share link) is N lock files,
``<DATA_DIR>/slots/<sha256 of the key>.<i>``: a request that holds ``flock`` on one of them holds
a slot, and a request that finds all N locked is refused. Locks die with their process, so a
killed web process never leaks a slot and nothing needs a clock or a sweeper.

A holder removes its file when it lets go (still holding the lock), so the folder only holds
the slots in use. A taker that opened the file just before it was removed would lock a file
nobody else can find; it checks that the path still leads to its file, and starts over if not
(the same dance as ``corpora/storage.py``'s temp files).

Left out: web hosts that do not share one data folder count separately; which requests take
slots (``corpora/budgets.py``, ``chat/budgets.py``).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from pathlib import Path

from flask import Flask, current_app, g
from werkzeug.wrappers import Response

from webapp.web.ratelimit import refused, setting_name

#: Seconds a refused client is told to wait: a slot frees when some running request ends.
RETRY_SECONDS = 5
_HELD = "tokenforge_slots"  # g attribute: the slots this request holds


class Slot:
    """One held slot: a locked file that goes away when released."""

    def __init__(self, fd: int, path: Path) -> None:
        self.fd, self.path = fd, path

    def release(self) -> None:
        """Let go: remove the file (if it is still ours) and unlock it by closing it."""
        if self.fd < 0:
            return
        try:
            if os.stat(self.path).st_ino == os.fstat(self.fd).st_ino:
                self.path.unlink(missing_ok=True)
        except FileNotFoundError:
            pass
        finally:
            os.close(self.fd)
            self.fd = -1


def take(folder: Path, key: str, count: int) -> Slot | None:
    """Hold one of ``key``'s ``count`` slots, or return None when every one is held."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
    for index in range(count):
        path = folder / f"{stem}.{index}"
        for _attempt in range(3):  # a file removed under us: try the same slot again
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                break  # held by a running request: the next slot
            try:
                if os.stat(path).st_ino == os.fstat(fd).st_ino:
                    return Slot(fd, path)
            except FileNotFoundError:
                pass
            os.close(fd)
    return None


def folder() -> Path:
    """The current app's slot folder."""
    return Path(current_app.config["DATA_DIR"]) / "slots"


def hold(setting: str, key: str, message: str) -> Response | None:
    """Take one of ``key``'s slots (the app setting ``setting`` says how many) until the request ends.

    Returns None when taken, else the 429 answer: ``message`` (which says what is running),
    then the limit and the setting that raises it.
    """
    count = int(current_app.config[setting])
    slot = take(folder(), key, count)
    if slot is None:
        return refused(f"{message} The server runs at most {count:,} at once "
                       f"({setting_name(setting)} raises it); wait for one to finish, then try again.",
                       retry_after=RETRY_SECONDS)
    g.setdefault(_HELD, []).append(slot)
    return None


def release_all(_exc: BaseException | None = None) -> None:
    """Release every slot this request holds (at the end of every request)."""
    for slot in g.pop(_HELD, []):
        slot.release()


def init_app(app: Flask) -> None:
    """Release a request's slots when it ends, whatever happened."""
    app.teardown_request(release_all)
