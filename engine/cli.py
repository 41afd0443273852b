"""The engine's commands: ``train``, ``encode``, ``import`` and ``eval`` (documented in docs/cli.md).

``register(subparsers)`` adds them to a parser; the ``tokenforge`` console script
(``webapp/cli.py``) does that next to its web commands, and ``main(argv)`` runs them alone.
``train``'s flags are generated from each trainer's options dataclass
(``engine.trainers.option_specs``): ``vocab_size`` becomes ``--vocab-size``, a list field such as
``special_tokens`` becomes a repeatable ``--special-token`` (and ``--no-special-tokens``), a bool
becomes ``--x/--no-x``. Values are checked by the options classes themselves.

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
from pathlib import Path
from typing import Any, NoReturn

from engine.errors import ConfigError, SpecialTokenError, TokenforgeError
from engine.tokenizer import Tokenizer

Handler = Callable[[argparse.Namespace], int]
_OPTION_PREFIX = "option__"  # namespace attributes that hold trainer options


def _one_line_errors(parser: argparse.ArgumentParser) -> None:
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


def _read_text(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        from engine.errors import FormatError

        raise FormatError(f"The file is not UTF-8 text (bad byte at offset {exc.start}).", source=path) from None


def _load_tokenizer(path: str) -> Tokenizer:
    from engine.serialization import loads

    return loads(Path(path).read_bytes())


# --------------------------------------------------------------------------- train
def _trainer_specs() -> dict[str, list[Any]]:
    """The option specs of every trainer that imports; a missing one only loses its flags."""
    from engine.trainers import TRAINERS, option_specs

    specs: dict[str, list[Any]] = {}
    for algorithm in TRAINERS:
        try:
            specs[algorithm] = option_specs(algorithm)
        except Exception:  # noqa: BLE001 - a trainer being written must not break `encode`
            continue
    return specs


def _flag(name: str, kind: str) -> str:
    if kind == "list" and name.endswith("s"):
        name = name[:-1]
    return "--" + name.replace("_", "-")


def _add_option_flags(parser: argparse.ArgumentParser, specs: dict[str, list[Any]]) -> None:
    group = parser.add_argument_group("trainer options (which apply depends on --model)")
    seen: set[str] = set()
    for algorithm, options in specs.items():
        for spec in options:
            if spec.name in seen:
                continue
            seen.add(spec.name)
            flags = [_flag(spec.name, spec.type)]
            if "pretokenizer" in spec.name.replace("_", ""):
                flags += [f for f in ("--pretokenizer", "--pre-tokenizer") if f not in flags]
            dest = _OPTION_PREFIX + spec.name
            models = [a for a, o in specs.items() if any(s.name == spec.name for s in o)]
            default = "none" if spec.default is None else spec.default
            text = f"{spec.help} [{', '.join(models)}; default: {default}]"
            if spec.choices:
                text += f" (e.g. {', '.join(spec.choices)})"
            try:
                if spec.type == "bool":
                    group.add_argument(*flags, dest=dest, action=argparse.BooleanOptionalAction,
                                       default=argparse.SUPPRESS, help=text)
                elif spec.type == "list":
                    group.add_argument(*flags, dest=dest, action="append", metavar="VALUE",
                                       default=argparse.SUPPRESS, help=text + " (repeatable)")
                    group.add_argument("--no-" + spec.name.replace("_", "-"), dest=dest,
                                       action="store_const", const=[], default=argparse.SUPPRESS,
                                       help=f"no {spec.name.replace('_', ' ')} at all")
                else:
                    group.add_argument(*flags, dest=dest, metavar=spec.type.upper(),
                                       default=argparse.SUPPRESS, help=text)
            except argparse.ArgumentError:
                continue  # the name clashes with a fixed flag (-o, --model): keep the fixed one


class _ProgressBar:
    """A one-line progress bar on stderr, drawn only when stderr is a terminal."""

    def __init__(self) -> None:
        self.active = sys.stderr.isatty()
        self.drawn = False

    def __call__(self, stage: str, current: int, total: int) -> None:
        if not self.active:
            return
        if total > 0:
            done = min(30, 30 * current // total)
            line = f"{stage:<16} [{'#' * done}{'.' * (30 - done)}] {100 * current // total:3d}%  {current}/{total}"
        else:
            line = f"{stage:<16} {current}"
        sys.stderr.write("\r" + line[:100].ljust(80))
        sys.stderr.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _write_model_files(tokenizer: Tokenizer, outdir: Path) -> list[Path]:
    """Write the model's own files beside tokenizer.json (BPE, WordPiece and Unigram have some)."""
    kind = tokenizer.model.kind
    if kind == "bpe":
        from engine.formats.gpt2 import save_gpt2

        save_gpt2(tokenizer, outdir / "vocab.json", outdir / "merges.txt")
        return [outdir / "vocab.json", outdir / "merges.txt"]
    if kind == "wordpiece":
        from engine.formats.vocab_txt import write_vocab_txt

        write_vocab_txt(tokenizer.model.vocab(), outdir / "vocab.txt")
        return [outdir / "vocab.txt"]
    if kind == "unigram":
        from engine.formats.spm import save_vocab

        save_vocab(tokenizer.model, outdir / "tokenizer.vocab")  # type: ignore[arg-type]
        return [outdir / "tokenizer.vocab"]
    return []


