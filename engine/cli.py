"""The engine's commands: ``train``, ``encode``, ``import``, ``eval``, ``diff``, ``extend`` and ``merge``
(documented in docs/cli.md).

``register(subparsers)`` adds them to a parser; the ``tokenforge`` console script
(``webapp/cli.py``) does that next to its web commands, and ``main(argv)`` runs them alone.
``train`` lives in ``cli_train.py``, whose flags are generated from the trainers' options,
``extend`` in ``cli_extend.py`` and ``merge`` in ``cli_merge.py``.

Every failure the user can cause (a bad flag, a missing or malformed file, a disallowed special
token) prints one line on stderr and exits non-zero; tracebacks are for our own bugs. Left out:
``serve``/``worker`` (the web app's) and anything that needs a database.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from engine.cli_extend import add_extend_arguments, cmd_extend
from engine.cli_inputs import Named, NamedFile, load_tokenizer, read_text
from engine.cli_merge import add_merge_arguments, cmd_merge
from engine.cli_train import add_train_arguments, cmd_train
from engine.errors import SpecialTokenError, TokenforgeError
from engine.formats import read_utf8
from engine.limits import time_budget
from engine.processes import frozen_for_exit, one_blas_thread

__all__ = ["NamedFile", "build_parser", "main", "one_line_errors", "register"]

Handler = Callable[[argparse.Namespace], int]


def one_line_errors(parser: argparse.ArgumentParser) -> None:
    """Make argparse report a bad argument in one line instead of the usage block."""

    def error(message: str) -> NoReturn:
        parser.exit(2, f"{parser.prog}: error: {message} (see {parser.prog} --help)\n")

    parser.error = error  # type: ignore[method-assign]


def _fail(command: str, message: str) -> int:
    print(f"tokenforge {command}: error: {' '.join(message.split())}", file=sys.stderr)
    return 1


def _guarded(command: str, handler: Handler) -> Handler:
    """Run ``handler``, turning the errors a user can cause into one line on stderr."""

    @functools.wraps(handler)
    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except SpecialTokenError as exc:
            return _fail(command, f"{exc} On the command line, pass --allowed-special all.")
        except TokenforgeError as exc:
            return _fail(command, str(exc))
        except BrokenPipeError:  # the reader went away (`| head`): stop quietly
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1
        except OSError as exc:
            where = f": {exc.filename}" if exc.filename else ""
            return _fail(command, f"{exc.strerror or exc}{where}")
        except KeyboardInterrupt:
            return _fail(command, "interrupted") + 129

    return run


# --------------------------------------------------------------------------- encode, eval
def cmd_encode(args: argparse.Namespace) -> int:
    """Print the ids of a text or file as one JSON list."""
    tokenizer = load_tokenizer(args.tokenizer, args.named)
    if (args.text is None) == (args.file is None):
        return _fail("encode", "Give either --text TEXT or a FILE to encode (not both).")
    text = args.text if args.text is not None else read_text(args.file)
    allowed: Any = frozenset(args.allowed_special or ())
    if "all" in allowed:
        allowed = "all"
    with time_budget(args.time_limit):  # None (the default): a file takes as long as it takes
        ids = tokenizer.encode(text, allowed_special=allowed)
    print(json.dumps(ids))
    return 0


def _seconds(raw: str) -> float:
    """A positive number of seconds, for argparse."""
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, not {raw!r}")
    return value


def cmd_eval(args: argparse.Namespace) -> int:
    """Print the evaluation metrics of a tokenizer on a held-out text, as JSON."""
    try:
        metrics = importlib.import_module("engine.metrics")
    except ImportError:
        return _fail("eval", "Evaluation is not available in this version (engine.metrics is missing).")
    tokenizer = load_tokenizer(args.tokenizer, args.named)
    print(json.dumps(metrics.evaluate(tokenizer, read_text(args.file)), indent=2))
    return 0


# --------------------------------------------------------------------------- diff
def _limit(raw: str) -> int:
    """A whole number of pieces, 0 for all, for argparse."""
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 9:
        raise argparse.ArgumentTypeError(f"expected a whole number of pieces (0 for all), not {raw!r}")
    return int(raw)


def cmd_diff(args: argparse.Namespace) -> int:
    """Compare two tokenizers' vocabularies: shared pieces, pieces only in each (by script), and
    with --text the lines of a file that they encode differently."""
    from engine import vocab_diff, vocab_diff_report

    a, b = load_tokenizer(args.a, args.named), load_tokenizer(args.b, args.named)
    result = vocab_diff.diff(a, b)
    lines = vocab_diff.line_diff(a, b, read_text(args.text)) if args.text is not None else None
    names = (args.a, args.b)
    if args.json:
        print(json.dumps(vocab_diff_report.to_dict(result, lines, names=names, limit=args.limit), ensure_ascii=False))
    else:
        sys.stdout.write(vocab_diff_report.to_text(result, lines, names=names, limit=args.limit))
    return 0


# --------------------------------------------------------------------------- import
def cmd_import(args: argparse.Namespace) -> int:
    """Convert vocab.json + merges.txt (or a tiktoken rank file, or a vocab.txt) to tokenizer.json."""
    forms = [name for name in ("vocab", "tiktoken", "vocab_txt") if getattr(args, name) is not None]
    if len(forms) != 1 or (args.vocab is None) != (args.merges is None):
        return _fail("import", "Give exactly one of: --vocab FILE --merges FILE, --tiktoken FILE, or --vocab-txt FILE.")
    specials = args.special_token or []
    if args.vocab is not None:
        from engine.formats.gpt2 import import_gpt2

        # With no --special-token, entries no merge builds that look like <|...|> are taken as
        # special; the note (stderr, so stdout stays the one result line) says which.
        tokenizer, notes = import_gpt2(read_utf8(args.vocab), read_utf8(args.merges),
                                       pretokenizer=args.pretokenizer or "gpt2", special_tokens=specials,
                                       vocab_source=os.path.basename(args.vocab),
                                       merges_source=os.path.basename(args.merges))
        for note in notes:
            print(f"tokenforge import: note: {note}", file=sys.stderr)
    elif args.tiktoken is not None:
        from engine.formats.tiktoken import load_tiktoken

        tokenizer = load_tiktoken(args.tiktoken, args.sidecar, pretokenizer=args.pretokenizer,
                                  special_tokens=specials)
    else:
        from engine.formats.vocab_txt import load_bert_tokenizer

        if specials:
            return _fail("import", "--special-token does not apply to --vocab-txt: BERT's special tokens "
                                   "([PAD], [UNK], [CLS], [SEP], [MASK]) are taken from the file.")
        tokenizer = load_bert_tokenizer(args.vocab_txt, lowercase=not args.cased)
    tokenizer.save(args.output)
    print(f"Imported {tokenizer.vocab_size} tokens; wrote {args.output}.")
    return 0


# --------------------------------------------------------------------------- wiring
def _add(subparsers: Any, name: str, handler: Handler, help_text: str, named: Named | None = None,
         **kwargs: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(name, help=help_text, description=handler.__doc__,
                                                            **kwargs)
    parser.set_defaults(func=_guarded(name, handler), named=named)
    one_line_errors(parser)
    return parser


def register(subparsers: Any, named: Named | None = None, names: Sequence[str] = ()) -> None:
    """Add ``train``, ``encode``, ``import``, ``eval``, ``diff``, ``extend`` and ``merge`` to an argparse
    subparsers object. ``named`` resolves a tokenizer argument that is no file (``cli_inputs.Named``),
    and ``names``, the names it knows, go in the help."""
    # train brings its own -h: the options and defaults of the model named before it
    add_train_arguments(_add(subparsers, "train", cmd_train, "train a tokenizer on text files", add_help=False))
    which = "a tokenizer.json or sentencepiece .model" + (
        f", or an installed preset: {', '.join(names)}" if names else "")

    encode = _add(subparsers, "encode", cmd_encode, "print the token ids of a text as a JSON list", named)
    encode.add_argument("-t", "--tokenizer", required=True, metavar="TOKENIZER", help=which)
    encode.add_argument("--allowed-special", action="append", metavar="TOKEN",
                        help="a special token to encode as such, or 'all' (repeatable)")
    encode.add_argument("--text", help="the text to encode")
    encode.add_argument("--time-limit", type=_seconds, metavar="SECONDS",
                        help="stop with an error if pattern matching takes longer (default: no limit)")
    encode.add_argument("file", nargs="?", metavar="FILE", help="a UTF-8 file to encode ('-' for stdin)")

    imp = _add(subparsers, "import", cmd_import, "convert GPT-2 / tiktoken / vocab.txt files to tokenizer.json")
    imp.add_argument("--vocab", metavar="vocab.json", help="GPT-2 vocab.json (with --merges)")
    imp.add_argument("--merges", metavar="merges.txt", help="GPT-2 merges.txt, with or without #version")
    imp.add_argument("--tiktoken", metavar="FILE", help="a tiktoken rank file")
    imp.add_argument("--sidecar", metavar="FILE.json", help="its sidecar (default: FILE.json if it exists)")
    imp.add_argument("--vocab-txt", metavar="FILE", help="a BERT WordPiece vocab.txt")
    imp.add_argument("--cased", action="store_true", help="with --vocab-txt: do not lowercase (cased BERT)")
    imp.add_argument("--pretokenizer", metavar="NAME|REGEX",
                     help="gpt2, gpt4, o200k, whitespace or a regex (default: gpt2; tiktoken: its sidecar)")
    imp.add_argument("--special-token", action="append", metavar="TOKEN", help="a special token (repeatable)")
    imp.add_argument("-o", "--output", required=True, metavar="tokenizer.json")

    vd = _add(subparsers, "diff", cmd_diff, "compare two tokenizers' vocabularies (and lines of a text)", named)
    vd.add_argument("-a", required=True, metavar="TOKENIZER_A", help=which)
    vd.add_argument("-b", required=True, metavar="TOKENIZER_B", help=which)
    vd.add_argument("--text", metavar="FILE", help="a UTF-8 file ('-' for stdin): list the lines encoded differently")
    vd.add_argument("--json", action="store_true", help="print JSON instead of the text report")
    vd.add_argument("--limit", type=_limit, default=20, metavar="N",
                    help="pieces listed per script and side (default: 20; 0 for all)")

    ev = _add(subparsers, "eval", cmd_eval, "print a tokenizer's metrics on a text as JSON", named)
    ev.add_argument("-t", "--tokenizer", required=True, metavar="TOKENIZER", help=which)
    ev.add_argument("file", metavar="FILE", help="a held-out UTF-8 text")

    add_extend_arguments(_add(subparsers, "extend", cmd_extend, "learn new tokens for a tokenizer from a corpus, "
                                                                "keeping its ids", named), which)
    add_merge_arguments(_add(subparsers, "merge", cmd_merge, "append a donor's missing pieces to a tokenizer "
                                                             "(merge_tokenizers.py's way), its costs first", named),
                        which)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tokenforge", description=__doc__.splitlines()[0] if __doc__ else None)
    one_line_errors(parser)
    register(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one engine command; returns the exit status."""
    one_blas_thread()
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    status = main()
    frozen_for_exit()  # the process ends here
    sys.exit(status)
