"""Command line: ``stdio-executor [options]`` runs the daemon; subcommands do the rest.

Owns: the daemon's options, parsing the command line (the subcommands' own parsers are in
``commands``, loaded only when one is named), logging set-up, and the start-up order, which
is tuned for time to the ``ready`` line: the line is built from pre-generated schemas and
written before anyio, asyncio or the tool modules are imported (PERF-NOTES: those imports
are most of a cold start).
Commands the host sends meanwhile wait in the pipe, so nothing is lost.

Exit codes: 0 stdin reached EOF and every result was written; 1 internal error;
2 bad command line; 3 the host went away (stdout closed or parent exited);
128+N stopped by signal N (143 for SIGTERM, 130 for SIGINT).
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from . import __version__

if TYPE_CHECKING:
    from .config import Config
    from .journal import Journal
    from .permissions.settings import Settings
    from .permissions.settings_gate import SettingsGate
    from .sandbox.plan import Sandbox
    from .tools.catalog import ToolRegistry
    from .tools.host import HostBridge
    from .tools.mcp import McpServerConfig
    from .tools.session import Session

__all__ = ["main"]

log = logging.getLogger("stdio_executor")

EXIT_USAGE = 2

# Every subcommand (commands.py defines them), in --help's order. Kept here so that the
# daemon's fast path (see _parse) need not load commands.py.
SUBCOMMANDS = (
    "help",
    "schema",
    "replay",
    "record",
    "journal-to-fixture",
    "timeline",
    "pretty",
    "completion",
)

_USAGE = """\
stdio-executor [DAEMON OPTIONS]        run the daemon: NDJSON commands in, events out
       stdio-executor COMMAND [ARGS...]       a subcommand (stdio-executor help COMMAND)"""

_DESCRIPTION = """\
Run tool calls for an LLM agent: NDJSON commands on stdin, NDJSON events on stdout.
With no subcommand, stdio-executor is the daemon; its options are listed below."""

# Every variable the package reads; tests/test_cli.py checks this list against the source.
_ENVIRONMENT = """\
environment:
  STDIO_EXECUTOR_KILL_GRACE  seconds a stopped Bash process group gets between SIGTERM and
                             SIGKILL (default 1.0)
  STDIO_EXECUTOR_CONTAINMENT subreaper: contain children without PID namespaces even where
                             the kernel has them; userns: as an unprivileged daemon does, a
                             user + PID namespace per call (docs/sandbox.md; for testing)
  MCP_TIMEOUT                milliseconds an MCP server gets to start (default 30000)
  MCP_TOOL_TIMEOUT           milliseconds one MCP tool call may take (default 600000)
  TMPDIR, TEMP, TMP          the first one set is the parent of the default --spill-dir
                             (default /tmp)
  CLAUDE_PROJECT_DIR         set by the daemon for hooks: the workspace
  CLAUDE_CODE_SUBPROCESS_ENV_SCRUB
                             1: as --scrub-env; 0: commands inherit every credential
                             (the model API's are removed by default)
  STDIO_EXECUTOR_SANDBOX_DISABLE
                             comma-separated sandbox mechanisms to treat as missing
                             (landlock, userns, bwrap, join), to test an unsupported
                             system
  XDG_CONFIG_HOME            where git's global config and ignore file are, which ripgrep
                             may read under Grep's Landlock domain (default ~/.config)
  STDIO_EXECUTOR             not read by the daemon: the command the examples and clients
                             start, as a JSON array of words or as shell words
"""

_EPILOG = (
    _ENVIRONMENT
    + """
example:
  printf '%s\\n' '{"type":"add_tool","tool_use":{"type":"tool_use","id":"a","name":"Bash",\
"input":{"command":"echo hi"}}}' '{"type":"drain"}' | stdio-executor

exit codes: 0 EOF and all written, 1 internal error, 2 usage, 3 host gone, 128+N signal N.
Protocol reference: docs/protocol.md
"""
)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


class _UsageFormatter(argparse.HelpFormatter):
    """The daemon's fast path shows only ``_USAGE`` (in an error), which is written out
    already: a fixed width spares argparse asking the terminal for one each time it builds
    a formatter (once per option), which imports shutil (~3 ms before ``ready``)."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=100)


def _parser(subcommands: bool = True) -> argparse.ArgumentParser:
    """The whole command line: the daemon's options, then the subcommands (left out on the
    daemon's fast path, see ``_parse``). Helpers adding a daemon option add it to ``d``, the
    group --help lists as the daemon's."""
    from .config import DEFAULT_MAX_LINE_BYTES  # after the dependency check: needs msgspec

    formatter: type[argparse.HelpFormatter] = _UsageFormatter  # only usage is shown
    if subcommands:
        from .commands import HelpFormatter

        formatter = HelpFormatter
    p = argparse.ArgumentParser(
        prog="stdio-executor",
        usage=_USAGE,
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=formatter,
    )
    p.add_argument("--version", action="version", version=f"stdio-executor {__version__}")
    d = p.add_argument_group("daemon options (with no subcommand)")
    d.add_argument(
        "--workspace",
        default=None,
        metavar="DIR",
        help="directory the tools work in (default: the current directory)",
    )
    d.add_argument(
        "--max-concurrency",
        type=_positive,
        default=10,
        metavar="N",
        help="most tools executing at once (default 10)",
    )
    d.add_argument(
        "--result-order",
        choices=("strict", "barrier"),
        default="strict",
        help="strict: results in add_tool order (default); barrier: Claude Code's order, a "
        "finished result may pass an earlier read-only tool that still runs",
    )
    d.add_argument(
        "--max-line-bytes",
        type=_positive,
        default=DEFAULT_MAX_LINE_BYTES,
        metavar="N",
        help="longest input line accepted; longer ones are skipped with an error (default 64 MiB)",
    )
    d.add_argument(
        "--spill-dir",
        default=None,
        metavar="DIR",
        help="where results over a tool's size limit are saved (default: a per-session "
        "directory under the system temp dir; files are kept after exit)",
    )
    d.add_argument(
        "--builtin-tools",
        dest="enabled",
        default=None,
        metavar="NAMES",
        help="comma-separated built-in tools to enable, e.g. Read,Grep (default: all)",
    )
    d.add_argument(
        "--host-builtins",
        default=None,
        metavar="NAMES",
        help="comma-separated Claude Code tools the host serves under the daemon's own "
        "definitions, as tool_call events: WebSearch, Task, Agent, or any built-in it takes "
        "over, e.g. WebSearch,Task (default: none)",
    )
    d.add_argument(
        "--tools",
        dest="host_tools",
        action="append",
        default=[],
        metavar="FILE",
        help="host-implemented tools: a JSON array of API tool definitions plus read_only, "
        "interrupt_behavior, timeout_ms, aliases (may repeat; see docs/protocol.md; default: none)",
    )
    d.add_argument(
        "--mcp-config",
        action="append",
        default=[],
        metavar="FILE",
        help="MCP servers from a Claude Code-style .mcp.json (may repeat); the workspace's "
        ".mcp.json is read too unless --strict-mcp-config (default: none)",
    )
    d.add_argument(
        "--strict-mcp-config",
        action="store_true",
        help="use only the MCP servers of --mcp-config files",
    )
    d.add_argument(
        "--journal",
        default=None,
        metavar="FILE",
        help="append every command received and event written to FILE (NDJSON); on start, "
        "report tools the previous run started and never finished (default: no journal)",
    )
    d.add_argument(
        "--settings",
        action="append",
        default=[],
        metavar="PATH",
        help="a Claude Code settings.json (or JSON text) with permissions and hooks; may "
        "repeat; read after the workspace's .claude/settings.json and settings.local.json, "
        "later files win (docs/permissions.md; default: none)",
    )
    d.add_argument(
        "--permission-mode",
        default=None,
        choices=("default", "acceptEdits", "plan", "dontAsk", "bypassPermissions"),
        help="overrides the settings' defaultMode (default: that, else `default`: read-only "
        "tools run, anything else asks the host with permission_request)",
    )
    d.add_argument(
        "--trust-workspace",
        action="store_true",
        help="trust the workspace at once: its .claude/settings*.json apply in full and its "
        ".mcp.json servers start (default: they only narrow permissions until the host sends "
        "trust_workspace; docs/permissions.md)",
    )
    d.add_argument(
        "--no-prompt",
        action="store_true",
        help="never ask the host: what would be asked is denied (e.g. replaying fixtures)",
    )
    d.add_argument(
        "--sandbox",
        choices=("auto", "on", "off"),
        default="auto",
        help="run Bash in an OS sandbox (Linux: Landlock + namespaces; docs/sandbox.md). "
        "auto: where the system supports it; on: fail start-up where it does not "
        "(default: auto)",
    )
    d.add_argument(
        "--permission-timeout",
        type=_positive_seconds,
        default=None,
        metavar="SECONDS",
        help="deny a permission_request the host has not answered within SECONDS, saying so "
        "in the result (default: wait as long as the call lives; a request unanswered for "
        "10 s, or half of SECONDS, is logged as a warning on stderr either way)",
    )
    d.add_argument(
        "--scrub-env",
        action="store_true",
        help="also remove cloud credentials and CI tokens (AWS_SECRET_ACCESS_KEY, "
        "GOOGLE_APPLICATION_CREDENTIALS, ACTIONS_ID_TOKEN_REQUEST_TOKEN ...) from what "
        "commands, hooks and MCP servers inherit; the model API's own credentials "
        "(ANTHROPIC_API_KEY ...) are always removed (docs/protocol.md)",
    )
    d.add_argument(
        "--keep-env",
        action="append",
        default=[],
        metavar="NAME",
        help="let commands inherit the credential NAME after all (repeatable; default: none)",
    )
    d.add_argument(
        "--log-level",
        default="warning",
        choices=("debug", "info", "warning", "error"),
        help="least severe diagnostics written to stderr",
    )
    d.add_argument(
        "--log-format",
        default="text",
        choices=("text", "json"),
        help="stderr diagnostics as text lines or as one JSON object per line",
    )
    if subcommands:
        from .commands import add_subcommands

        add_subcommands(p)
    return p


# Imported by the daemon's start-up path; the rest load lazily and are checked when used.
_REQUIRED = ("msgspec", "anyio")


def _missing_dependencies() -> list[str]:
    """Run from a checkout without ``pip install -e .``, Python finds the package in the
    current directory but not its dependencies: say so instead of a traceback (or, worse,
    a ``ready`` line followed by a crash)."""
    from importlib.util import find_spec

    return [name for name in _REQUIRED if find_spec(name) is None]


def main(argv: Sequence[str] | None = None) -> int:
    # Start-up allocates what lives as long as the process (modules, classes, tables): the
    # cyclic collector's passes over it find nothing and cost ~4 ms before `ready` and ~5 ms
    # more before the first result. Off until the daemon is first idle (_gc_after_start-up).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _main(argv, collecting)
    finally:
        if collecting:
            gc.enable()


def _main(argv: Sequence[str] | None, collecting: bool) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    missing = _missing_dependencies()
    if missing:
        sys.stderr.write(
            f"stdio-executor: missing dependencies ({', '.join(missing)}) for {sys.executable}. "
            "Install the project first: pip install -e .\n"
        )
        return EXIT_USAGE
    parser, args = _parse(args_list)
    if args.subcommand is not None:
        if collecting:
            gc.enable()
        from .commands import run

        return run(parser, args)
    _setup_logging(args.log_level, args.log_format)
    # Before anything is started: every child inherits the daemon's environment.
    from .environment import scrub

    removed = scrub(os.environ, everything=args.scrub_env, keep=args.keep_env)
    if removed:
        logging.getLogger(__name__).info(
            "not passed on to commands, hooks and MCP servers: %s", ", ".join(removed)
        )
    workspace = os.path.abspath(args.workspace or os.getcwd())
    if not os.path.isdir(workspace):
        sys.stderr.write(f"stdio-executor: workspace {workspace!r} is not a directory\n")
        return EXIT_USAGE
    enabled = tuple(t for t in args.enabled.split(",") if t) if args.enabled else None
    from .config import Config

    config = Config(
        workspace=workspace,
        max_concurrency=args.max_concurrency,
        result_order=args.result_order,
        max_line_bytes=args.max_line_bytes,
        **({"spill_dir": os.path.abspath(args.spill_dir)} if args.spill_dir else {}),
        tools=enabled,
        settings=tuple(args.settings),
        permission_mode=args.permission_mode,
        no_prompt=args.no_prompt,
        trust_workspace=args.trust_workspace,
        permission_timeout=args.permission_timeout,
        host_tool_files=tuple(args.host_tools),
        host_builtins=tuple(t for t in (args.host_builtins or "").split(",") if t),
        mcp_configs=tuple(args.mcp_config),
        strict_mcp_config=args.strict_mcp_config,
        journal=args.journal,
        argv=tuple(args_list),
        sandbox=args.sandbox,
    )
    return _serve(config, collecting)


def _serve(config: Config, collecting: bool = True) -> int:
    from .runtime.fds import claim_stdio
    from .tools.catalog import ToolRegistry, builtin_specs

    specs = builtin_specs(config.tools)
    unknown = set(config.tools or ()) - {s.name for s in specs}
    if unknown:
        sys.stderr.write(f"stdio-executor: unknown tools in --builtin-tools: {sorted(unknown)}\n")
        return EXIT_USAGE
    registry = ToolRegistry(specs)
    external = _external_tools(config, registry)
    if external is None:
        return EXIT_USAGE
    host, mcp_servers, held_mcp = external
    try:
        permission_settings = _permission_settings(config)
        sandbox = _sandbox(config, permission_settings)
    except _BadSettings:
        return EXIT_USAGE
    first = [_ready_line(config, registry, sandbox, permission_settings, held_mcp)]
    journal = None
    if config.journal:
        try:
            journal, recovered = _open_journal(config)
        except OSError as exc:
            sys.stderr.write(f"stdio-executor: cannot use the journal: {exc}\n")
            return EXIT_USAGE
        first += recovered
        for line in first:
            journal.record_out(line)
        journal.flush()
    fds = claim_stdio()
    try:
        os.write(fds.output_fd, b"".join(first))
    except OSError as exc:
        log.error("cannot write the ready line: %s", exc)
        return 3
    import anyio

    from .processes import ProcessRegistry, watch_parent_death
    from .runtime.daemon import EXIT_INTERNAL, Daemon
    from .tools.session import Session

    watch_parent_death()
    processes = ProcessRegistry()
    session = Session(
        workspace=config.workspace,
        spill_dir=config.spill_dir,
        processes=processes,
        session_id=f"{os.getpid()}",
        sandbox=sandbox if sandbox is not None and sandbox.active else None,
    )
    gate = _gate(config, permission_settings, session)
    # Work nothing waits for yet, done when the loop is first idle: the host's first call
    # is usually in the pipe by then and goes first (a new Python process and a thread
    # holding the GIL took ~30 ms from it; bench/NOTES.md). Each is also done on demand: the
    # first spawn starts the spawner, the first sandboxed call prepares the sandbox. Not
    # held back until no call runs: that moved the warm-up onto the host's second call
    # (bench/NOTES.md section 19).
    when_idle = [
        lambda: _gc_after_startup(collecting),
        # From the loop's thread, the main one, which lives as long as we do: the spawner's
        # parent-death signal is tied to the thread that started it.
        processes.start,
        lambda: _thread(_warm, registry, gate),
    ]
    if sandbox is not None and sandbox.active:
        when_idle.append(lambda: _thread(_prepare, sandbox))  # the namespace holder, the proxy
    daemon = Daemon(
        config,
        registry,
        session,
        fds,
        gate=gate,
        journal=journal,
        host=host,
        mcp_servers=mcp_servers,
        held_mcp_servers=held_mcp,
        when_idle=when_idle,
    )
    try:
        return anyio.run(daemon.run)
    except Exception:
        log.exception("internal error; stopping")
        session.processes.close()
        return EXIT_INTERNAL
    finally:
        fds.restore()
        if journal is not None:
            journal.close()
        if sandbox is not None:
            sandbox.close()


def _external_tools(
    config: Config, registry: ToolRegistry
) -> tuple[HostBridge | None, list[McpServerConfig], list[McpServerConfig]] | None:
    """Host tools from --tools files (they go into ``ready``), the MCP servers to start
    after it, and the workspace's own servers held back until the host trusts the
    workspace; None (exit 2) for a file that cannot be used. Only cheap checks happen here:
    JSON Schemas are checked after ``ready`` (jsonschema is slow to import)."""
    host = None
    if config.host_builtins:
        from .tools.host import HostBridge, delegated_tool

        host = HostBridge()
        for name in config.host_builtins:
            delegated = delegated_tool(name, host)
            if delegated is None:
                sys.stderr.write(
                    f"stdio-executor: --host-builtins: Claude Code has no tool {name!r}\n"
                )
                return None
            if registry.spec_of(delegated.spec.name) is not None:
                registry.remove(delegated.spec.name)
            registry.add(delegated.spec, delegated)
    if config.host_tool_files:
        from .tools.catalog import builtin_specs
        from .tools.host import (
            DefinitionError,
            HostBridge,
            check_definition,
            host_tool,
            load_definitions,
        )

        builtins = {n for s in builtin_specs() for n in (s.name, *s.aliases)}

        def owner_of(name: str) -> str | None:
            if name in builtins:
                return "a built-in tool"
            spec = registry.spec_of(name)
            return f"the tool {spec.name}" if spec is not None else None

        host = host or HostBridge()
        for path in config.host_tool_files:
            try:
                definitions = load_definitions(path)
            except DefinitionError as exc:
                sys.stderr.write(f"stdio-executor: --tools {exc}\n")
                return None
            for definition in definitions:
                problem = check_definition(definition, owner_of)
                if problem is not None:
                    sys.stderr.write(f"stdio-executor: --tools {path}: {problem}\n")
                    return None
                tool = host_tool(definition, host)
                registry.add(tool.spec, tool)
    paths = list(config.mcp_configs)
    own = os.path.join(config.workspace, ".mcp.json")
    if not config.strict_mcp_config and os.path.isfile(own):
        paths.insert(0, own)
    servers: dict[str, McpServerConfig] = {}
    held: list[McpServerConfig] = []
    if paths:
        from .tools.mcp import McpConfigError, load_mcp_config

        for path in paths:
            try:
                found = load_mcp_config(path)
            except McpConfigError as exc:
                if path == own and path not in config.mcp_configs:
                    log.warning("ignoring the workspace's MCP servers: %s", exc)
                    continue
                sys.stderr.write(f"stdio-executor: --mcp-config {exc}\n")
                return None
            if path == own and not config.trust_workspace:
                held = list(found)
                continue  # a cloned repository's servers wait for trust_workspace
            servers.update((server.name, server) for server in found)
    held = [s for s in held if s.name not in servers]
    return host, list(servers.values()), held


def _ready_line(
    config: Config,
    registry: ToolRegistry,
    sandbox: Sandbox | None,
    settings: Settings | None = None,
    held_mcp: Sequence[McpServerConfig] = (),
) -> bytes:
    from .protocol import PROTOCOL_VERSION, Limits, Ready, ToolDefinition, ToolInfo, encode_event
    from .protocol.messages import SandboxInfo

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
        workspace_trust=_workspace_trust(config, settings, held_mcp),
        sandbox=None
        if sandbox is None
        else SandboxInfo(
            enabled=sandbox.status.enabled,
            mechanism=sandbox.status.mechanism,  # type: ignore[arg-type]
            network=sandbox.status.network,  # type: ignore[arg-type]
            enforced=list(sandbox.status.enforced),
            not_enforced=list(sandbox.status.not_enforced),
            held_back=list(sandbox.status.held_back),
            reason=sandbox.status.reason or None,
            allowed_domains=list(sandbox.status.allowed_domains),
        ),
    )
    return encode_event(ready)