def cmd_train(args: argparse.Namespace) -> int:
    """Train a tokenizer and write OUTDIR/tokenizer.json plus the model's own files."""
    from engine.trainers import option_specs, train

    try:
        specs = {spec.name: spec for spec in option_specs(args.model)}
    except ImportError as exc:
        return _fail("train", f"The {args.model} trainer is not available ({exc}).")
    given = {k[len(_OPTION_PREFIX):]: v for k, v in vars(args).items() if k.startswith(_OPTION_PREFIX)}
    for name in given:
        if name not in specs:
            flags = ", ".join(_flag(n, s.type) for n, s in specs.items())
            return _fail("train", f"{_flag(name, 'str')} is not an option of the {args.model} trainer; "
                                  f"its options are: {flags}.")
    outdir = Path(args.output)
    outdir.mkdir(parents=True, exist_ok=True)
    bar = _ProgressBar()
    try:
        result = train(args.model, args.files, given, progress=bar)
    except ConfigError as exc:  # name the flag, not the dataclass field
        message = str(exc)
        for name, spec in specs.items():
            message = message.replace(f"Option {name} ", f"{_flag(name, spec.type)} ")
        raise ConfigError(message) from None
    finally:
        bar.close()
    tokenizer = result.tokenizer
    tokenizer.save(outdir / "tokenizer.json")
    written = [outdir / "tokenizer.json", *_write_model_files(tokenizer, outdir)]
    seconds = result.stats.get("seconds", "?")
    print(f"Trained a {args.model} tokenizer of {tokenizer.vocab_size} tokens in {seconds} s; "
          f"wrote {', '.join(str(p) for p in written)}.")
    return 0


# --------------------------------------------------------------------------- encode, eval
def cmd_encode(args: argparse.Namespace) -> int:
    """Print the ids of a text or file as one JSON list."""
    tokenizer = _load_tokenizer(args.tokenizer)
    if (args.text is None) == (args.file is None):
        return _fail("encode", "Give either --text TEXT or a FILE to encode (not both).")
    text = args.text if args.text is not None else _read_text(args.file)
    allowed: Any = frozenset(args.allowed_special or ())
    if "all" in allowed:
        allowed = "all"
    print(json.dumps(tokenizer.encode(text, allowed_special=allowed)))
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    """Print the evaluation metrics of a tokenizer on a held-out text, as JSON."""
    try:
        metrics = importlib.import_module("engine.metrics")
    except ImportError:
        return _fail("eval", "Evaluation is not available in this version (engine.metrics is missing).")
    tokenizer = _load_tokenizer(args.tokenizer)
    print(json.dumps(metrics.evaluate(tokenizer, _read_text(args.file)), indent=2))
    return 0


# --------------------------------------------------------------------------- import
def cmd_import(args: argparse.Namespace) -> int:
    """Convert vocab.json + merges.txt (or a tiktoken rank file, or a vocab.txt) to tokenizer.json."""
    forms = [name for name in ("vocab", "tiktoken", "vocab_txt") if getattr(args, name) is not None]
    if len(forms) != 1 or (args.vocab is None) != (args.merges is None):
        return _fail("import", "Give exactly one of: --vocab FILE --merges FILE, --tiktoken FILE, or --vocab-txt FILE.")
    specials = args.special_token or []
    if args.vocab is not None:
        from engine.formats.gpt2 import load_gpt2

        tokenizer = load_gpt2(args.vocab, args.merges, pretokenizer=args.pretokenizer or "gpt2",
                              special_tokens=specials)
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
def _add(subparsers: Any, name: str, handler: Handler, help_text: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(name, help=help_text, description=handler.__doc__)
    parser.set_defaults(func=_guarded(name, handler))
    _one_line_errors(parser)
    return parser


def register(subparsers: Any) -> None:
    """Add ``train``, ``encode``, ``import`` and ``eval`` to an argparse subparsers object."""
    from engine.trainers import TRAINERS

    train = _add(subparsers, "train", cmd_train, "train a tokenizer on text files")
    train.add_argument("--model", required=True, choices=list(TRAINERS), help="the algorithm")
    train.add_argument("-o", "--output", required=True, metavar="OUTDIR", help="folder to write the files to")
    train.add_argument("files", nargs="+", metavar="FILE", help="UTF-8 corpus files")
    _add_option_flags(train, _trainer_specs())

    encode = _add(subparsers, "encode", cmd_encode, "print the token ids of a text as a JSON list")
    encode.add_argument("-t", "--tokenizer", required=True, metavar="TOKENIZER.json")
    encode.add_argument("--allowed-special", action="append", metavar="TOKEN",
                        help="a special token to encode as such, or 'all' (repeatable)")
    encode.add_argument("--text", help="the text to encode")
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

    ev = _add(subparsers, "eval", cmd_eval, "print a tokenizer's metrics on a text as JSON")
    ev.add_argument("-t", "--tokenizer", required=True, metavar="TOKENIZER.json")
    ev.add_argument("file", metavar="FILE", help="a held-out UTF-8 text")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tokenforge", description=__doc__.splitlines()[0] if __doc__ else None)
    _one_line_errors(parser)
    register(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one engine command; returns the exit status."""
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
