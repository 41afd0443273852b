"""Render a chat template (Jinja, as in Hugging Face's ``chat_template``) without trusting it.

A chat template comes from outside: an imported ``tokenizer_config.json`` holds any Jinja its
author wrote. Three layers keep one from doing harm:

1. Jinja's ``ImmutableSandboxedEnvironment`` refuses attribute access to internals
   (``__class__``, ``__globals__``: an error here, where Jinja would print nothing), calls of
   unsafe callables and mutation of the messages.
   Ranges are capped by the sandbox (``range(10**9)`` is refused), and here ``*`` and ``**``
   are intercepted, so ``'a' * 10**9`` or ``9**9**9`` is refused before it is computed.
2. The render runs in a child process (``multiprocessing``'s forkserver: a clean,
   single-threaded parent, so forking is safe from a threaded server) with an address-space
   limit, and writes at most ``max_chars`` characters: the output is checked between the
   chunks of ``template.generate()``.
3. The parent waits ``seconds`` of wall time and then kills the child. Nested loops with no
   calls (``{% for a in s %}{% for b in s %}…``) pass no hook of the sandbox, so only a
   deadline outside the render can stop them; this one stops everything, a C-level operation
   included.

Every refusal is a :class:`ChatTemplateError` whose message says what the template did.
The variables follow ``transformers``' ``apply_chat_template``: ``messages``,
``add_generation_prompt``, ``bos_token``, ``eos_token``, ``pad_token``, and the helpers
``raise_exception`` and ``strftime_now``; blocks are trimmed the same way.
Left out: which template and what the rendered text counts (``chat.py``).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import threading
from datetime import datetime
from multiprocessing.connection import Connection
from typing import Any

MAX_TEMPLATE_CHARS = 64 * 1024
"""Characters of one template. Real ones are a few thousand (Llama 3.1's, with tools, about 4 KB)."""

MEMORY_BYTES = 256 << 20
"""Address space the child may add to what it inherits, for building the output and its values."""

_start_lock = threading.Lock()


class ChatTemplateError(ValueError):
    """A template that cannot be rendered; the message says why, in a sentence for the page."""


def _sandbox() -> Any:
    """The sandboxed environment, built in the child (Jinja is imported there, not per request)."""
    from jinja2.exceptions import SecurityError
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    limit = MAX_TEMPLATE_CHARS * 16

    class ChatSandbox(ImmutableSandboxedEnvironment):
        """The immutable sandbox, with ``*`` and ``**`` bounded before they run."""

        intercepted_binops = frozenset({"*", "**"})

        def unsafe_undefined(self, obj: Any, attribute: str) -> Any:
            # Jinja renders an unsafe attribute as an empty Undefined; say it was refused instead.
            raise SecurityError(f"access to attribute {str(attribute)[:40]!r} of a "
                                f"{type(obj).__name__} object is not allowed")

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            if operator == "**":
                if isinstance(right, (int, float)) and abs(right) > 64:
                    raise SecurityError(f"the power ** {str(right)[:20]} is larger than the sandbox allows (64)")
                if isinstance(left, (int, float)) and abs(left) > 10**18:
                    raise SecurityError("the base of ** is larger than the sandbox allows")
                return left**right
            for seq, times in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple)) and isinstance(times, int) and not isinstance(times, bool):
                    if len(seq) * times > limit:
                        raise SecurityError(f"repeating a value {times:,} times would make more than "
                                            f"{limit:,} items")
            if isinstance(left, int) and isinstance(right, int) and max(abs(left), abs(right)) > 10**100:
                raise SecurityError("multiplying numbers this large is not allowed")
            return left * right

    def raise_exception(message: str) -> None:
        from jinja2.exceptions import TemplateError

        raise TemplateError(str(message)[:300])

    def tojson(value: Any, ensure_ascii: bool = False, indent: int | None = None, separators: Any = None,
               sort_keys: bool = False) -> str:
        # transformers' filter: plain JSON, not the HTML-escaped JSON of Jinja's own ``tojson``.
        indent = indent if isinstance(indent, int) and 0 <= indent <= 8 else None
        if not (isinstance(separators, (list, tuple)) and len(separators) == 2
                and all(isinstance(part, str) and len(part) <= 8 for part in separators)):
            separators = None
        return json.dumps(value, ensure_ascii=bool(ensure_ascii), indent=indent, separators=separators,
                          sort_keys=bool(sort_keys))

    env = ChatSandbox(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"],
                      autoescape=False)
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(str(fmt)[:100])
    return env


