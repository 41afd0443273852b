"""The HTTP server ``tokenforge serve`` runs: gunicorn, with a thread worker that slow clients cannot starve.

gunicorn's ``gthread`` worker hands a connection to a thread as soon as its first byte
arrives; the thread then waits for the rest of the request. Ten clients sending one byte a
second therefore held every thread, and even ``/healthz`` timed out. :class:`BufferingWorker`
changes only that step, the way nginx shields an app server:

- the request head, and a body of up to :data:`BUFFERED_BODY_BYTES`, are read in the worker's
  event loop without blocking; a thread gets the request only once it is complete, so a slow
  sender costs a socket, never a thread;
- a head must arrive within :data:`HEAD_SECONDS`, or the connection is closed;
- a larger body (uploads) is read by a thread of the process's *upload lane*
  (:data:`UPLOAD_THREADS`), never by one of the ``--threads`` request threads, so uploads in
  progress, slow or not, leave every page and API call its threads; it is read under
  :class:`BodyRules` (the ``UPLOAD_*`` settings): after a first window that is free, each window of
  ``UPLOAD_RATE_WINDOW`` seconds must bring ``UPLOAD_MIN_RATE`` bytes a second (Apache's
  ``mod_reqtimeout`` rule, but per window, so a sender cannot bank speed and then stall), and the
  whole body must arrive within the time its declared size takes at that rate, and never more than
  ``UPLOAD_MAX_SECONDS``. A sender that falls behind sees its body end there, which the app answers
  as an interrupted upload, with nothing stored (the app sees :data:`CUT_OFF_KEY` in its environ,
  and says why); so a slow upload holds a thread for a bounded time, and ``corpora/budgets.py``
  bounds how many one member runs at once;
- a request that renders a chat template (:func:`renders_chat`) runs in the process's *render
  lane* (:data:`RENDER_THREADS`), never in a request thread: a render waits up to
  ``CHAT_RENDER_SECONDS`` for its sandboxed child (``chat/sandbox.py``), and three such renders
  (the server-wide ``CHAT_RENDERS_AT_ONCE``) used to hold half of ``serve``'s six request threads
  while 50 users queued behind the other half. The pages' routes are recognised from the request
  line alone (method and decoded path, as gunicorn and Werkzeug will read them); the API's chat
  branch shares its request line with every plain encode, so for ``POST /api/v1/encode`` the
  buffered JSON body decides, exactly as the view does (``"messages"`` in it);
- a connection whose body the app did not read (a 413, a redirect) is closed after the
  answer instead of being drained, so a 5 GiB body declared to a limit of 64 KiB is not read.

Both lanes are outside the balancing below: their requests neither take nor free a request
thread's place in it.

Web processes share one listening socket, and a keep-alive connection stays with the process
that accepted it. Left alone, 50 users settled unevenly over 3 processes: the busiest one's
users queued behind each other while another process idled, and the p99 was that queue. So
the worker balances the way nginx's ``least_conn`` does (``balance.py``): a process whose
threads are all busy stops accepting, and a crowded process lets a kept-alive client go (its
answer says ``Connection: close``) when another process has a free thread or fewer
connections, as the processes' shared :class:`balance.LoadBoard` tells.

A single web process has nobody to balance with: it accepts and keeps connections as gthread does.

Each web process also collects garbage less often (:data:`GC_YOUNG_THRESHOLD`).

**Why a subclass, and which gunicorn.** gthread has no setting for any of the above, so
:class:`BufferingWorker` overrides methods of gunicorn's ``ThreadWorker`` and ``TConn`` that are
not its public API. It is tested against gunicorn :data:`TESTED_GUNICORN` only, which
pyproject.toml pins (``tests/webapp/web/test_server_gunicorn.py`` checks the pin and that the
overridden methods still exist). It stays because, against plain ``gthread`` on the same code
(2026-11-27, 2 shared cores at load 4-8, alternated, docs/perf-notes.md), it is what makes the
refusals of ``benchmarks/attacks.py`` fast: with ten clients sending 1 byte/s, ``/healthz``
answered in 7 ms against a 5 s timeout, and an upload declaring 2 or 5 GiB got its 413 in 0.03 s
against 30 s; and 50 playground users (``benchmarks/load_test.py``, 20 s, three runs each) got a
p99 of 968 ms against 2,366 ms and 86 against 69 requests a second (medians), for about 6% more
web CPU a request (12.4 against 11.6 ms).
Upgrading gunicorn means running ``tests/webapp/web/`` and ``tests/webapp/corpora/`` against it
and moving the pin.

Left out: the job workers that ``serve`` starts beside it (``cli.py``), and the app itself.
"""

