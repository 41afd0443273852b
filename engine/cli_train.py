"""``tokenforge train``: its flags, generated from the trainers' options, and the command.

Each trainer's options dataclass (``engine.trainers.option_specs``) becomes flags:
``vocab_size`` becomes ``--vocab-size``, a list field such as ``special_tokens`` a repeatable
``--special-token`` (and ``--no-special-tokens``), a bool ``--x/--no-x``. Values are checked by
the options classes themselves; their messages are rewritten to name the flag. The command
writes ``OUTDIR/tokenizer.json`` plus the model's own files and draws a progress bar when stderr
is a terminal. Error reporting is ``cli.py``'s: everything here raises TokenforgeError.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from engine.errors import ConfigError
from engine.tokenizer import Tokenizer

_OPTION_PREFIX = "option__"  # namespace attributes that hold trainer options


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    """The fixed arguments of ``train`` and one flag per trainer option."""
    from engine.trainers import TRAINERS

    parser.add_argument("--model", required=True, choices=list(TRAINERS), help="the algorithm")
    parser.add_argument("-o", "--output", required=True, metavar="OUTDIR", help="folder to write the files to")
    parser.add_argument("files", nargs="+", metavar="FILE", help="UTF-8 corpus files")
    _add_option_flags(parser, _trainer_specs())


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
        raise ConfigError(f"The {args.model} trainer is not available ({exc}).") from None
    given = {k[len(_OPTION_PREFIX):]: v for k, v in vars(args).items() if k.startswith(_OPTION_PREFIX)}
    for name in given:
        if name not in specs:
            flags = ", ".join(_flag(n, s.type) for n, s in specs.items())
            raise ConfigError(f"{_flag(name, 'str')} is not an option of the {args.model} trainer; "
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
