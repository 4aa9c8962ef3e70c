"""Changes to the set of enabled tools while the daemon runs.

Owns: ``register_tool`` / ``unregister_tool`` (a definition is checked against the names
already taken and its JSON Schema), the tools of MCP servers as they come and go, dropping
``--tools`` definitions whose schema turns out invalid, and the ``tools_changed`` event that
announces each change.
Must not: run tools or write to the wire: it updates the registry and returns the events
for the daemon's loop to write. Calls already added keep the tool they resolved to, so a
tool unregistered while a call of it waits or runs still gives that call its result.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import anyio.to_thread
import msgspec

from ..protocol import (
    ErrorEvent,
    RegisterTool,
    ToolDefinition,
    ToolInfo,
    ToolsChanged,
    UnregisterTool,
)
from ..protocol.messages import Event
from ..tools.base import ToolSpec
from ..tools.catalog import ToolRegistry, builtin_specs, implementation_of
from ..tools.host import (
    DelegatedTool,
    HostBridge,
    check_definition,
    delegated_tool,
    host_tool,
    names_only,
)
from ..tools.json_schema import schema_problem

if TYPE_CHECKING:  # tools.mcp (~800 lines) loads only when an MCP server is configured
    from ..tools.mcp import McpTool

__all__ = ["SchemaReport", "ServerTools", "ToolSet", "tool_listing"]

log = logging.getLogger("stdio_executor")


class ServerTools(msgspec.Struct, frozen=True):
    """An MCP server's current tools (inbox item from the MCP manager)."""

    server: str
    tools: list[McpTool]


class SchemaReport(msgspec.Struct, frozen=True):
    """``--tools`` definitions whose input_schema is not a valid JSON Schema: (name, why)."""

    problems: list[tuple[str, str]]


def tool_listing(specs: Iterable[ToolSpec]) -> tuple[list[ToolDefinition], dict[str, ToolInfo]]:
    """The ``tools`` and ``tool_info`` fields of ``ready`` / ``tools_changed``."""
    tools, info = [], {}
    for s in specs:
        tools.append(
            ToolDefinition(
                name=s.name, description=s.description, input_schema=dict(s.input_schema)
            )
        )
        info[s.name] = ToolInfo(
            read_only=s.read_only,
            interrupt_behavior=s.interrupt_behavior,
            aliases=list(s.aliases),
            max_result_bytes=s.max_result_bytes,
            source=s.source,
        )
    return tools, info