from __future__ import annotations

import errno
import gc
import io
import json
import re
import selectors
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from concurrent import futures
from dataclasses import dataclass
from functools import partial
from typing import Any

from gunicorn import http
from gunicorn.app.base import BaseApplication
from gunicorn.http.body import LengthReader
from gunicorn.util import split_request_uri
from gunicorn.workers.gthread import TConn, ThreadWorker

from webapp.web.access_log import options as access_log_options
from webapp.web.balance import Balance, LoadBoard
from webapp.web.requests import CUT_OFF_KEY

#: The gunicorn series :class:`BufferingWorker` is tested against (pyproject.toml pins it).
TESTED_GUNICORN = "23.0"
#: How long gunicorn keeps an idle keep-alive connection open. Its default (2 s) is shorter
#: than the pauses of people typing or of scripts between calls, so clients kept reusing
#: connections the server was closing at that very moment, and a request sent into that race
#: was reset. The server should be the side that waits longest: 75 s outlasts the idle timeouts
#: of common proxies (nginx and cloud load balancers use 60 s), so they close first. gthread
#: parks idle connections in its poller, so waiting clients hold no thread.
KEEPALIVE_SECONDS = 75
#: The request line and headers must arrive within this many seconds of their first byte.
HEAD_SECONDS = 10.0
#: Bodies up to this size arrive in the event loop; forms, logins and API calls fit.
BUFFERED_BODY_BYTES = 64 << 10
#: A head this long without its blank line goes to a thread, where gunicorn's own header
#: limits refuse it.
MAX_BUFFERED_HEAD = 64 << 10
#: Threads of each web process that run the requests with a body over
#: :data:`BUFFERED_BODY_BYTES` (uploads). They mostly wait for the network; more uploads than
#: this wait for one of them, never for a request thread. With ``corpora/budgets.py``'s two
#: uploads per member and four per address, one member holds at most two.
UPLOAD_THREADS = 8
#: Threads of each web process that run the requests which render a chat template
#: (:func:`renders_chat`). A render mostly waits for its sandboxed child; the server runs at most
#: ``CHAT_RENDERS_AT_ONCE`` (3 by default) at once, for all processes together, and refuses more
#: with a 429 (``chat/budgets.py``). One thread more than that default means that even when every
#: render runs in one process, a chat request arriving there (most often to be refused at once)
#: finds a thread that is not waiting out a render.
RENDER_THREADS = 4
#: Slots on the processes' shared load board: room for gunicorn's TTIN signal to add workers
#: (a worker past the last slot sees no other process's load, and sheds a client whenever it has
#: no free thread, as every process did before the board).
LOAD_BOARD_SLOTS_PER_WORKER = 2
#: A client that accepts none of its answer for this long is dropped, freeing the thread.
SEND_TIMEOUT_SECONDS = 60.0
_READ_CHUNK = 64 << 10
#: Allocations between two young-generation collections in a web process (CPython's default is
#: 700). An encode allocates an object or more per token, nearly all freed at once by reference
#: counting, so at the default a request ran dozens of collections that found nothing, and the
#: full collections they trigger walked every object of the cached tokenizers. At 100,000, 50
#: users on 2 cores cost 3.3-3.6 instead of 3.8-4.3 ms of CPU a request, and the p99 fell from
#: 316-437 to 229-371 ms (``benchmarks/load_test.py``, alternated runs). Garbage in cycles waits
#: a little longer: at most some megabytes.
GC_YOUNG_THRESHOLD = 100_000