def _workspace_trust(
    config: Config, settings: Settings | None, held_mcp: Sequence[McpServerConfig]
) -> Any:
    """What ``ready`` says about workspace trust (imports the trust module only when a
    workspace file exists, to keep start-up lean)."""
    from .protocol import WorkspaceTrust

    if config.trust_workspace or (settings is None and not held_mcp):
        return WorkspaceTrust(trusted=config.trust_workspace)
    from .permissions.trust import workspace_trust

    held = settings.held_back if settings is not None else None
    return workspace_trust(False, held, [s.name for s in held_mcp])


def _open_journal(config: Config) -> tuple[Journal, list[bytes]]:
    """Open (and lock) the journal; the ``journal_recovered`` line to write after ``ready``
    if the previous session left tools started and unfinished."""
    from .journal import Journal, last_session, unfinished_tools
    from .protocol import PROTOCOL_VERSION, JournalRecovered, UnfinishedTool, encode_event

    assert config.journal is not None
    journal = Journal(config.journal)
    previous = last_session(journal.path)
    unfinished = unfinished_tools(previous) if previous is not None else []
    journal.session(
        {
            "pid": os.getpid(),
            "version": __version__,
            "protocol_version": PROTOCOL_VERSION,
            "workspace": config.workspace,
            "cwd": os.getcwd(),
            "spill_dir": config.spill_dir,
            "argv": list(config.argv),
        }
    )
    if not unfinished:
        return journal, []
    event = JournalRecovered(
        journal=journal.path, unfinished=[UnfinishedTool(**u) for u in unfinished]
    )
    return journal, [encode_event(event)]


