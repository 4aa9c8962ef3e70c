"""An async Python client for the daemon (anyio; tested on asyncio).

Owns: spawning ``stdio-executor`` as a subprocess, writing commands, reading and decoding
events into the ``stdio_executor.protocol`` types, matching answers to requests by
``request_id``, serving host tools and permission requests, and closing the daemon cleanly.
Must not: import the daemon's own modules (only ``stdio_executor.protocol``, msgspec and
anyio), so a host pays for nothing it does not use.

    async with Client(["--permission-mode", "bypassPermissions"]) as client:
        for block in tool_use_blocks:          # as each block of the model's stream ends
            await client.add_tool(block)
        turn = await client.drain()            # the turn's results, in order
        next_user_message = {"role": "user", "content": turn.content_blocks()}

Events: ``async with client.subscribe() as events: async for event in events: ...`` sees
every event written after the subscription starts (subscribe before sending what you want
to watch). ``drain``, ``discard`` and ``interrupt`` return their answering event; results
are collected per turn whether or not anyone subscribes.

Host tools: ``@client.tool(name=..., description=..., input_schema=..., read_only=...)`` on an
``async def handler(input, call) -> str | list[dict]``. Tools decorated before the client
starts are registered right after ``ready``; ``call.progress(data)`` reports progress; raising
``HostToolError`` gives the model an error result; a ``tool_cancel`` cancels the handler.

Permissions: ``on_permission`` (or ``@client.permission_handler``) gets each
``PermissionRequest`` and returns ``True``/``False`` or a ``PermissionDecision``. Without a
handler every request is denied. See docs/client.md.
"""

from __future__ import annotations

import itertools
import logging
import math
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, Protocol, TypeAlias, TypeVar

import anyio
import anyio.abc
import msgspec
from anyio.streams.buffered import BufferedByteReceiveStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .protocol import (
    PROTOCOL_VERSION,
    AddTool,
    Command,
    ContentBlock,
    Discard,
    Discarded,
    Drain,
    Drained,
    ErrorEvent,
    Event,
    HostToolDefinition,
    Interrupt,
    Interrupted,
    Jobs,
    ListJobs,
    PermissionCancelled,
    PermissionRequest,
    PermissionResponse,
    Ready,
    RegisterTool,
    ToolCall,
    ToolCancel,
    ToolDefinition,
    ToolOutput,
    ToolProgressCommand,
    ToolResult,
    ToolsChanged,
    ToolUse,
    TrustWorkspace,
    UnregisterTool,
    WorkspaceTrusted,
    decode_event,
)

__all__ = [
    "Client",
    "ClientError",
    "HostCall",
    "HostToolError",
    "HostToolHandler",
    "PermissionDecision",
    "PermissionHandler",
    "TurnResult",
]

log = logging.getLogger("stdio_executor.client")

_MAX_LINE = 1 << 30
_E = TypeVar("_E")
_encoder = msgspec.json.Encoder()


class ClientError(Exception):
    """The daemon refused a request (``error`` event), or it is gone."""

    def __init__(self, message: str, event: ErrorEvent | None = None) -> None:
        super().__init__(message)
        self.event = event


class HostToolError(Exception):
    """Raise in a host tool handler to give the model an error result with this text."""


@dataclass(frozen=True)
class PermissionDecision:
    """The answer to a ``permission_request``."""

    allow: bool
    message: str | None = None
    # Replaces the tool's input when allowing (the daemon validates it again).
    updated_input: dict[str, Any] | None = None
    # Deny and abort the whole turn, like rejecting a tool in Claude Code.
    interrupt: bool = False


PermissionHandler: TypeAlias = Callable[[PermissionRequest], Awaitable["bool | PermissionDecision"]]


@dataclass(frozen=True)
class TurnResult:
    """What ``drain`` returns: the ``drained`` event and the turn's results, in order."""

    drained: Drained
    results: list[ToolResult]

    def content_blocks(self) -> list[dict[str, Any]]:
        """The results as Anthropic ``tool_result`` blocks (``meta`` dropped), ready to be the
        content of the next user message."""
        return [
            {
                "type": "tool_result",
                "tool_use_id": r.tool_use_id,
                "content": r.content,
                "is_error": r.is_error,
            }
            for r in self.results
        ]


