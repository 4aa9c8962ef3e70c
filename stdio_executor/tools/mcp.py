"""Tools of MCP servers, through the official ``mcp`` SDK's ``ClientSession`` (SPEC section 7).

Owns: reading Claude Code-style ``.mcp.json`` files; one connection per server (a stdio child
started through ``processes`` so it and everything it starts die with the daemon, or
streamable HTTP); ``McpTool``, which calls ``tools/call`` with a progress callback
and maps the result to ``tool_result`` content blocks; and ``McpManager``, which connects the
servers in the background after ``ready``, announces their tools, and restarts a crashed
server for the next call.
Must not: delay ``ready`` (the SDK costs over a second to import: it is imported in a worker
thread once the daemon runs), decide scheduling, or let a failing server hang a turn: every
wait on a server is bounded, and a call to a server that is gone is an error result with
the reason.

Tool names are ``mcp__SERVER__TOOL`` with both parts reduced to ``[a-zA-Z0-9_-]`` as Claude
Code does. A tool is concurrency-safe when its annotations say ``readOnlyHint``. Cancelling
a call cancels the SDK request, which sends MCP's ``notifications/cancelled``.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
import signal
import subprocess
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.abc
import anyio.from_thread
import anyio.lowlevel
import msgspec

from .. import __version__
from ..processes import Child, spawn_group, stop_group
from ..regular_file import read_regular
from .base import InputError, Tool, ToolContext, ToolOutcome, ToolSpec
from .host import MAX_RESULT_BYTES, limit_content
from .json_schema import SchemaInput, schema_problem

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
    from mcp.client.session import ClientSession
    from mcp.shared.message import SessionMessage

    from .session import Session

__all__ = [
    "McpConfigError",
    "McpManager",
    "McpServerConfig",
    "McpTool",
    "load_mcp_config",
    "result_content",
    "tool_prefix",
]

log = logging.getLogger("stdio_executor")

# Claude Code's variables: server start-up and tool call timeouts, in milliseconds.
_CONNECT_TIMEOUT_S = float(os.environ.get("MCP_TIMEOUT", "30000")) / 1000
_CALL_TIMEOUT_S = float(os.environ.get("MCP_TOOL_TIMEOUT", "600000")) / 1000
# A server that failed to start is tried again by a call at most this often.
_RETRY_AFTER_S = 5.0
# Stopping a stdio server: stdin closed, then SIGTERM to its group, then SIGKILL.
_STOP_GRACE_S = 1.0
# How long a call that lost its server waits to learn why (the exit status).
_EXIT_REASON_WAIT_S = 0.5
_MAX_DESCRIPTION = 2048
_API_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


# ------------------------------------------------------------------------- configuration


class McpConfigError(Exception):
    """An ``.mcp.json`` file cannot be used at all."""


class McpServerConfig(msgspec.Struct, frozen=True):
    name: str
    transport: Literal["stdio", "http"]
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = msgspec.field(default_factory=dict)
    url: str = ""
    headers: Mapping[str, str] = msgspec.field(default_factory=dict)
    source: str = ""

    @property
    def prefix(self) -> str:
        return f"mcp__{tool_prefix(self.name)}__"


def tool_prefix(name: str) -> str:
    """A server or tool name as it appears in ``mcp__SERVER__TOOL`` (Claude Code's rule)."""
    return re.sub(r"[^a-zA-Z0-9_-]", "_", name)


def load_mcp_config(path: str) -> list[McpServerConfig]:
    """The servers of one ``{"mcpServers": {NAME: {...}}}`` file.

    A server entry that cannot be used (unknown transport, a missing ``${VAR}``) is skipped
    with a warning; a file that is not such an object raises ``McpConfigError``.
    ``${VAR}`` and ``${VAR:-default}`` are expanded in command, args, env, url and headers.
    """
    try:
        # A repository's own `.mcp.json`: a FIFO must not hang start-up (``read_regular``).
        data = msgspec.json.decode(read_regular(path, 16 * 1024 * 1024))
    except OSError as exc:
        raise McpConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    except msgspec.DecodeError as exc:
        raise McpConfigError(f"{path} is not valid JSON: {exc}") from None
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise McpConfigError(f'{path} has no "mcpServers" object')
    out = []
    for name, entry in servers.items():
        try:
            out.append(_server_config(name, entry, path))
        except ValueError as exc:
            log.warning("MCP server %r in %s is skipped: %s", name, path, exc)
    return out


def _server_config(name: str, entry: Any, path: str) -> McpServerConfig:
    if not isinstance(entry, dict):
        raise ValueError("its entry is not an object")
    kind = entry.get("type", "stdio")
    if kind == "stdio":
        command = entry.get("command")
        args = entry.get("args", [])
        env = entry.get("env", {})
        if not isinstance(command, str) or not command:
            raise ValueError('"command" must be a non-empty string')
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ValueError('"args" must be a list of strings')
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            raise ValueError('"env" must map names to strings')
        return McpServerConfig(
            name=name,
            transport="stdio",
            command=_expand(command),
            args=tuple(_expand(a) for a in args),
            env={k: _expand(v) for k, v in env.items()},
            source=path,
        )
    if kind == "http":
        url = entry.get("url")
        headers = entry.get("headers", {})
        if not isinstance(url, str) or not url:
            raise ValueError('"url" must be a non-empty string')
        if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
            raise ValueError('"headers" must map names to strings')
        return McpServerConfig(
            name=name,
            transport="http",
            url=_expand(url),
            headers={k: _expand(v) for k, v in headers.items()},
            source=path,
        )
    raise ValueError(f"transport type {kind!r} is not supported (stdio and http are)")


def _expand(text: str) -> str:
    def one(match: re.Match[str]) -> str:
        value = os.environ.get(match.group(1))
        if value is not None:
            return value
        if match.group(2) is not None:
            return match.group(2)
        raise ValueError(f"environment variable {match.group(1)} is not set")

    return _VAR.sub(one, text)


# --------------------------------------------------------------------------- results


def result_content(result: Mapping[str, Any]) -> tuple[str | list[dict[str, Any]], bool]:
    """A ``CallToolResult`` (as JSON) as ``tool_result`` content, and whether it is an error.

    Text stays text; images become API image blocks; embedded resources become text or
    image/document blocks; what the Messages API cannot carry (audio, other binaries) is
    named in a text note instead of being dropped silently. Text-only results are joined into
    one string. ``structuredContent`` is shown as JSON when the server sent no content
    blocks (servers are asked to mirror it as text, so otherwise it is already there).
    """
    blocks: list[dict[str, Any]] = []
    for item in result.get("content") or []:
        blocks.append(_block(item))
    structured = result.get("structuredContent")
    if not blocks and structured is not None:
        blocks.append({"type": "text", "text": msgspec.json.encode(structured).decode()})
    is_error = bool(result.get("isError", False))
    if all(b["type"] == "text" for b in blocks):
        text = "\n".join(b["text"] for b in blocks)
        return (text or "(no output)"), is_error
    return blocks, is_error


def _block(item: Mapping[str, Any]) -> dict[str, Any]:
    kind = item.get("type")
    if kind == "text":
        return {"type": "text", "text": str(item.get("text", ""))}
    if kind == "image":
        return _binary(str(item.get("mimeType", "")), str(item.get("data", "")), "image")
    if kind == "audio":
        return _binary(str(item.get("mimeType", "")), str(item.get("data", "")), "audio")
    if kind == "resource":
        resource = item.get("resource") or {}
        uri = resource.get("uri", "")
        if "text" in resource:
            return {"type": "text", "text": f"[Resource {uri}]\n{resource['text']}"}
        mime = str(resource.get("mimeType") or "application/octet-stream")
        return _binary(mime, str(resource.get("blob", "")), f"resource {uri}")
    if kind == "resource_link":
        text = f"[Resource link: {item.get('name', '')} {item.get('uri', '')}]"
        if item.get("description"):
            text += f" {item['description']}"
        return {"type": "text", "text": text}
    return {"type": "text", "text": msgspec.json.encode(dict(item)).decode()}


def _binary(mime: str, data: str, what: str) -> dict[str, Any]:
    source = {"type": "base64", "media_type": mime, "data": data}
    if mime in _API_IMAGE_TYPES:
        return {"type": "image", "source": source}
    if mime == "application/pdf":
        return {"type": "document", "source": source}
    size = len(data) * 3 // 4
    return {"type": "text", "text": f"[{what}: {mime}, about {size:,} bytes, not shown]"}


# ----------------------------------------------------------------------------- tools


class McpTool(Tool):
    """One tool of one server; calls go through the server's current connection."""

    def __init__(self, spec: ToolSpec, server: _Server, remote_name: str) -> None:
        super().__init__(spec)
        self.server = server
        self.remote_name = remote_name
        problem = schema_problem(spec.input_schema)
        if problem is not None:
            # The server's schema is broken: let the server judge the input itself.
            log.warning("MCP tool %s: %s; its input is not validated here", spec.name, problem)
        self._input = SchemaInput(spec.name, spec.input_schema) if problem is None else None

    def validate(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        return self._input.validate(raw) if self._input is not None else dict(raw)

    async def run(self, value: Any, ctx: ToolContext) -> ToolOutcome:
        return await self.server.call(self, value, ctx)


class _UnresolvedTool(Tool):
    """A call to ``mcp__SERVER__NAME`` while SERVER is not connected (starting, failed).

    It waits (bounded) for the server, then runs the real tool, or answers why it cannot.
    Until the tool's annotations are known the call is treated as unsafe: it runs alone.
    """

    def __init__(self, name: str, server: _Server) -> None:
        super().__init__(
            ToolSpec(
                name=name,
                description="",
                input_schema={"type": "object"},
                read_only="never",
                interrupt_behavior="block",
                max_result_bytes=MAX_RESULT_BYTES,
                source="mcp",
            )
        )
        self.server = server

    def validate(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        return dict(raw)

    async def run(self, value: Any, ctx: ToolContext) -> ToolOutcome:
        try:
            await self.server.ensure()
        except _Unavailable as exc:
            return self.server.unavailable(exc)
        tool = self.server.tools.get(self.spec.name)
        if tool is None:
            return ToolOutcome(
                f"<tool_use_error>Error: No such tool available: {self.spec.name}</tool_use_error>",
                is_error=True,
                status="unknown_tool",
            )
        try:
            checked = tool.validate(value)
        except InputError as exc:
            return ToolOutcome(str(exc), is_error=True, status="invalid_input")
        return await tool.run(checked, ctx)


# ------------------------------------------------------------------------ connections


class _Unavailable(Exception):
    """The server cannot take calls now; the message says why."""


Announce = Callable[[str, list[McpTool]], None]


class _Server:
    """One configured server: its connection (while up) and its tools."""

    def __init__(self, config: McpServerConfig, manager: McpManager) -> None:
        self.config = config
        self.manager = manager
        self.session: ClientSession | None = None
        self.tools: dict[str, McpTool] = {}
        self.reason = "not started yet"
        self._connecting = False
        self._attempt = anyio.Event()  # set when the current connection attempt resolves
        self._closed = anyio.Event()  # set when the current connection ends
        self._failed_at = -math.inf
        # How the last stdio process ended ("exited with code 3"), None while it runs.
        self.exit_reason: str | None = None
        self._connection: anyio.CancelScope | None = None  # the current connection's scope

    @property
    def name(self) -> str:
        return self.config.name

    def connect_soon(self) -> None:
        if self._connecting or self.session is not None:
            return
        self._attempt = anyio.Event()
        self._connecting = self.manager.start_soon(self._hold)
        if not self._connecting:
            self.reason = "the daemon is shutting down"

    async def ensure(self) -> ClientSession:
        """The live session, connecting (or reconnecting) first if needed."""
        await self.manager.sdk_ready()
        if self.session is None and not self._connecting:
            if anyio.current_time() - self._failed_at < _RETRY_AFTER_S:
                raise _Unavailable(self.reason)
            self.connect_soon()
        if self._connecting:
            # _hold bounds the attempt by the connect timeout; this bound is a backstop.
            with anyio.move_on_after(_CONNECT_TIMEOUT_S + 2 * _STOP_GRACE_S + 1):
                await self._attempt.wait()
        if self.session is None:
            raise _Unavailable(self.reason)
        return self.session

    def unavailable(self, exc: _Unavailable) -> ToolOutcome:
        return ToolOutcome(
            f"<tool_use_error>MCP server {self.name} is not available: {exc}</tool_use_error>",
            is_error=True,
        )

    async def call(self, tool: McpTool, value: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            ctx.progress(
                {"kind": "mcp_progress", "progress": progress, "total": total, "message": message}
            )

        for attempt in (1, 2):
            try:
                session = await self.ensure()
            except _Unavailable as exc:
                return self.unavailable(exc)
            closed = self._closed
            try:
                result = await session.call_tool(
                    tool.remote_name,
                    value,
                    read_timeout_seconds=_CALL_TIMEOUT_S,
                    progress_callback=on_progress,
                )
                break
            except MCPError as exc:
                if exc.code == REQUEST_TIMEOUT:
                    log.warning("MCP tool %s timed out after %gs", tool.spec.name, _CALL_TIMEOUT_S)
                    return ToolOutcome(
                        f"<tool_use_error>{tool.spec.name} did not finish within "
                        f"{_CALL_TIMEOUT_S:g}s and was cancelled.</tool_use_error>",
                        is_error=True,
                        status="timed_out",
                    )
                http = self.config.transport == "http"
                if http and attempt == 1 and "session not found" in exc.error.message.lower():
                    # The server restarted and forgot our session; it never ran the call, so
                    # it is safe to connect again and send it once more.
                    self._drop(session, "its HTTP session expired")
                    continue
                if exc.code != CONNECTION_CLOSED:
                    return ToolOutcome(
                        f"<tool_use_error>MCP error {exc.code}: {exc.error.message}"
                        "</tool_use_error>",
                        is_error=True,
                    )
                if http:
                    self._drop(session, "its connection closed")  # no process tells us
                with anyio.move_on_after(_EXIT_REASON_WAIT_S):
                    await closed.wait()  # learn the exit status for the message
                return ToolOutcome(
                    f"<tool_use_error>MCP server {self.name} stopped while running "
                    f"{tool.remote_name}: {self.reason}</tool_use_error>",
                    is_error=True,
                )
            except Exception as exc:
                # The SDK refuses a result (output schema, unexpected shape): the model sees why.
                log.warning("MCP tool %s failed: %r", tool.spec.name, exc)
                return ToolOutcome(
                    f"<tool_use_error>MCP tool {tool.spec.name} failed: {_describe(exc)}"
                    "</tool_use_error>",
                    is_error=True,
                )
        content, is_error = result_content(result.model_dump(by_alias=True, mode="json"))
        limited = limit_content(content, tool.spec.max_result_bytes, ctx)
        if not is_error:
            return limited
        return ToolOutcome(
            limited.content,
            is_error=True,
            truncated=limited.truncated,
            output_path=limited.output_path,
            output_bytes=limited.output_bytes,
        )

    def _drop(self, session: ClientSession, reason: str) -> None:
        """End a connection that is dead without a process exit to show it (HTTP)."""
        if self.session is session and self._connection is not None:
            self.reason = reason
            self.session = None  # the next ensure() connects again
            self._connection.cancel(reason)

    async def _hold(self) -> None:
        """Connect, announce the tools, and keep the connection until it ends."""
        from mcp.client.session import ClientSession
        from mcp_types import Implementation

        # A dropped connection may still be winding down while the next one starts: each
        # one touches the shared fields only while they are still its own.
        attempt = self._attempt
        closed = self._closed = anyio.Event()
        scope = anyio.CancelScope()
        session: ClientSession | None = None
        connected = False
        try:
            with scope:
                # The deadline covers spawn, handshake and listing, then is lifted. One scope
                # around every context keeps anyio's cancel scopes properly nested.
                scope.deadline = anyio.current_time() + _CONNECT_TIMEOUT_S
                self._connection = scope
                info = Implementation(name="stdio-executor", version=__version__)
                async with (
                    self._transport() as (read, write, watch_exit),
                    ClientSession(
                        read, write, client_info=info, message_handler=self._on_message
                    ) as session,
                ):
                    await session.initialize()
                    listed = await _list_tools(session)
                    scope.deadline = math.inf
                    self._adopt(listed)
                    self.session = session
                    connected = True
                    self.reason = "connected"
                    self._connecting = False
                    attempt.set()
                    log.info("MCP server %s connected: %d tools", self.name, len(listed))
                    self.reason = await watch_exit()
            if scope.cancelled_caught and not connected:
                self.reason = (
                    f"it did not complete its start-up within {_CONNECT_TIMEOUT_S:g}s (MCP_TIMEOUT)"
                )
        except Exception as exc:
            why = _describe(exc)
            if self._attempt is not attempt:
                log.debug("MCP server %s: a dropped connection failed: %s", self.name, why)
            elif connected:
                self.reason = f"its connection failed: {why}"
            elif self.exit_reason is not None:
                self.reason = f"it {self.exit_reason} during start-up"
            else:
                self.reason = f"it could not be started: {why}"
        finally:
            if self.session is session:
                self.session = None
            if self._connection is scope:
                self._connection = None
            if self._attempt is attempt:
                self._connecting = False
            closed.set()
            attempt.set()
        if self.manager.closing or self._attempt is not attempt:
            return
        if connected:
            log.warning(
                "MCP server %s stopped (%s); it restarts on its next call", self.name, self.reason
            )
        else:
            self._failed_at = anyio.current_time()
            log.warning("MCP server %s is unavailable: %s", self.name, self.reason)

    def _adopt(self, listed: list[Any]) -> None:
        tools: dict[str, McpTool] = {}
        server_prefix = self.config.prefix
        for remote in listed:
            name = server_prefix + tool_prefix(remote.name)
            annotations = remote.annotations
            read_only = bool(annotations is not None and annotations.read_only_hint)
            spec = ToolSpec(
                name=name,
                description=(remote.description or "")[:_MAX_DESCRIPTION],
                input_schema=dict(remote.input_schema),
                read_only="always" if read_only else "never",
                interrupt_behavior="block",
                max_result_bytes=MAX_RESULT_BYTES,
                source="mcp",
            )
            old = self.tools.get(name)
            if old is not None and old.spec == spec and old.remote_name == remote.name:
                tools[name] = old  # unchanged: keep the compiled validator
            else:
                tools[name] = McpTool(spec, self, remote.name)
        self.tools = tools
        self.manager.announce(self.name, list(tools.values()))

    async def _on_message(self, message: Any) -> None:
        method = getattr(message, "method", None)
        if method == "notifications/tools/list_changed" and self.session is not None:
            self.manager.start_soon(self._relist, self.session)
        elif isinstance(message, Exception):
            log.warning("MCP server %s: %s", self.name, _describe(message))

    async def _relist(self, session: ClientSession) -> None:
        try:
            with anyio.fail_after(_CONNECT_TIMEOUT_S):
                listed = await _list_tools(session)
        except Exception as exc:
            log.warning("MCP server %s: listing its tools failed: %s", self.name, _describe(exc))
            return
        if self.session is session:
            self._adopt(listed)

    @contextlib.asynccontextmanager
    async def _transport(
        self,
    ) -> AsyncIterator[
        tuple[
            MemoryObjectReceiveStream[SessionMessage | Exception],
            MemoryObjectSendStream[SessionMessage],
            Callable[[], Any],
        ]
    ]:
        if self.config.transport == "http":
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            client = create_mcp_http_client(headers=dict(self.config.headers))
            async with (
                client,
                streamable_http_client(self.config.url, http_client=client) as (
                    read,
                    write,
                ),
            ):
                yield read, write, anyio.sleep_forever  # type: ignore[misc]
            return
        async with _stdio(self) as streams:
            yield streams


async def _list_tools(session: ClientSession) -> list[Any]:
    from mcp_types import PaginatedRequestParams

    tools: list[Any] = []
    cursor: str | None = None
    while True:
        params = PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


@contextlib.asynccontextmanager
async def _stdio(
    server: _Server,
) -> AsyncIterator[
    tuple[
        MemoryObjectReceiveStream[SessionMessage | Exception],
        MemoryObjectSendStream[SessionMessage],
        Callable[[], Any],
    ]
]:
    """The stdio transport: the SDK's framing, our process handling.

    The SDK's own ``stdio_client`` starts the server with its own process handling; ours
    goes through ``processes`` (the daemon's one lifetime: the server and everything it
    starts die with the daemon however it ends) and tells us how the server exited.
    """
    from mcp.shared.message import SessionMessage
    from mcp_types import jsonrpc_message_adapter

    config, manager = server.config, server.manager
    server.exit_reason = None
    process = await spawn_group(
        manager.session.processes,
        [config.command, *config.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=None,  # the daemon's stderr: the server's logs end up beside ours
        cwd=manager.session.workspace,
        env={**os.environ, **config.env},
    )
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
    eof = anyio.Event()
    assert process.stdout is not None and process.stdin is not None
    stdout, stdin = process.stdout, process.stdin

    async def read_lines() -> None:
        buf = b""
        try:
            async with read_send:
                async for chunk in stdout:
                    *lines, buf = (buf + chunk).split(b"\n")
                    for line in lines:
                        if not line.strip():
                            continue
                        try:
                            message = jsonrpc_message_adapter.validate_json(line, by_name=False)
                        except ValueError as exc:
                            log.warning("MCP server %s wrote a bad line: %s", config.name, exc)
                            continue
                        await read_send.send(SessionMessage(message))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass
        finally:
            eof.set()

    async def write_lines() -> None:
        try:
            async with write_recv:
                async for item in write_recv:
                    text = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await stdin.send(text.encode() + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_send.aclose()

    async def watch_exit() -> str:
        # The server closing its output is the sign; its exit follows (everything it started
        # dies with it), bounded in case it lives on without a stdout.
        await eof.wait()
        with anyio.move_on_after(_STOP_GRACE_S):
            await process.wait()
        return _exit_reason(process.returncode)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(read_lines)
            tg.start_soon(write_lines)
            try:
                yield read_recv, write_send, watch_exit
            finally:
                with anyio.CancelScope(shield=True):
                    await _stop(process)
                tg.cancel_scope.cancel()
    finally:
        server.exit_reason = _exit_reason(process.returncode)
        with anyio.CancelScope(shield=True), contextlib.suppress(OSError):
            await process.aclose()


async def _stop(process: Child) -> None:
    """Close stdin (MCP's orderly shutdown), wait a grace, then SIGTERM and SIGKILL."""
    if process.stdin is not None:
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
    with anyio.move_on_after(_STOP_GRACE_S):
        await process.wait()
    await stop_group(process)


def _exit_reason(returncode: int | None) -> str:
    if returncode is None:
        return "it closed its output"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"exited, killed by {name}"
    return f"exited with code {returncode}"


def _describe(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, OSError) and exc.strerror:
        target = exc.filename or ""
        return f"{exc.strerror}{f': {target}' if target else ''}"
    text = str(exc)
    return text or type(exc).__name__


# ---------------------------------------------------------------------------- manager


def _import_sdk() -> None:
    import jsonschema  # noqa: F401 - the tools' validators need it next
    import mcp.client.session  # noqa: F401


async def _in_daemon_thread(fn: Callable[[], None]) -> None:
    """Run ``fn`` in a daemon thread: unlike anyio's worker threads, it cannot hold up the
    interpreter's exit (a daemon told to stop mid-import would wait a second for it)."""
    done = anyio.Event()
    failure: list[BaseException] = []
    token = anyio.lowlevel.current_token()

    def target() -> None:
        try:
            fn()
        except BaseException as exc:
            failure.append(exc)
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits
            anyio.from_thread.run_sync(done.set, token=token)

    threading.Thread(target=target, name="mcp-import", daemon=True).start()
    await done.wait()
    if failure:
        raise failure[0]


class McpManager:
    """Every configured server. ``run`` lives in the daemon's task group."""

    def __init__(self, configs: list[McpServerConfig], session: Session, announce: Announce):
        self.session = session
        self.announce = announce
        self.servers = [_Server(config, self) for config in configs]
        self.closing = False
        self._tg: anyio.abc.TaskGroup | None = None
        self._sdk = anyio.Event()
        self._sdk_error: str | None = None
        self._stopped = anyio.Event()

    async def run(self) -> None:
        try:
            # Over a second of imports: in a thread, so the daemon keeps serving meanwhile.
            await _in_daemon_thread(_import_sdk)
        except ImportError as exc:
            self._sdk_error = f"the mcp package cannot be imported ({exc})"
            log.error("MCP servers are unavailable: %s", self._sdk_error)
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                self._sdk.set()
                if self._sdk_error is None:
                    for server in self.servers:
                        server.connect_soon()
                await anyio.sleep_forever()
        finally:
            self._tg = None
            self._stopped.set()

    async def sdk_ready(self) -> None:
        await self._sdk.wait()
        if self._sdk_error is not None:
            raise _Unavailable(self._sdk_error)

    def add(self, configs: list[McpServerConfig]) -> None:
        """More servers (a workspace's .mcp.json once the host trusts it)."""
        servers = [_Server(config, self) for config in configs]
        self.servers.extend(servers)
        if self._tg is not None and self._sdk_error is None:
            for server in servers:
                server.connect_soon()

    def start_soon(self, fn: Callable[..., Any], *args: Any) -> bool:
        if self._tg is None or self.closing:
            return False
        self._tg.start_soon(fn, *args)
        return True

    def placeholder(self, name: str) -> Tool | None:
        """A stand-in for a tool of a server that is not connected, or None."""
        for server in self.servers:
            if name.startswith(server.config.prefix) and len(name) > len(server.config.prefix):
                if server.session is not None and name not in server.tools:
                    return None  # connected, and it has no such tool
                return _UnresolvedTool(name, server)
        return None

    async def aclose(self) -> None:
        """Stop every server (stdin closed, then signals), bounded."""
        self.closing = True
        if self._tg is not None:
            self._tg.cancel_scope.cancel("daemon exiting")
            with anyio.move_on_after(3 * _STOP_GRACE_S + 1):
                await self._stopped.wait()