class _BadSettings(Exception):
    pass


_SETTINGS_FILES = ("settings.json", "settings.local.json")  # as permissions.settings reads


def _permission_settings(config: Config) -> Settings | None:
    """The merged settings files, read before ``ready`` so a malformed one is a start-up
    error (exit 2). None when there are none: the permission modules then load after
    ``ready`` (they cost ~50 ms of start-up)."""
    files = (os.path.join(config.workspace, ".claude", n) for n in _SETTINGS_FILES)
    if not config.settings and not any(os.path.exists(f) for f in files):
        return None
    from .permissions.settings import SettingsError, case_insensitive, load_settings

    try:
        return load_settings(
            config.workspace,
            config.settings,
            ignore_case=case_insensitive(config.workspace),
            trust_workspace=config.trust_workspace,
        )
    except SettingsError as exc:
        sys.stderr.write(f"stdio-executor: bad settings: {exc}\n")
        raise _BadSettings from None


def _hook_files(config: Config, settings: Settings | None) -> list[str]:
    """The scripts the settings' hooks run (held-back ones too): hooks run outside the
    sandbox, so a sandboxed command must not be able to rewrite them."""
    if settings is None:
        return []
    from .permissions.protected import hook_scripts

    hooks = (settings.pending or settings).hooks
    commands = [h.command for g in (*hooks.pre_tool_use, *hooks.post_tool_use) for h in g.hooks]
    return sorted(hook_scripts(commands, config.workspace))