def render_in_process(source: str, variants: list[dict[str, Any]], max_chars: int) -> list[str]:
    """Render ``source`` once per variables dict in this process, each output at most ``max_chars``.

    Only the child process calls this (:func:`render`); alone it has no deadline.
    """
    from jinja2.exceptions import SecurityError, TemplateError, TemplateSyntaxError

    env = _sandbox()
    try:
        template = env.from_string(source)
    except TemplateSyntaxError as exc:
        raise ChatTemplateError(f"The chat template does not parse: line {exc.lineno}: "
                                f"{str(exc.message)[:200]}") from None
    outputs = []
    for variables in variants:
        chunks, size = [], 0
        try:
            for chunk in template.generate(**variables):
                size += len(chunk)
                if size > max_chars:
                    raise ChatTemplateError(f"The chat template writes more than {max_chars:,} characters; "
                                            "it was stopped. Shorten the messages or fix the template.")
                chunks.append(chunk)
        except ChatTemplateError:
            raise
        except SecurityError as exc:
            raise ChatTemplateError(f"The chat template was refused by the sandbox: "
                                    f"{str(exc)[:200].rstrip('.')}.") from None
        except OverflowError as exc:  # the sandbox's range() refusal, and number overflows
            raise ChatTemplateError(f"The chat template was refused: {str(exc)[:200]}") from None
        except TemplateError as exc:
            raise ChatTemplateError(f"The chat template stopped with an error: {str(exc)[:300]}") from None
        except RecursionError:
            raise ChatTemplateError("The chat template recursed too deeply; it was stopped.") from None
        except (TypeError, ValueError, KeyError, IndexError, AttributeError, ZeroDivisionError) as exc:
            raise ChatTemplateError(f"The chat template failed on these messages: "
                                    f"{exc.__class__.__name__}: {str(exc)[:200]}") from None
        outputs.append("".join(chunks))
    return outputs


RENDER_NICE = 10
"""How much a render's child lowers its CPU priority. A real template renders in milliseconds, so
this costs it nothing; a template that loops until its deadline (a share-link holder's burner,
two at a time per link) then takes only the CPU that pages and encodes leave idle."""


def _lower_priority() -> None:
    try:
        os.nice(RENDER_NICE)
    except OSError:  # not allowed here: the deadline still holds
        pass


def _limit_memory(extra: int) -> None:
    """Cap this process's address space at what it has now plus ``extra`` bytes (Linux)."""
    try:
        import resource

        with open("/proc/self/statm", encoding="ascii") as statm:
            size = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        resource.setrlimit(resource.RLIMIT_AS, (size + extra, size + extra))
    except (ImportError, OSError, ValueError):
        pass  # no /proc or no rlimits: the parent's deadline still holds


def _child(conn: Connection, source: str, variants: list[dict[str, Any]], max_chars: int) -> None:
    """The child's whole life: limit memory, lower its priority, render, send ("ok", texts) or
    ("error", sentence)."""
    try:
        _limit_memory(MEMORY_BYTES)
        _lower_priority()
        result: tuple[str, Any] = ("ok", render_in_process(source, variants, max_chars))
    except ChatTemplateError as exc:
        result = ("error", str(exc))
    except MemoryError:
        result = ("error", f"The chat template used more than {MEMORY_BYTES >> 20} MiB of memory; it was stopped.")
    except Exception as exc:  # noqa: BLE001 - whatever a template provokes becomes a sentence
        result = ("error", f"The chat template failed: {exc.__class__.__name__}: {str(exc)[:200]}")
    try:
        conn.send(result)
    finally:
        conn.close()


def _context() -> Any:
    context = multiprocessing.get_context("forkserver")
    with _start_lock:
        # Preloading makes every render's child a fork of a process that has Jinja and this
        # module imported already: a render costs a fork, not an interpreter start.
        context.set_forkserver_preload(["jinja2.sandbox", "webapp.chat.sandbox"])
    return context


def render(source: str, variants: list[dict[str, Any]], *, seconds: float, max_chars: int) -> list[str]:
    """Render ``source`` with each of ``variants`` in a bounded child; raise ChatTemplateError if refused."""
    if len(source) > MAX_TEMPLATE_CHARS:
        raise ChatTemplateError(f"The chat template has {len(source):,} characters; at most "
                                f"{MAX_TEMPLATE_CHARS:,} are accepted.")
    context = _context()
    reader, writer = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(writer, source, variants, max_chars), daemon=True)
    try:
        process.start()
        writer.close()
        if not reader.poll(seconds):
            raise ChatTemplateError(f"The chat template took more than {seconds:g} s to render and was stopped "
                                    "(a loop that runs too long?).")
        try:
            kind, payload = reader.recv()
        except EOFError:
            raise ChatTemplateError(f"The chat template was stopped: it used more than {MEMORY_BYTES >> 20} MiB "
                                    "of memory or crashed its sandbox.") from None
    finally:
        reader.close()
        writer.close()
        if process.pid is not None:
            if process.is_alive():
                process.kill()
            process.join()
            process.close()
    if kind != "ok":
        raise ChatTemplateError(str(payload))
    return list(payload)