@dataclass(frozen=True)
class BodyRules:
    """How fast a body too large to buffer must arrive (``UPLOAD_*`` settings; module docstring)."""

    min_rate: float = 8 << 10  # bytes a second, in every window after the first
    window: float = 30.0  # seconds; the first window is free (the client's start, a slow disk)
    max_seconds: float = 3600.0  # the whole body, however fast it arrives

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> BodyRules:
        """The rules of an app's settings (the defaults where a setting is missing)."""
        default = cls()
        return cls(float(config.get("UPLOAD_MIN_RATE", default.min_rate)),
                   float(config.get("UPLOAD_RATE_WINDOW", default.window)),
                   float(config.get("UPLOAD_MAX_SECONDS", default.max_seconds)))

    def seconds_for(self, declared: int | None) -> float:
        """How long a body of ``declared`` bytes (None: chunked) may take in all."""
        if declared is None:
            return self.max_seconds
        return min(self.max_seconds, self.window + declared / self.min_rate)


def declared_length(buffer: bytes | bytearray) -> int | None:
    """The Content-Length of the request head at the start of ``buffer``, if it has one."""
    end = buffer.find(b"\r\n\r\n")
    for line in bytes(buffer[:end if end >= 0 else len(buffer)]).split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length" and value.strip().isdigit():
            return int(value.strip())
    return None


def head_complete(buffer: bytes | bytearray) -> bool:
    """Whether ``buffer`` holds a whole request head plus the small body it announces.

    A request with a large or chunked body counts as complete once its head is: its body is
    read by a thread, under the minimum rate.
    """
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return len(buffer) > MAX_BUFFERED_HEAD
    length = 0
    for line in bytes(buffer[:end]).split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"transfer-encoding":
            return True
        if name == b"content-length":
            value = value.strip()
            if not value.isdigit():
                return True  # malformed: gunicorn answers 400
            length = int(value)
    if length > BUFFERED_BODY_BYTES:
        return True
    return len(buffer) - (end + 4) >= length


#: The pages that render a chat template, as Werkzeug will see their path: the chat page and its
#: posts (``chat/views.py``), and a share link's chat page (``sharing/views.py``). Any segment, not
#: only digits, so that a change of converter cannot let a render slip out of the lane; a path
#: that is not a tokenizer's only earns a 404 there.
_RENDER_PAGE = re.compile(r"/tokenizers/[^/]+/chat|/s/[^/]+/chat")
_RENDER_METHODS = frozenset({"GET", "HEAD", "POST"})  # HEAD runs the GET view
_API_ENCODE = "/api/v1/encode"  # renders when its JSON body has "messages" (api/views.py)


def renders_chat(buffer: bytes | bytearray) -> bool:
    """Whether the request at the start of ``buffer`` (its head, and its body when buffered) may
    render a chat template, and so belongs in the render lane (module docstring).

    The request line is split as gunicorn splits it, and the path percent-decoded as Werkzeug
    decodes it, so ``%63hat`` or an absolute URI is no way around the lane; the query string never
    counts. An unparsable line is gunicorn's 400, never a render.
    """
    end = buffer.find(b"\r\n")
    bits = bytes(buffer[:end if end >= 0 else len(buffer)]).decode("latin-1").split(" ", 2)
    if len(bits) != 3 or not bits[1]:
        return False
    method, target = bits[0], bits[1]
    try:
        path = urllib.parse.unquote_to_bytes(split_request_uri(target).path or "").decode("utf-8", "replace")
    except ValueError:
        return False
    if method in _RENDER_METHODS and _RENDER_PAGE.fullmatch(path):
        return True
    return method == "POST" and path == _API_ENCODE and _asks_for_chat(buffer)


def _asks_for_chat(buffer: bytes | bytearray) -> bool:
    """Whether the buffered JSON body of an API encode has ``"messages"``, parsed as Flask parses
    it; a body that is not buffered (chunked) may, and one that does not parse earns a 400."""
    start = buffer.find(b"\r\n\r\n") + 4
    length = declared_length(buffer)
    if start < 4 or length is None:
        return True
    try:
        body = json.loads(bytes(buffer[start:start + length]))
    except (ValueError, RecursionError):
        return False
    return isinstance(body, dict) and "messages" in body


