"""Command-line entry point: `codemod analyze|impact|...`. main(argv) -> exit code.

Exit codes: 0 success, 1 findings (error-level diagnostics, or pending changes with --check),
2 usage/config/parse failure, 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path

from . import __version__
from .errors import CodemodError, OutputError
from .text import printable

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def _commands():
    # Each stage package exposes add_parser(subparsers) -> sets args.run(args) -> int.
    from .analysis import command as analyze_command
    from .impact import command as impact_command
    from .verify import command as verify_command
    from .apply import command as apply_command
    from .parity import command as parity_command

    return [analyze_command, impact_command, verify_command, apply_command, parity_command]


# Global flags: accepted before or after the subcommand (and a parity verb), one meaning everywhere.
# NOTE: SUPPRESS as the default, so that a subparser which did not see the flag does not reset the
# value the top-level parser read; main() fills in False afterwards.
GLOBAL_FLAGS = (
    (("--debug",), "show tracebacks for internal errors"),
    (("-q", "--quiet"), "no progress on stderr"),
    (("-v", "--verbose"), "more detail in the report (analyze: every launch site; verify: every NVRTC "
                          "program with its time)"),
)


def add_global_flags(parser: argparse.ArgumentParser) -> None:
    """Add the global flags to `parser` and to every subparser under it."""
    group = parser.add_argument_group("global options")
    for names, text in GLOBAL_FLAGS:
        group.add_argument(*names, action="store_true", default=argparse.SUPPRESS, help=text)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                add_global_flags(child)


def fill_global_flags(args: argparse.Namespace) -> argparse.Namespace:
    """False for every global flag the command line did not give."""
    for names, _ in GLOBAL_FLAGS:
        dest = names[-1].lstrip("-")
        setattr(args, dest, getattr(args, dest, False))
    return args


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse exits 2 on usage errors already; keep one line
        self.print_usage(sys.stderr)
        raise SystemExit(f"codemod: error: {message}") from None


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="codemod", description="Move template-heavy CUDA kernels from build-time "
                     "instantiation to NVRTC: analyze, price, apply, verify.")
    parser.add_argument("--version", action="version", version=f"codemod {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for module in _commands():
        module.add_parser(sub)
    add_global_flags(parser)
    return parser


# Options that name a file a command writes (`parity report -o` too): a missing folder is refused
# before any work, not after a long analysis.
OUTPUT_OPTIONS = ("json", "html", "trace", "diff", "layer_diff", "cache_diff", "report")


def check_outputs(args: argparse.Namespace) -> None:
    dests = OUTPUT_OPTIONS + (("output",) if getattr(args, "verb", None) == "report" else ())
    for dest in dests:
        value = getattr(args, dest, None)
        if value is None or str(value) == "-":
            continue
        path = Path(value)
        if path.is_dir():
            raise OutputError(f"--{dest.replace('_', '-')} {value} is a folder, expected a file path")
        if not path.parent.is_dir():
            raise OutputError(f"--{dest.replace('_', '-')} {value}: folder {path.parent} does not exist",
                              hint="create it first, or write somewhere else")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        if isinstance(exc.code, str):
            print(printable(exc.code), file=sys.stderr)
            return EXIT_USAGE
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    fill_global_flags(args)
    if not getattr(args, "run", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        check_outputs(args)
        return args.run(args)
    except CodemodError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"codemod: error: {printable(exc.render())}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("codemod: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as exc:
        # NOTE: a file the commands did not check themselves (unreadable, vanished, disk full):
        # the file and the reason, in one line.
        if not exc.filename or args.debug:
            return _internal_error(exc, args.debug)
        print(f"codemod: error: {printable(exc.filename)}: {printable(exc.strerror or exc)}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # noqa: BLE001 - last line of defence: one line unless --debug
        return _internal_error(exc, args.debug)


def _internal_error(exc: Exception, debug: bool) -> int:
    if debug:
        raise exc
    print(f"codemod: internal error: {type(exc).__name__}: {printable(exc, 500)} (rerun with --debug)", file=sys.stderr)
    return EXIT_USAGE


if __name__ == "__main__":
    raise SystemExit(main())