class ToolSet:
    def __init__(self, registry: ToolRegistry, bridge: HostBridge) -> None:
        self.registry = registry
        self.bridge = bridge
        # Built-in names are reserved even when disabled, so a host's tool never changes
        # meaning with --builtin-tools.
        self._builtins = {n: s.name for s in builtin_specs() for n in (s.name, *s.aliases)}
        # The built-ins enabled at start: given back when a host stops serving one.
        self._started = {s.name: s for s in registry.specs if s.source == "builtin"}
        self._by_server: dict[str, list[str]] = {}

    # ------------------------------------------------------------------ host tools

    def register(self, cmd: RegisterTool, line: int | None) -> list[Event]:
        definition = cmd.tool
        if names_only(definition):
            delegated = delegated_tool(definition.name, self.bridge, definition.timeout_ms)
            if delegated is not None:
                return self._serve(delegated, cmd, line)
        current = self.registry.spec_of(definition.name)
        replacing = (
            current is not None and current.source == "host" and current.name == definition.name
        )

        def owner_of(name: str) -> str | None:
            if name in self._builtins:
                return f"the built-in tool {self._builtins[name]}"
            spec = self.registry.spec_of(name)
            if spec is None or (replacing and spec.name == definition.name):
                return None
            return f"the {spec.source} tool {spec.name}"

        problem = check_definition(definition, owner_of) or schema_problem(definition.input_schema)
        if problem is not None:
            if not problem.startswith("tool "):
                problem = f"tool {definition.name!r}: {problem}"
            return [
                ErrorEvent(
                    code="invalid_tool_definition",
                    message=f"register_tool refused: {problem}",
                    line=line,
                    request_id=cmd.request_id,
                )
            ]
        if replacing:
            self.registry.remove(definition.name)
        tool = host_tool(definition, self.bridge)
        self.registry.add(tool.spec, tool)
        return [self.changed([definition.name], [], cmd.request_id)]

    def _serve(self, tool: DelegatedTool, cmd: RegisterTool, line: int | None) -> list[Event]:
        """The host serves a Claude Code tool (WebSearch, Task...) or takes over a built-in
        under the daemon's own definition of it."""
        name = tool.spec.name
        current = self.registry.spec_of(name)
        if current is not None and current.source == "mcp":
            return [
                ErrorEvent(
                    code="invalid_tool_definition",
                    message=f"register_tool refused: {name!r} is taken by the mcp tool "
                    f"{current.name}",
                    line=line,
                    request_id=cmd.request_id,
                )
            ]
        for alias in (name, *tool.spec.aliases):
            other = self.registry.spec_of(alias)
            if other is not None and other.name != name:
                self.registry.remove(other.name)
        if current is not None:
            self.registry.remove(current.name)
        self.registry.add(tool.spec, tool)
        return [self.changed([name], [], cmd.request_id)]

    def unregister(self, cmd: UnregisterTool, line: int | None) -> list[Event]:
        spec = self.registry.spec_of(cmd.name)
        if spec is None or spec.source != "host":
            what = "no tool has that name" if spec is None else f"it is a {spec.source} tool"
            return [
                ErrorEvent(
                    code="invalid_tool_definition",
                    message=(f"unregister_tool refused: {cmd.name!r} is not a host tool ({what})"),
                    line=line,
                    request_id=cmd.request_id,
                )
            ]
        self.registry.remove(spec.name)
        started = self._started.get(spec.name)
        if started is not None:  # a built-in the host had taken over: the daemon's again
            self.registry.add(started, implementation_of(started.name))
            return [self.changed([spec.name], [], cmd.request_id)]
        return [self.changed([], [spec.name], cmd.request_id)]

    async def check_start_schemas(self, put: Callable[[SchemaReport], None]) -> None:
        """Check the ``--tools`` schemas after ``ready`` (jsonschema is slow to import)."""
        specs = [(s.name, s.input_schema) for s in self.registry.specs if s.source == "host"]
        if not specs:
            return

        def check() -> list[tuple[str, str]]:
            return [(name, why) for name, schema in specs if (why := schema_problem(schema))]

        problems = await anyio.to_thread.run_sync(check, abandon_on_cancel=True)
        if problems:
            put(SchemaReport(problems))

    # ------------------------------------------------------------ background changes

    def apply(self, item: ServerTools | SchemaReport) -> list[Event]:
        if isinstance(item, SchemaReport):
            return self._drop_invalid(item)
        return self._server_tools(item)

    def _drop_invalid(self, report: SchemaReport) -> list[Event]:
        events: list[Event] = []
        removed = []
        for name, why in report.problems:
            spec = self.registry.spec_of(name)
            if spec is None or spec.source != "host" or spec.name != name:
                continue
            self.registry.remove(name)
            removed.append(name)
            log.error("host tool %s from --tools was removed: %s", name, why)
            events.append(
                ErrorEvent(
                    code="invalid_tool_definition",
                    message=f"host tool {name!r} from --tools was removed: {why}",
                )
            )
        if removed:
            events.append(self.changed([], removed, None))
        return events

    def _server_tools(self, item: ServerTools) -> list[Event]:
        before = self._by_server.get(item.server, [])
        names, added = [], []
        for tool in item.tools:
            name = tool.spec.name
            current = self.registry.spec_of(name)
            if current is not None and name not in before:
                log.warning(
                    "MCP server %s: tool %s is skipped; the name is taken by the %s tool %s",
                    item.server,
                    name,
                    current.source,
                    current.name,
                )
                continue
            if current != tool.spec:
                added.append(name)
            self.registry.remove(name)
            self.registry.add(tool.spec, tool)
            names.append(name)
        removed = [name for name in before if name not in names]
        for name in removed:
            self.registry.remove(name)
        self._by_server[item.server] = names
        if not added and not removed:
            return []
        return [self.changed(added, removed, None)]

    def changed(self, added: list[str], removed: list[str], request_id: str | None) -> ToolsChanged:
        tools, info = tool_listing(self.registry.specs)
        return ToolsChanged(
            tools=tools, tool_info=info, added=added, removed=removed, request_id=request_id
        )