class _Reader:
    """The socket as gunicorn's parser sees it: buffered bytes first, then timed reads (:class:`BodyRules`)."""

    def __init__(self, sock: socket.socket, rules: BodyRules | None = None) -> None:
        self.sock = sock
        self.rules = rules or BodyRules()
        self.pending = bytearray()
        self.deadline = 0.0  # the whole body by then
        self.window_end = 0.0
        self.window_need = 0.0  # bytes the current window must bring
        self.window_bytes = 0
        self.cut_off = False  # whether a body was ended for being too slow

    def start(self) -> None:
        """A thread takes the request: the slow-body clocks start now (the first window is free)."""
        now = time.monotonic()
        self.deadline = now + self.rules.seconds_for(declared_length(self.pending))
        self.window_end, self.window_need, self.window_bytes = now + self.rules.window, 0.0, 0
        self.cut_off = False

    def recv(self, size: int) -> bytes:
        if self.pending:
            data = bytes(self.pending[:size])
            del self.pending[:size]
            return data
        while True:
            now = time.monotonic()
            if now >= self.window_end:
                if self.window_bytes < self.window_need:
                    return self._cut()
                self.window_end = now + self.rules.window
                self.window_need, self.window_bytes = self.rules.min_rate * self.rules.window, 0
            if now >= self.deadline:
                return self._cut()
            self.sock.settimeout(min(self.deadline, self.window_end) - now)
            try:
                data = self.sock.recv(size)
            except TimeoutError:
                continue  # a window or the deadline ended: judge it above
            finally:  # the answer is sent under the send timeout, not what is left of a window
                self.sock.settimeout(SEND_TIMEOUT_SECONDS)
            self.window_bytes += len(data)
            return data

    def _cut(self) -> bytes:
        """Too slow: the body ends here, as if the client had gone."""
        self.cut_off = True
        return b""


class _Conn(TConn):  # type: ignore[misc]
    """A gthread connection whose request is gathered in the event loop first."""

    def __init__(self, cfg: Any, sock: socket.socket, client: Any, server: Any,
                 rules: BodyRules | None = None) -> None:
        super().__init__(cfg, sock, client, server)
        self.reader = _Reader(sock, rules)
        self.head_deadline = 0.0

    def fill(self) -> str:
        """Read what has arrived without blocking: "ready", "wait" or "closed"."""
        try:
            data = self.sock.recv(_READ_CHUNK)
        except (BlockingIOError, InterruptedError):
            return "wait"
        except OSError:
            return "closed"
        if not data:
            return "closed"
        if not self.reader.pending:
            self.head_deadline = time.monotonic() + HEAD_SECONDS
            self.reader.pending += self._pipelined()
        self.reader.pending += data
        return "ready" if head_complete(self.reader.pending) else "wait"

    def _pipelined(self) -> bytes:
        """What the client sent after its last request (HTTP pipelining), which gunicorn's parser
        kept back: the start of the next request. It goes before what arrives now, so that the
        lanes judge the request the parser will read (:func:`renders_chat`, :func:`declared_length`),
        not whatever a client sends later to wake its connection."""
        if self.parser is None:
            return b""
        kept: bytes = self.parser.unreader.buf.getvalue()
        self.parser.unreader.buf = io.BytesIO()
        return kept

    def init(self) -> None:
        self.initialized = True
        self.sock.settimeout(SEND_TIMEOUT_SECONDS)
        if self.parser is None:
            self.parser = http.RequestParser(self.cfg, self.reader, self.client)
        self.reader.start()


