"""The subcommands' command lines: ``stdio-executor COMMAND ...``.

Owns: each subcommand's argparse subparser (arguments, help texts, defaults), the help
formatter every parser shares, and dispatch to the module that implements the subcommand.
Must not: import those modules, or anything heavier than argparse, at module level. The
daemon's start-up builds this parser too (``stdio-executor --help`` lists the subcommands),
so a subcommand's code and libraries load only when that subcommand runs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["HelpFormatter", "add_subcommands", "print_help", "run"]


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps descriptions as written and appends an option's default to its help, unless the
    help already says what the default is (``(default: the current directory)``) or there is
    none worth saying (a flag that is off, an option that is unset)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            not action.option_strings
            or "default" in text
            or default in (None, False, argparse.SUPPRESS)
            or default == []
        ):
            return text
        return f"{text} (default: %(default)s)"


_Runner = Callable[[argparse.Namespace], int]


def _parser_for(
    sub: Any, name: str, summary: str, description: str, epilog: str | None = None
) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        prog=f"stdio-executor {name}",
        help=summary,
        description=description,
        epilog=epilog,
        formatter_class=HelpFormatter,
    )
    return parser


def add_subcommands(parser: argparse.ArgumentParser) -> None:
    """Add every subcommand to the daemon's parser; ``args.subcommand`` is None without one."""
    sub = parser.add_subparsers(
        dest="subcommand",
        metavar="COMMAND",
        title="subcommands (stdio-executor help COMMAND, or COMMAND --help, for details)",
    )

    p = _parser_for(
        sub,
        "help",
        "show the help of the daemon or of a subcommand",
        "Show the help of the daemon (no COMMAND) or of a subcommand.",
    )
    topic = p.add_argument("topic", nargs="?", metavar="COMMAND", help="the subcommand to explain")
    p.set_defaults(run=None)

    p = _parser_for(
        sub,
        "schema",
        "print the protocol's JSON Schema",
        "Print the JSON Schema of every command and event (docs/protocol.md, section 15).",
    )
    p.set_defaults(run=_schema)

    _add_fixture_commands(sub)
    _add_timeline(sub)
    _add_pretty(sub)

    p = _parser_for(
        sub,
        "completion",
        "print a bash or zsh completion script",
        "Print a shell completion script for stdio-executor and its subcommands.",
        epilog="install:\n"
        "  bash: stdio-executor completion bash > "
        "~/.local/share/bash-completion/completions/stdio-executor\n"
        '  zsh:  stdio-executor completion zsh > "${fpath[1]}/_stdio-executor"  '
        "(then restart zsh)\n",
    )
    p.add_argument("shell", choices=("bash", "zsh"), help="the shell to complete for")
    p.set_defaults(run=None)

    topic.choices = list(sub.choices)  # known now; also what `help <TAB>` completes
    from .cli import SUBCOMMANDS

    if tuple(sub.choices) != SUBCOMMANDS:  # cli's fast path would start a daemon instead
        raise AssertionError(f"cli.SUBCOMMANDS must list {tuple(sub.choices)}")