def _sandbox(config: Config, settings: Settings | None) -> Sandbox | None:
    """The session's sandbox, decided before ``ready`` (which says what it enforces). A
    sandbox that is required and unavailable, or bad ``sandbox`` settings: exit 2."""
    if config.sandbox == "off" and settings is None:
        return None  # nothing to import, nothing to probe
    from .sandbox.plan import StartupError, build_sandbox
    from .sandbox.settings import SandboxSettingsError, sandbox_settings

    try:
        wanted = sandbox_settings(
            settings.sources if settings is not None else (), workspace=config.workspace
        )
        disabled = [m for m in os.environ.get("STDIO_EXECUTOR_SANDBOX_DISABLE", "").split(",") if m]
        return build_sandbox(
            wanted,
            mode=config.sandbox,
            workspace=config.workspace,
            spill_dir=config.spill_dir,
            additional_directories=settings.additional_directories if settings else (),
            deny_rules=settings.deny if settings else (),
            hook_files=_hook_files(config, settings),
            disabled=disabled,
        )
    except SandboxSettingsError as exc:
        sys.stderr.write(f"stdio-executor: bad settings: {exc}\n")
        raise _BadSettings from None
    except StartupError as exc:
        sys.stderr.write(f"stdio-executor: {exc}\n")
        raise _BadSettings from None