class BufferingWorker(ThreadWorker):  # type: ignore[misc]
    """gthread, but a request reaches a thread only when it has arrived, and a busy process
    leaves connections to idle ones (module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._gathering: set[_Conn] = set()
        self._balancing = self.cfg.workers > 1  # one process has nobody to leave connections to
        self._board = _load_board(self.cfg.workers) if self._balancing else None  # in the master, before the fork
        self._balance = Balance(self.cfg.threads)
        self._paused: dict[socket.socket, Any] = {}  # listener -> its accept callback, while busy
        self._body_rules = BodyRules()  # the app's, once it is loaded
        self._current = threading.local()  # .reader: the body reader of the request this thread runs

    def init_process(self) -> None:
        gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
        if self._board is not None:
            self._balance = Balance(self.cfg.threads, self._board, self._board.claim())
        self._upload_lane = futures.ThreadPoolExecutor(max_workers=UPLOAD_THREADS, thread_name_prefix="upload")
        self._render_lane = futures.ThreadPoolExecutor(max_workers=RENDER_THREADS, thread_name_prefix="render")
        super().init_process()

    def run(self) -> None:
        try:
            super().run()
        finally:  # uploads still arriving are cut, renders waiting dropped: the process is leaving
            self._close_lanes()
            if self._board is not None and self._balance.slot is not None:
                self._board.release(self._balance.slot)

    def handle_quit(self, sig: int, frame: Any) -> None:
        self._close_lanes()
        super().handle_quit(sig, frame)

    def _close_lanes(self) -> None:
        for lane in (self._upload_lane, self._render_lane):
            lane.shutdown(wait=False, cancel_futures=True)

    def load_wsgi(self) -> None:
        super().load_wsgi()
        self._body_rules = BodyRules.from_config(getattr(self.wsgi, "config", {}))
        self.wsgi = self._telling(self.wsgi)
        if self._balancing:
            self.wsgi = self._shedding(self.wsgi)

    def _telling(self, app: Callable[..., Any]) -> Callable[..., Any]:
        """``app``, with :data:`CUT_OFF_KEY` in each environ (the thread's request's body reader)."""
        def call(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
            reader = getattr(self._current, "reader", None)
            if reader is not None:
                environ[CUT_OFF_KEY] = lambda: reader.cut_off
            return app(environ, start_response)
        return call

    def _shedding(self, app: Callable[..., Any]) -> Callable[..., Any]:
        """``app``, answering ``Connection: close`` when its process is crowded (:meth:`Balance.crowded`).

        Decided when the answer's headers are ready, not when the request arrived: by then the
        process's other threads may have filled up or freed.
        """
        def call(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
            def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
                with self._lock:
                    crowded = self._balance.crowded()
                response = getattr(start_response, "__self__", None)  # gunicorn's Response
                if crowded and response is not None:
                    response.force_close()
                return start_response(status, headers, exc_info)
            return app(environ, start)
        return call

    def accept(self, server: Any, listener: socket.socket) -> None:
        try:
            sock, client = listener.accept()
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
            return
        conn = _Conn(self.cfg, sock, client, server, self._body_rules)
        self.nr_conns += 1
        with self._lock:
            self._balance.connected(self.nr_conns)
            self.poller.register(conn.sock, selectors.EVENT_READ,
                                 partial(self.on_client_socket_readable, conn))

    def on_client_socket_readable(self, conn: _Conn, client: Any) -> None:
        with self._lock:
            self.poller.unregister(client)
            if conn in self._keep:
                self._keep.remove(conn)
        state = conn.fill()
        if state == "wait":
            with self._lock:
                self._gathering.add(conn)
                self.poller.register(conn.sock, selectors.EVENT_READ,
                                     partial(self.on_client_socket_readable, conn))
            return
        self._gathering.discard(conn)
        if state == "closed":
            self._drop(conn)
            return
        self.enqueue_req(conn)

    def murder_keepalived(self) -> None:
        """Close idle keep-alive connections (gthread's rule) and heads that came too slowly."""
        super().murder_keepalived()
        now = time.monotonic()
        for conn in [c for c in self._gathering if c.head_deadline < now]:
            self._gathering.discard(conn)
            with self._lock:
                try:
                    self.poller.unregister(conn.sock)
                except (KeyError, ValueError, OSError):
                    pass
            self._drop(conn)
        with self._lock:  # gthread's rule closed connections too, and the other processes' loads move
            self._balance.connected(self.nr_conns)
            self._follow_balance()

    def enqueue_req(self, conn: _Conn) -> None:
        declared = declared_length(conn.reader.pending)
        if declared is not None and declared > BUFFERED_BODY_BYTES:  # an upload: its own lane
            self._enqueue_in(self._upload_lane, conn)
            return
        if renders_chat(conn.reader.pending):  # a chat render: its own lane too
            self._enqueue_in(self._render_lane, conn)
            return
        with self._lock:
            self._balance.started()
            self._follow_balance()
        super().enqueue_req(conn)

    def _enqueue_in(self, lane: futures.ThreadPoolExecutor, conn: _Conn) -> None:
        """Run ``conn``'s request in ``lane``, outside the request threads and their balance."""
        conn.init()
        fs = lane.submit(self.handle, conn)
        fs.off_balance = True  # type: ignore[attr-defined]
        self._wrap_future(fs, conn)

    def finish_request(self, fs: Any) -> None:
        if not getattr(fs, "off_balance", False):  # the lanes are not the request threads' balance
            with self._lock:
                self._balance.finished()
                self._follow_balance()
        super().finish_request(fs)
        self._count_connections()  # closed, unless kept alive

    def _follow_balance(self) -> None:
        """Accept new connections or not, as the balance says (:meth:`Balance.accepting`); with the
        lock held. Called as requests start and finish here, and on each turn of the event loop
        (at least once a second), since the other processes' loads change too."""
        if not self._balancing:
            return
        if self._balance.accepting():
            if self._paused:
                self._resume_accepting()
        elif not self._paused:
            self._stop_accepting()

    def _stop_accepting(self) -> None:
        for listener in self.sockets:
            try:
                self._paused[listener] = self.poller.get_key(listener).data
            except KeyError:
                continue  # not registered yet (the loop starts) or already paused
            self.poller.unregister(listener)

    def _resume_accepting(self) -> None:
        paused, self._paused = self._paused, {}
        if not self.alive:
            return  # shutting down: the poller may already be closed
        for listener, accept in paused.items():
            self.poller.register(listener, selectors.EVENT_READ, accept)

    def _drop(self, conn: _Conn) -> None:
        self.nr_conns -= 1
        conn.close()
        self._count_connections()

    def _count_connections(self) -> None:
        """Tell the balance (and so the other processes) how many connections this one holds."""
        with self._lock:
            self._balance.connected(self.nr_conns)

    def handle_request(self, req: Any, conn: _Conn) -> bool:
        self._current.reader = conn.reader
        try:
            keepalive: bool = super().handle_request(req, conn)
        finally:
            self._current.reader = None
        reader = req.body.reader if req is not None and req.body is not None else None
        drained = isinstance(reader, LengthReader) and reader.length == 0
        return keepalive and drained  # never read an unread body just to reuse the socket


_BOARD: LoadBoard | None = None


def _load_board(workers: int) -> LoadBoard:
    """The load board every web process shares: made once, in gunicorn's master, where each worker
    object is built before its fork (``Arbiter.spawn_worker``), so every worker inherits it."""
    global _BOARD
    if _BOARD is None:
        _BOARD = LoadBoard(slots=max(1, workers) * LOAD_BOARD_SLOTS_PER_WORKER)
    return _BOARD


def run(app_factory: Callable[[], Any], *, host: str, port: int, workers: int, threads: int,
        on_exit: Callable[[], None], access_log: str | None = None) -> None:
    """Serve ``app_factory()`` (``create_app``) until SIGTERM or Ctrl-C; ``on_exit`` runs when gunicorn stops.

    The factory is passed in, not imported, so the frame stays under the areas the app holds; each
    gunicorn worker calls it after the fork.

    ``access_log``: a file to append a line per request to, ``-`` for stderr (``access_log.py``).
    """
    url = f"http://{host}:{port}/"

    class Gunicorn(BaseApplication):  # type: ignore[misc]
        def load_config(self) -> None:
            options = {
                "bind": f"{host}:{port}",
                "workers": workers,
                "threads": threads,
                "worker_class": BufferingWorker,
                "timeout": 120,
                "keepalive": KEEPALIVE_SECONDS,
                "graceful_timeout": 10,
                "when_ready": lambda _arbiter: print(f"Tokenforge is running at {url}", flush=True),
                "on_exit": lambda _arbiter: on_exit(),
                **access_log_options(access_log),
            }
            for key, value in options.items():
                self.cfg.set(key, value)

        def load(self) -> Any:
            return app_factory()

    Gunicorn().run()