def _add_fixture_commands(sub: Any) -> None:
    p = _parser_for(
        sub,
        "replay",
        "pipe recorded fixtures through fresh daemons and compare (docs/fixtures.md)",
        "Pipe each fixture through a fresh daemon and compare its output with the fixture's "
        "expected.ndjson.\nExit status: 0 all passed, 1 a fixture differs (its diff is "
        "printed), 2 a fixture cannot be read.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="fixture dirs, or dirs of them")
    p.add_argument("-j", "--jobs", type=int, default=4, metavar="N", help="fixtures run at once")
    p.add_argument(
        "--command",
        default=None,
        metavar="CMD",
        help="the daemon to run, as shell words (default: this installation's, "
        "python -m stdio_executor)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="seconds a daemon gets to finish after its input ends",
    )
    p.add_argument("--keep", action="store_true", help="keep each fixture's scratch dir")
    p.add_argument(
        "--update",
        action="store_true",
        help="rewrite expected.ndjson of each fixture from this run's output",
    )
    p.add_argument(
        "--junit",
        default=None,
        metavar="FILE",
        help="also write the results as JUnit XML to FILE, one testcase per fixture, for CI "
        "systems (default: none)",
    )
    p.set_defaults(run=_fixtures)

    p = _parser_for(
        sub,
        "record",
        "run a daemon on stdin/stdout and save the session as a fixture",
        "Run a daemon on this stdin/stdout (as a host would) and save the session as a "
        "fixture. Daemon options go after `--`.",
    )
    p.usage = "stdio-executor record DIR [--workspace DIR] [--force] [-- DAEMON OPTIONS...]"
    p.add_argument("out", metavar="DIR", help="the fixture directory to write")
    p.add_argument(
        "--workspace",
        default=None,
        metavar="DIR",
        help="run the daemon in this dir, and save a copy of it (taken before the run) as the "
        "fixture's workspace (default: the current dir, not saved)",
    )
    p.add_argument("--force", action="store_true", help="write into a non-empty DIR")
    p.set_defaults(run=_fixtures, daemon_args=[])

    p = _parser_for(
        sub,
        "journal-to-fixture",
        "turn a session of a journal into a fixture",
        "Turn one session of a journal (--journal FILE) into a fixture.",
    )
    p.add_argument("journal", metavar="JOURNAL", help="a journal written by --journal")
    p.add_argument("out", metavar="DIR", help="the fixture directory to write")
    p.add_argument(
        "--session",
        type=int,
        default=None,
        metavar="N",
        help="session number, 1 = the first (default: the last)",
    )
    p.add_argument(
        "--workspace",
        default=None,
        metavar="DIR",
        help="copy this dir as the fixture's workspace (default: none, an empty workspace)",
    )
    p.add_argument("--force", action="store_true", help="write into a non-empty DIR")
    p.set_defaults(run=_fixtures)


def _add_timeline(sub: Any) -> None:
    p = _parser_for(
        sub,
        "timeline",
        "draw a journal's tools as an SVG timeline or a Chrome trace",
        "Draw the tools of a journaled session (--journal) as an SVG timeline, or write them "
        "as Chrome trace-event JSON for Perfetto (ui.perfetto.dev) and chrome://tracing: what "
        "ran in parallel, what waited, and how each ended.",
    )
    p.add_argument("journal", metavar="JOURNAL", help="a journal written by --journal")
    p.add_argument(
        "-o", "--output", default="-", metavar="FILE", help="file to write (default: stdout)"
    )
    p.add_argument(
        "--format",
        choices=("svg", "trace"),
        default="svg",
        help="svg: a standalone picture; trace: Chrome trace-event JSON",
    )
    p.add_argument(
        "--session",
        type=int,
        default=None,
        metavar="N",
        help="session number, 1 = the first (default: the last)",
    )
    p.add_argument(
        "--width", type=int, default=960, metavar="PX", help="SVG picture width in pixels"
    )
    p.set_defaults(run=_timeline)


def _add_pretty(sub: Any) -> None:
    p = _parser_for(
        sub,
        "pretty",
        "show the daemon's event stream (stdin) for a human",
        "Read the daemon's events (or a journal) on stdin and show them for a human: one live "
        "line per running tool with its elapsed time and progress, results in their status's "
        "colour, permission requests highlighted. Plain text when stdout is not a terminal.",
        epilog="example:\n  stdio-executor < examples/demo.ndjson | stdio-executor pretty\n\n"
        "environment (live view):\n  NO_COLOR  set: no colours (https://no-color.org)\n"
        "  COLUMNS   the width to draw in (default: the terminal's)\n",
    )
    p.add_argument(
        "--plain",
        action="store_true",
        help="one plain text line per event even on a terminal (default: live view on a "
        "terminal, plain text otherwise)",
    )
    p.set_defaults(run=_pretty)


def print_help(parser: argparse.ArgumentParser, topic: str | None) -> int:
    """``stdio-executor help [COMMAND]``."""
    if topic is None:
        parser.print_help()
        return 0
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and topic in action.choices:
            action.choices[topic].print_help()
            return 0
    parser.error(f"no such subcommand: {topic!r}")


def run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """Run the subcommand ``args.subcommand``."""
    if args.subcommand == "help":
        return print_help(parser, args.topic)
    if args.subcommand == "completion":
        return _completion(parser, args.shell)
    runner: _Runner = args.run
    return runner(args)


# The runners import their modules here, when the subcommand runs.


def _schema(args: argparse.Namespace) -> int:
    from .protocol.schema import schema_json

    sys.stdout.buffer.write(schema_json())
    sys.stdout.flush()
    return 0


def _fixtures(args: argparse.Namespace) -> int:
    from .fixtures import run as run_fixtures

    return run_fixtures(args)


def _timeline(args: argparse.Namespace) -> int:
    from .timeline import run as run_timeline

    return run_timeline(args)


def _pretty(args: argparse.Namespace) -> int:
    from .pretty import run as run_pretty

    return run_pretty(args)


def _completion(parser: argparse.ArgumentParser, shell: str) -> int:
    from .completion import completion_script

    sys.stdout.write(completion_script(parser, shell))
    sys.stdout.flush()
    return 0