def _gate(config: Config, settings: Settings | None, session: Session) -> SettingsGate:
    from .permissions.settings import case_insensitive, load_settings
    from .permissions.settings_gate import build_gate

    if settings is None:
        settings = load_settings(config.workspace, ())

    gate = build_gate(
        settings,
        mode=config.permission_mode,
        no_prompt=config.no_prompt,
        permission_timeout=config.permission_timeout,
        workspace=config.workspace,
        spill_dir=config.spill_dir,
        session_id=session.session_id,
        processes=session.processes,
        ignore_case=case_insensitive(config.workspace),
        sandbox=session.sandbox,
        workspace_trusted=config.trust_workspace,
    )
    for tool in ("Grep", "Glob", "LS"):  # deny rules also filter what searches return
        hidden = gate.policy.hidden_files(tool)
        if hidden is not None:
            session.hidden[tool] = hidden
    return gate


# The youngest generation is collected after this many more container objects were made
# than freed (Python's default: 700). The daemon's steady state is flat (a turn lets go of
# each call once written), so a burst of calls never reaches it: the default ran ~8 young
# passes per 1,000 Reads, ~0.8 us of every call (bench/NOTES.md section 18).
_GC_YOUNG = 10_000


def _gc_after_startup(collecting: bool) -> None:
    """Start-up's objects (every module, class and table) move to the collector's permanent
    generation, out of every later pass; then collection resumes (see ``main``)."""
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(_GC_YOUNG, older, oldest)
    if collecting:
        gc.enable()