@dataclass
class HostCall:
    """One call of a host tool, as its handler sees it."""

    tool_use_id: str
    name: str
    turn: int | None
    _client: Client = field(repr=False)

    async def progress(self, data: dict[str, Any]) -> None:
        """Report progress; the daemon relays it to the host as a ``progress`` event."""
        await self._client.send(ToolProgressCommand(tool_use_id=self.tool_use_id, data=data))


class HostToolHandler(Protocol):
    def __call__(
        self, input: dict[str, Any], call: HostCall
    ) -> Awaitable[str | list[ContentBlock]]: ...


@dataclass
class _Waiter:
    done: anyio.Event = field(default_factory=anyio.Event)
    event: Event | None = None
    error: ClientError | None = None


def _tool_use_of(block: Any) -> ToolUse:
    """A ``ToolUse`` from a dict, a ``ToolUse``, or an SDK object with id/name/input."""
    if isinstance(block, ToolUse):
        return block
    if isinstance(block, Mapping):
        raw = dict(block)
    else:
        raw = {k: getattr(block, k) for k in ("id", "name", "input") if hasattr(block, k)}
    raw.setdefault("type", "tool_use")
    return msgspec.convert(raw, ToolUse)


class Client:
    """A running ``stdio-executor`` daemon, driven from async Python.

    ``args`` are extra daemon options; ``command`` replaces the daemon command (default:
    this interpreter's ``-m stdio_executor``). ``stderr`` is where the daemon's logs go
    (inherited by default). ``close_timeout`` bounds the wait for the daemon to finish its
    open turn after stdin is closed, before it is terminated.
    """

    def __init__(
        self,
        args: Sequence[str] = (),
        *,
        command: Sequence[str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        stderr: int | None = None,
        on_permission: PermissionHandler | None = None,
        ready_timeout: float = 30.0,
        close_timeout: float = 10.0,
    ) -> None:
        self._argv = [*(command or (sys.executable, "-m", "stdio_executor")), *args]
        self._cwd = cwd
        self._env = dict(env) if env is not None else None
        self._stderr = stderr
        self._on_permission = on_permission
        self._ready_timeout = ready_timeout
        self._close_timeout = close_timeout
        self._ids = itertools.count(1)
        self._host_tools: dict[str, tuple[HostToolDefinition, HostToolHandler]] = {}
        self._waiters: dict[str, _Waiter] = {}
        self._results: dict[int, list[ToolResult]] = {}
        self._subscribers: set[MemoryObjectSendStream[Event]] = set()
        self._calls: dict[str, anyio.CancelScope] = {}
        self._asks: dict[str, anyio.CancelScope] = {}
        # Created in start(): anyio primitives belong to the running event loop.
        self._send_lock: anyio.Lock | None = None
        self._ready_event: anyio.Event | None = None
        self._ready: Ready | None = None
        self._tools: list[ToolDefinition] = []
        self._stack: AsyncExitStack | None = None
        self._process: anyio.abc.Process | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        self._gone = False
        self._closed = False

    # ---------------------------------------------------------------------- life

    async def __aenter__(self) -> Client:
        await self._start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            with anyio.CancelScope(shield=True):
                await self.aclose()
        finally:
            assert self._stack is not None
            stack, self._stack = self._stack, None
            await stack.__aexit__(exc_type, exc, tb)

    async def _start(self) -> Ready:
        """Spawn the daemon, wait for ``ready``, register decorated host tools.

        Only through ``async with``: the client's task group must close in the task that
        opened it.
        """
        if self._stack is not None:
            raise RuntimeError("the client is already started")
        self._send_lock = anyio.Lock()
        self._ready_event = anyio.Event()
        stack = AsyncExitStack()
        await stack.__aenter__()
        try:
            self._process = await anyio.open_process(
                self._argv, cwd=self._cwd, env=self._env, stderr=self._stderr
            )
            stack.push_async_callback(self._process.aclose)
            self._tg = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(self._tg.cancel_scope.cancel)
            self._tg.start_soon(self._read_events)
            with anyio.fail_after(self._ready_timeout):
                await self._ready_event.wait()
            if self._ready is None:
                raise ClientError("the daemon exited before writing its ready line")
            if self._ready.protocol_version != PROTOCOL_VERSION:
                raise ClientError(
                    f"the daemon speaks protocol {self._ready.protocol_version}, "
                    f"this client {PROTOCOL_VERSION}"
                )
            for definition, _ in list(self._host_tools.values()):
                await self._register(definition)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self._stop_process()
                await stack.aclose()
            raise
        self._stack = stack
        return self._ready

    async def aclose(self) -> int | None:
        """Close stdin (the daemon finishes the open turn), wait up to ``close_timeout`` for
        it to exit, then SIGTERM, then SIGKILL. Returns its exit status."""
        if self._closed:
            return self.returncode
        self._closed = True
        return await self._stop_process()

    async def _stop_process(self) -> int | None:
        process = self._process
        if process is None:
            return None
        if process.stdin is not None and self._send_lock is not None:
            with anyio.CancelScope(shield=True):
                try:
                    async with self._send_lock:
                        await process.stdin.aclose()
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    pass
        with anyio.move_on_after(self._close_timeout):
            await process.wait()
        if process.returncode is None:
            log.warning("the daemon did not exit in %ss; terminating it", self._close_timeout)
            process.terminate()
            with anyio.move_on_after(5.0):
                await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()
        return process.returncode

    @property
    def returncode(self) -> int | None:
        return self._process.returncode if self._process is not None else None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def ready(self) -> Ready:
        """The daemon's ``ready`` event (inside ``async with``)."""
        if self._ready is None:
            raise RuntimeError("the client is not started")
        return self._ready

    def api_tools(self) -> list[dict[str, Any]]:
        """The enabled tools as the Messages API ``tools`` parameter (kept up to date by
        ``tools_changed``)."""
        return [msgspec.to_builtins(t) for t in self._tools]

    # ------------------------------------------------------------------ commands

    async def send(self, command: Command) -> None:
        """Write one command (any ``stdio_executor.protocol`` command type)."""
        process, lock = self._process, self._send_lock
        if process is None or process.stdin is None or lock is None or self._closed:
            raise ClientError("the client is closed")
        data = _encoder.encode(command) + b"\n"
        try:
            async with lock:
                await process.stdin.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise ClientError(f"the daemon is gone: {exc!r}") from exc

    async def add_tool(self, block: Any) -> None:
        """Schedule one ``tool_use`` block (a dict, a ``ToolUse``, or an SDK block object)."""
        await self.send(AddTool(tool_use=_tool_use_of(block)))

    async def drain(self) -> TurnResult:
        """Wait until every tool of the turn has its result; end the turn."""
        event = await self._request(lambda rid: Drain(request_id=rid), Drained)
        if event.turn is None:
            return TurnResult(event, [])
        # Kept until a later turn ends: several drains of one turn all get the results.
        for old in [t for t in self._results if t < event.turn]:
            del self._results[old]
        return TurnResult(event, list(self._results.get(event.turn, [])))

    async def run_turn(self, blocks: Sequence[Any]) -> TurnResult:
        """``add_tool`` each block, then ``drain``."""
        for block in blocks:
            await self.add_tool(block)
        return await self.drain()

    async def discard(self) -> Discarded:
        """Throw the open turn away (a retried stream): no further result of it is written."""
        event = await self._request(lambda rid: Discard(request_id=rid), Discarded)
        if event.turn is not None:
            self._results.pop(event.turn, None)
        return event

    async def interrupt(self, reason: str = "abort") -> Interrupted:
        """Cancel tools of the turn; the cancelled tools' results follow.

        The default is the wire's: ``"abort"`` cancels every unfinished tool of the turn.
        ``"interrupt"`` (the user typed a new message) cancels only tools that allow it
        (Bash, host tools declared ``cancel``) and lets ``block`` tools finish."""
        return await self._request(
            lambda rid: Interrupt(reason=reason, request_id=rid), Interrupted
        )

    async def trust_workspace(self) -> WorkspaceTrusted:
        """Trust the workspace: its own settings and MCP servers that ``ready.workspace_trust``
        listed as held back take effect for calls judged from now on. Returns what applied."""
        return await self._request(lambda rid: TrustWorkspace(request_id=rid), WorkspaceTrusted)

    async def list_jobs(self) -> Jobs:
        """The session's background jobs (Bash with ``run_in_background``), oldest first."""
        return await self._request(lambda rid: ListJobs(request_id=rid), Jobs)

    async def _request(self, make: Callable[[str], Command], kind: type[_E]) -> _E:
        rid = f"client-{next(self._ids)}"
        waiter = _Waiter()
        self._waiters[rid] = waiter
        try:
            await self.send(make(rid))
            await waiter.done.wait()
        finally:
            self._waiters.pop(rid, None)
        if waiter.error is not None:
            raise waiter.error
        if not isinstance(waiter.event, kind):
            raise ClientError(f"unexpected answer to {rid}: {waiter.event!r}")
        return waiter.event

    # ---------------------------------------------------------------- host tools

    def tool(
        self,
        *,
        name: str,
        description: str = "",
        input_schema: dict[str, Any] | None = None,
        read_only: bool = False,
        interrupt_behavior: Literal["cancel", "block"] = "block",
        timeout_ms: int | None = None,
    ) -> Callable[[HostToolHandler], HostToolHandler]:
        """Decorator: serve a host tool with an ``async def handler(input, call)``.

        Before ``start`` the tool is registered right after ``ready``; on a running client
        it is registered in the background (``register_tool`` waits for the answer).
        """
        definition = HostToolDefinition(
            name=name,
            description=description,
            input_schema=input_schema if input_schema is not None else {"type": "object"},
            read_only=read_only,
            interrupt_behavior=interrupt_behavior,
            timeout_ms=timeout_ms,
        )

        def decorate(handler: HostToolHandler) -> HostToolHandler:
            self._host_tools[name] = (definition, handler)
            if self._tg is not None and self._ready is not None:
                self._tg.start_soon(self._register_logged, definition)
            return handler

        return decorate

    async def register_tool(
        self, definition: HostToolDefinition, handler: HostToolHandler
    ) -> ToolsChanged:
        """Register a host tool now and wait for the daemon to accept it."""
        self._host_tools[definition.name] = (definition, handler)
        return await self._register(definition)

    async def unregister_tool(self, name: str) -> ToolsChanged:
        event = await self._request(
            lambda rid: UnregisterTool(name=name, request_id=rid), ToolsChanged
        )
        self._host_tools.pop(name, None)
        return event

    async def _register(self, definition: HostToolDefinition) -> ToolsChanged:
        return await self._request(
            lambda rid: RegisterTool(tool=definition, request_id=rid), ToolsChanged
        )

    async def _register_logged(self, definition: HostToolDefinition) -> None:
        try:
            await self._register(definition)
        except ClientError as exc:
            log.error("registering host tool %s failed: %s", definition.name, exc)

    async def _serve_call(self, call: ToolCall, scope: anyio.CancelScope) -> None:
        entry = self._host_tools.get(call.name)
        try:
            with scope:
                if entry is None:
                    content: str | list[ContentBlock] = f"this host does not serve {call.name}"
                    is_error = True
                else:
                    handler = entry[1]
                    try:
                        content = await handler(
                            dict(call.input), HostCall(call.tool_use_id, call.name, call.turn, self)
                        )
                        is_error = False
                    except HostToolError as exc:
                        content, is_error = str(exc), True
                    except Exception as exc:
                        log.exception("host tool %s raised", call.name)
                        content, is_error = f"{type(exc).__name__}: {exc}", True
                await self.send(
                    ToolOutput(tool_use_id=call.tool_use_id, content=content, is_error=is_error)
                )
        except ClientError:
            pass  # the daemon went away mid-call
        finally:
            self._calls.pop(call.tool_use_id, None)

    # --------------------------------------------------------------- permissions

    def permission_handler(self, handler: PermissionHandler) -> PermissionHandler:
        """Decorator: answer ``permission_request`` events with ``handler``."""
        self._on_permission = handler
        return handler

    async def _answer(self, request: PermissionRequest, scope: anyio.CancelScope) -> None:
        try:
            with scope:
                decision: bool | PermissionDecision
                if self._on_permission is None:
                    decision = PermissionDecision(False, "the host has no permission handler")
                else:
                    try:
                        decision = await self._on_permission(request)
                    except Exception as exc:
                        log.exception("permission handler raised")
                        decision = PermissionDecision(False, f"permission check failed: {exc}")
                if isinstance(decision, bool):
                    decision = PermissionDecision(decision)
                await self.send(
                    PermissionResponse(
                        request_id=request.request_id,
                        decision="allow" if decision.allow else "deny",
                        message=decision.message,
                        updated_input=decision.updated_input,
                        interrupt=decision.interrupt,
                    )
                )
        except ClientError:
            pass
        finally:
            self._asks.pop(request.request_id, None)

    # -------------------------------------------------------------------- events

    @asynccontextmanager
    async def subscribe(
        self, max_buffer: float = math.inf
    ) -> AsyncIterator[MemoryObjectReceiveStream[Event]]:
        """Receive every event written from now on; the stream ends when the daemon exits.

        With a finite ``max_buffer`` a subscriber that falls behind loses events (logged);
        the default keeps them all.
        """
        send, receive = anyio.create_memory_object_stream[Event](max_buffer)
        if self._gone:
            send.close()
        else:
            self._subscribers.add(send)
        try:
            yield receive
        finally:
            self._subscribers.discard(send)
            send.close()
            receive.close()

    async def _read_events(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        stream = BufferedByteReceiveStream(self._process.stdout)
        try:
            while True:
                try:
                    line = await stream.receive_until(b"\n", _MAX_LINE)
                except (anyio.IncompleteRead, anyio.EndOfStream, anyio.ClosedResourceError):
                    break
                try:
                    event = decode_event(line)
                except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                    # A newer daemon's event type: skip it rather than fail the host.
                    log.debug("skipping an event this client does not know: %s", exc)
                    continue
                self._dispatch(event)
        finally:
            self._gone = True
            assert self._ready_event is not None
            self._ready_event.set()
            for waiter in self._waiters.values():
                waiter.error = ClientError("the daemon exited before answering")
                waiter.done.set()
            for send in self._subscribers:
                send.close()
            self._subscribers.clear()

    def _dispatch(self, event: Event) -> None:
        if isinstance(event, ToolResult):
            self._results.setdefault(event.meta.turn, []).append(event)
        elif isinstance(event, Ready):
            self._ready = event
            self._tools = list(event.tools)
            assert self._ready_event is not None
            self._ready_event.set()
        elif isinstance(event, ToolsChanged):
            self._tools = list(event.tools)
        elif isinstance(event, ToolCall):
            scope = anyio.CancelScope()
            self._calls[event.tool_use_id] = scope
            assert self._tg is not None
            self._tg.start_soon(self._serve_call, event, scope)
        elif isinstance(event, ToolCancel):
            running = self._calls.pop(event.tool_use_id, None)
            if running is not None:
                running.cancel()
        elif isinstance(event, PermissionRequest):
            scope = anyio.CancelScope()
            self._asks[event.request_id] = scope
            assert self._tg is not None
            self._tg.start_soon(self._answer, event, scope)
        elif isinstance(event, PermissionCancelled):
            ask = self._asks.pop(event.request_id, None)
            if ask is not None:
                ask.cancel()
        rid = getattr(event, "request_id", None)
        if rid is not None and not isinstance(event, PermissionRequest | PermissionCancelled):
            waiter = self._waiters.get(rid)
            if waiter is not None and not waiter.done.is_set():
                if isinstance(event, ErrorEvent):
                    waiter.error = ClientError(f"{event.code}: {event.message}", event)
                else:
                    waiter.event = event
                waiter.done.set()
        for send in list(self._subscribers):
            try:
                send.send_nowait(event)
            except anyio.WouldBlock:
                log.warning("a subscriber fell behind; an event was dropped")
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._subscribers.discard(send)
