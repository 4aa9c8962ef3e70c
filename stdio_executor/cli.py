"""Command line: ``stdio-executor [options]`` runs the daemon; subcommands do the rest.

Owns: argument parsing, logging set-up, and the start-up order, which is tuned for time to
the ``ready`` line: the line is built from pre-generated schemas and written before anyio,
asyncio or pydantic are imported (PERF-NOTES: those imports are most of a cold start).
Commands the host sends meanwhile wait in the pipe, so nothing is lost.

Exit codes: 0 stdin reached EOF and every result was written; 1 internal error;
2 bad command line; 3 the host went away (stdout closed or parent exited);
128+N stopped by signal N (143 for SIGTERM, 130 for SIGINT).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from . import __version__
from .config import DEFAULT_MAX_LINE_BYTES, Config

if TYPE_CHECKING:
    from .tools.catalog import ToolRegistry

__all__ = ["main"]

log = logging.getLogger("stdio_executor")

EXIT_USAGE = 2

_DESCRIPTION = """\
Run tool calls for an LLM agent: NDJSON commands on stdin, NDJSON events on stdout.

subcommands:
  schema            print the protocol's JSON Schema
"""

_EPILOG = """\
example:
  printf '%s\\n' '{"type":"add_tool","tool_use":{"type":"tool_use","id":"a","name":"Bash",\
"input":{"command":"echo hi"}}}' '{"type":"drain"}' | stdio-executor

exit codes: 0 EOF and all written, 1 internal error, 2 usage, 3 host gone, 128+N signal N.
Protocol reference: docs/protocol.md
"""


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="stdio-executor",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"stdio-executor {__version__}")
    p.add_argument(
        "--workspace",
        default=None,
        help="directory the tools work in (default: the current directory)",
    )
    p.add_argument(
        "--max-concurrency",
        type=_positive,
        default=10,
        metavar="N",
        help="most tools executing at once (default 10)",
    )
    p.add_argument(
        "--result-order",
        choices=("strict", "barrier"),
        default="strict",
        help="strict: results in add_tool order (default); barrier: Claude Code's order, a "
        "finished result may pass an earlier read-only tool that still runs",
    )
    p.add_argument(
        "--max-line-bytes",
        type=_positive,
        default=DEFAULT_MAX_LINE_BYTES,
        metavar="N",
        help="longest input line accepted; longer ones are skipped with an error (default 64 MiB)",
    )
    p.add_argument(
        "--spill-dir",
        default=None,
        metavar="DIR",
        help="where results over a tool's size limit are saved (default: a per-session "
        "directory under the system temp dir; files are kept after exit)",
    )
    p.add_argument(
        "--builtin-tools",
        dest="enabled",
        default=None,
        metavar="NAMES",
        help="comma-separated built-in tools to enable, e.g. Read,Grep (default: all)",
    )
    p.add_argument("--log-level", default="warning", choices=("debug", "info", "warning", "error"))
    p.add_argument("--log-format", default="text", choices=("text", "json"))
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["schema"]:
        return _schema(args_list[1:])
    args = _parser().parse_args(args_list)
    _setup_logging(args.log_level, args.log_format)
    workspace = os.path.abspath(args.workspace or os.getcwd())
    if not os.path.isdir(workspace):
        sys.stderr.write(f"stdio-executor: workspace {workspace!r} is not a directory\n")
        return EXIT_USAGE
    enabled = tuple(t for t in args.enabled.split(",") if t) if args.enabled else None
    config = Config(
        workspace=workspace,
        max_concurrency=args.max_concurrency,
        result_order=args.result_order,
        max_line_bytes=args.max_line_bytes,
        **({"spill_dir": os.path.abspath(args.spill_dir)} if args.spill_dir else {}),
        tools=enabled,
    )
    return _serve(config)


def _serve(config: Config) -> int:
    from .runtime.stdio import claim_stdio
    from .tools.catalog import ToolRegistry, builtin_specs

    specs = builtin_specs(config.tools)
    unknown = set(config.tools or ()) - {s.name for s in specs}
    if unknown:
        sys.stderr.write(f"stdio-executor: unknown tools in --builtin-tools: {sorted(unknown)}\n")
        return EXIT_USAGE
    registry = ToolRegistry(specs)
    fds = claim_stdio()
    try:
        os.write(fds.output_fd, _ready_line(config, registry))
    except OSError as exc:
        log.error("cannot write the ready line: %s", exc)
        return 3
    # Pay pydantic's import and the tool modules' load while the host is still busy with
    # `ready`, not on the first tool call.
    threading.Thread(target=_warm, args=(registry,), name="warm-up", daemon=True).start()

    import anyio

    from .processes import ProcessRegistry
    from .runtime.daemon import EXIT_INTERNAL, Daemon
    from .tools.session import Session

    session = Session(
        workspace=config.workspace,
        spill_dir=config.spill_dir,
        processes=ProcessRegistry(),
        session_id=f"{os.getpid()}",
    )
    daemon = Daemon(config, registry, session, fds)
    try:
        return anyio.run(daemon.run)
    except Exception:
        log.exception("internal error; stopping")
        session.processes.close()
        return EXIT_INTERNAL
    finally:
        fds.restore()


def _ready_line(config: Config, registry: ToolRegistry) -> bytes:
    from protocol import PROTOCOL_VERSION, Limits, Ready, ToolDefinition, ToolInfo, encode_event

    specs = registry.specs
    ready = Ready(
        protocol_version=PROTOCOL_VERSION,
        version=__version__,
        pid=os.getpid(),
        tools=[
            ToolDefinition(
                name=s.name, description=s.description, input_schema=dict(s.input_schema)
            )
            for s in specs
        ],
        tool_info={
            s.name: ToolInfo(
                read_only=s.read_only,
                interrupt_behavior=s.interrupt_behavior,
                aliases=list(s.aliases),
                max_result_bytes=s.max_result_bytes,
                source=s.source,
            )
            for s in specs
        },
        limits=Limits(
            max_line_bytes=config.max_line_bytes,
            max_concurrency=config.max_concurrency,
            result_order=config.result_order,
        ),
    )
    return encode_event(ready)


def _warm(registry: ToolRegistry) -> None:
    try:
        registry.warm()
        from .tools import inputs, validation  # noqa: F401
    except Exception:  # pragma: no cover - the first real call reports the problem
        log.debug("warm-up failed", exc_info=True)


def _schema(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="stdio-executor schema", description="Print the JSON Schema.")
    p.parse_args(argv)
    from protocol.schema import schema_json

    sys.stdout.buffer.write(schema_json())
    sys.stdout.flush()
    return 0


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        import msgspec

        entry = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return msgspec.json.encode(entry).decode()


def _setup_logging(level: str, fmt: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(_JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("stdio-executor %(levelname)s %(message)s"))
    root = logging.getLogger("stdio_executor")
    root.addHandler(handler)
    root.setLevel(level.upper())
    root.propagate = False