def _thread(target: Callable[..., None], *args: object) -> None:
    threading.Thread(target=target, args=args, name=target.__name__, daemon=True).start()


def _warm(registry: ToolRegistry, gate: SettingsGate) -> None:
    """Load the tool modules (and what the permission checks will need) ahead of their
    first calls."""
    try:
        registry.warm()
        from .tools import inputs, validation  # noqa: F401

        gate.warm()
    except Exception:  # pragma: no cover - the first real call reports the problem
        log.debug("warm-up failed", exc_info=True)


def _prepare(sandbox: Sandbox) -> None:
    try:
        sandbox.prepare()
    except OSError as exc:
        log.warning("%s; sandboxed Bash calls will fail", exc)


def _parse(argv: list[str]) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    """Parse, with two rules argparse cannot express: ``record DIR -- DAEMON OPTIONS`` hands
    everything after ``--`` to the recorded daemon, and a daemon option next to a subcommand
    is refused rather than silently ignored.

    Fast path: the subcommands' parsers cost ~2.5 ms to build (an ArgumentParser and a help
    formatter per argument) and commands.py more to compile in a checkout without .pyc
    files, a few percent of spawn-to-``ready``. A daemon's command line names no subcommand
    and asks for no help, so it is parsed without them; anything the daemon's options leave
    over (a typo'd subcommand) is parsed again in full for the proper error."""
    if not any(a in SUBCOMMANDS or a.startswith(("-h", "--h")) for a in argv):
        fast = _parser(subcommands=False)
        args, extra = fast.parse_known_args(argv)
        if not extra:
            args.subcommand = None
            return fast, args
    parser = _parser()
    if "--" in argv:
        split = argv.index("--")
        head = parser.parse_args(argv[:split])
        if head.subcommand == "record":
            head.daemon_args = argv[split + 1 :]
            args = head
        else:  # a `--` before a path that starts with "-"
            args = parser.parse_args(argv)
    else:
        args = parser.parse_args(argv)
    if args.subcommand is not None:
        # Everything before the subcommand's name is a daemon option or its value (argparse
        # hands what follows the name to the subcommand). Comparing values with defaults
        # would not do: subcommands reuse names such as --workspace and JOURNAL.
        before = argv[: argv.index(args.subcommand)]
        if before:
            given = ", ".join(a for a in before if a.startswith("-"))
            parser.error(
                f"{given}: daemon options go without a subcommand "
                f"(stdio-executor {args.subcommand} --help lists its own options)"
            )
    return parser, args


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
