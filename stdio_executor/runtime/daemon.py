"""The anyio driver around the executor core.

Owns: the one loop that owns the core (decoded commands and tool completions arrive in one
inbox; the loop feeds the core and performs its actions), one task and one cancel scope per
running tool, the stdin reader, signal and host-death watchers, and the daemon's exit.
Must not: make scheduling decisions (the core does) or let an exception escape as anything
but an ``error`` event or an exit code.

Tool cancel scopes hang from one task group that lives as long as the daemon; which tools a
cancellation reaches (a sibling error, an interrupt of ``cancel`` tools only, an abort, a
discard) is the core's decision, so the runtime cancels exactly the scopes it names, each
with its reason. A tool outlives its turn only as a "zombie" of a discarded turn, whose
processes are still being killed.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import anyio
import anyio.abc
import msgspec

from ..config import Config
from ..core import (
    Action,
    CancelTool,
    DiscardRequested,
    DrainRequested,
    EmitDiscarded,
    EmitDrained,
    EmitDuplicate,
    EmitInterrupted,
    EmitResult,
    Executor,
    Outcome,
    StartTool,
    ToolAdded,
    ToolFinished,
    sibling_label,
)
from ..core.executor import InterruptRequested, ShutdownRequested
from ..journal import Journal
from ..permissions.gate import Allow, CallInfo, Deny, Gate, OpenGate, Verdict
from ..processes import group_alive
from ..protocol import (
    AddTool,
    CommandDecoder,
    Discard,
    Discarded,
    Drain,
    Drained,
    ErrorEvent,
    Interrupt,
    Interrupted,
    JobExited,
    JobStarted,
    ListJobs,
    PermissionResponse,
    Progress,
    RegisterTool,
    ResultMeta,
    ToolOutput,
    ToolProgressCommand,
    ToolResult,
    ToolStarted,
    TrustWorkspace,
    UnregisterTool,
    WorkspaceTrusted,
    encode_event,
)
from ..protocol.messages import Event
from ..tools.base import InputError, Tool, ToolContext, ToolOutcome
from ..tools.catalog import ToolRegistry
from ..tools.host import HostBridge, HostTool
from ..tools.mcp import McpManager, McpServerConfig
from ..tools.session import Session
from . import jobs
from .framing import LineFramer, TooLong
from .stdio import StdioFds, WireWriter, read_chunks
from .toolset import SchemaReport, ServerTools, ToolSet

__all__ = ["EXIT_HOST_GONE", "EXIT_INTERNAL", "EXIT_OK", "Daemon"]

log = logging.getLogger("stdio_executor")

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_HOST_GONE = 3

_PARENT_POLL_S = 0.5
# Output queued during one burst of dispatching that is written without waiting for the
# burst to end.
_KICK_BYTES = 64 * 1024


# Not frozen: built once per call on the hot path, where a frozen dataclass's __init__
# costs several times a plain one's (bench/NOTES.md). Never mutated after construction.
@dataclass(slots=True)
class _Finished:
    turn: int
    tool_use_id: str
    outcome: Outcome


@dataclass(slots=True)  # not frozen: see _Finished
class _Line:
    """A command with the input line it came from (for error events)."""

    lineno: int
    command: Any


# Commands whose error events name their input line.
_LINE_COMMANDS = (
    AddTool,
    RegisterTool,
    UnregisterTool,
    ToolProgressCommand,
    ToolOutput,
    PermissionResponse,
)


@dataclass(frozen=True, slots=True)
class _Eof:
    pass


@dataclass(frozen=True, slots=True)
class _Signal:
    signum: int


@dataclass(frozen=True, slots=True)
class _HostGone:
    why: str


class _Inbox:
    """A deque and a wake-up: cheaper than a memory stream when batches are large."""

    def __init__(self) -> None:
        self._items: deque[Any] = deque()
        self._event: anyio.Event | None = None

    @property
    def pending(self) -> bool:
        return bool(self._items)

    def put(self, item: Any) -> None:
        self._items.append(item)
        if self._event is not None:
            self._event.set()

    async def get_all(self) -> list[Any]:
        while not self._items:
            self._event = anyio.Event()
            await self._event.wait()
            self._event = None
        items = list(self._items)
        self._items.clear()
        return items


@dataclass(slots=True)
class _Running:
    tool: Tool
    value: Any
    scope: anyio.CancelScope
    started: float


def _with_notes(result: ToolOutcome, notes: tuple[str, ...]) -> ToolOutcome:
    """Append gate notes (hook context) for the model to a text result."""
    extra = "\n".join(notes)
    if isinstance(result.content, str):
        return replace(result, content=f"{result.content}\n{extra}")
    return replace(result, content=[*result.content, {"type": "text", "text": extra}])


def _use_pidfd_child_watcher() -> None:
    """Learn of child exits through pidfds instead of a thread per child (Python 3.11).

    3.11's default ThreadedChildWatcher starts a waitpid thread per process, which under the
    GIL adds milliseconds to every Bash call when many run at once; 3.12+ uses pidfds itself.
    """
    if sys.version_info >= (3, 12):
        return
    import asyncio

    try:
        watcher = asyncio.PidfdChildWatcher()
        watcher.attach_loop(asyncio.get_running_loop())
        asyncio.set_child_watcher(watcher)
    except (OSError, AttributeError, NotImplementedError, RuntimeError):  # pragma: no cover
        log.debug("pidfd child watcher unavailable; using asyncio's default")


class Daemon:
    def __init__(
        self,
        config: Config,
        registry: ToolRegistry,
        session: Session,
        fds: StdioFds,
        gate: Gate | None = None,
        journal: Journal | None = None,
        host: HostBridge | None = None,
        mcp_servers: Sequence[McpServerConfig] = (),
        held_mcp_servers: Sequence[McpServerConfig] = (),
    ):
        self.config = config
        self.journal = journal
        self.gate = gate or OpenGate()
        self.registry = registry
        self.session = session
        self.fds = fds
        self.core = Executor(
            max_concurrency=config.max_concurrency,
            result_order=config.result_order,
            context={"cwd": config.workspace},
        )
        self.inbox = _Inbox()
        self.wire = WireWriter(
            fds, on_closed=lambda: self.inbox.put(_HostGone("stdout closed")), journal=journal
        )
        self._decoder = CommandDecoder()
        self.gate.attach(self._emit_now, self._abort_turn)
        self._inputs: dict[str, tuple[Tool, Any, dict[str, Any]]] = {}  # added, not started
        self._running: dict[tuple[int, str], _Running] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        self._eof = False
        self._stopping: int | None = None  # exit code once we are on the way out
        self._stop_deadline = float("inf")
        # Tools beyond the built-ins (SPEC section 7): the host's and MCP servers'.
        self.host = host or HostBridge()
        self.host.attach(self._emit_now, lambda: self.core.turn, self._host_call_expected)
        self.toolset = ToolSet(registry, self.host)
        self.mcp = (
            McpManager(
                list(mcp_servers),
                session,
                lambda server, tools: self.inbox.put(ServerTools(server, tools)),
            )
            if mcp_servers
            else None
        )
        # The workspace's .mcp.json servers, until the host trusts the workspace.
        self._held_mcp = list(held_mcp_servers)

    # ------------------------------------------------------------------------ life

    async def run(self) -> int:
        _use_pidfd_child_watcher()
        async with anyio.create_task_group() as tg:
            self._tg = tg
            self.session.jobs.attach(
                tg.start_soon,
                lambda job: self.inbox.put(jobs.job_started(job)),
                lambda job: self.inbox.put(jobs.job_exited(job)),
            )
            tg.start_soon(self._read_input)
            tg.start_soon(self._watch_signals)
            tg.start_soon(self._watch_parent)
            tg.start_soon(self.wire.run)
            tg.start_soon(self.toolset.check_start_schemas, self.inbox.put)
            if self.mcp is not None:
                tg.start_soon(self.mcp.run)
            try:
                await self._own_core()
            finally:
                with anyio.CancelScope(shield=True):
                    await self._finish()
                tg.cancel_scope.cancel("daemon exiting")
        assert self._stopping is not None
        return self._stopping

    async def _finish(self) -> None:
        for running in self._running.values():
            running.scope.cancel("daemon exiting")
        if self.mcp is not None:
            await self.mcp.aclose()
        processes = self.session.processes
        if processes.groups:
            # Leftover groups (background commands): a chance to exit cleanly, then KILL.
            processes.kill_all(signal.SIGTERM)
            with anyio.move_on_after(0.5):
                while any(group_alive(g) for g in processes.groups):  # noqa: ASYNC110
                    await anyio.sleep(0.02)  # no event tells us a group emptied: poll
        processes.close()
        await self.session.jobs.aclose()
        if not self.wire.closed:
            with anyio.move_on_after(5.0):
                await self.wire.flush()

    async def _own_core(self) -> None:
        while True:
            if self._stopping is not None:
                timeout = self._stop_deadline - time.monotonic()
                if not self._running or timeout <= 0:
                    if self._running:
                        log.warning("%d tools did not stop in time", len(self._running))
                    return
                with anyio.move_on_after(timeout):
                    items = await self.inbox.get_all()
                    self._dispatch_all(items)
                continue
            items = await self.inbox.get_all()
            self._dispatch_all(items)
            if self._eof and self.core.idle and not self._running and self._stopping is None:
                self._stopping = EXIT_OK
                return

    def _dispatch_all(self, items: list[Any]) -> None:
        for item in items:
            try:
                self._dispatch(item)
            except Exception as exc:  # the one place a bug becomes a wire error
                log.exception("internal error while handling %r", item)
                self._emit(ErrorEvent(code="internal_error", message=f"internal error: {exc}"))
        # Write once the burst is over: an inline tool's result is already back in the
        # inbox, and writing its `tool_started` alone first woke the host twice per call
        # (bench/NOTES.md). A long burst (thousands of inline calls) still writes as it goes.
        if not self.inbox.pending or self.wire.pending >= _KICK_BYTES:
            self.wire.kick()

    def _dispatch(self, item: Any) -> None:
        if isinstance(item, _Finished):
            self._running.pop((item.turn, item.tool_use_id), None)
            event = ToolFinished(item.tool_use_id, item.outcome, turn=item.turn)
            self._perform(self.core.handle(event))
        elif isinstance(item, _Line):
            self._dispatch_command(item.command, item.lineno)
        elif isinstance(item, AddTool):
            self._add_tool(item, None)
        elif isinstance(item, Interrupt):
            self.gate.on_interrupt(item.reason)  # pending permission requests are void
            self._perform(self.core.handle(InterruptRequested(item.reason, item.request_id)))
        elif isinstance(item, Discard):
            self._perform(self.core.handle(DiscardRequested(item.request_id)))
        elif isinstance(item, Drain):
            self._perform(self.core.handle(DrainRequested(item.request_id)))
        elif isinstance(item, TrustWorkspace):
            self._trust_workspace(item)
        elif isinstance(item, PermissionResponse):
            self._on_permission_response(item, None)
        elif isinstance(item, RegisterTool | UnregisterTool | ToolProgressCommand | ToolOutput):
            self._on_host_command(item, None)
        elif isinstance(item, ServerTools | SchemaReport):
            for change in self.toolset.apply(item):
                self._emit(change)
        elif isinstance(item, ErrorEvent | JobStarted | JobExited):
            self._emit(item)
        elif isinstance(item, ListJobs):
            self._emit(jobs.list_jobs(item, self.session.jobs))
        elif isinstance(item, _Eof):
            self._eof = True
            log.debug("stdin closed; finishing the open turn")
            self.gate.on_input_closed()
            self.host.on_input_closed()
            if self.core.turn_open and not self.core.draining:
                self._perform(self.core.handle(DrainRequested(None)))
        elif isinstance(item, _Signal):
            self._on_signal(item.signum)
        elif isinstance(item, _HostGone):
            self._on_host_gone(item.why)
        else:  # pragma: no cover
            raise TypeError(f"unexpected inbox item {item!r}")

    def _on_host_command(
        self,
        command: RegisterTool | UnregisterTool | ToolProgressCommand | ToolOutput,
        line: int | None,
    ) -> None:
        if isinstance(command, ToolProgressCommand):
            error = self.host.on_progress(command, line)
            events: list[Event] = [error] if error is not None else []
        elif isinstance(command, ToolOutput):
            error = self.host.on_output(command, line)
            events = [error] if error is not None else []
        elif isinstance(command, RegisterTool):
            events = self.toolset.register(command, line)
        else:
            events = self.toolset.unregister(command, line)
        for event in events:
            self._emit(event)

    def _trust_workspace(self, command: TrustWorkspace) -> None:
        """Held-back settings (gate) and MCP servers take effect; later calls see them."""
        from ..permissions.trust import held_back_message

        held = self.gate.trust()
        servers, self._held_mcp = self._held_mcp, []
        if servers:
            if self.mcp is None:
                self.mcp = McpManager(
                    servers,
                    self.session,
                    lambda server, tools: self.inbox.put(ServerTools(server, tools)),
                )
                assert self._tg is not None
                self._tg.start_soon(self.mcp.run)
            else:
                self.mcp.add(servers)
        applied = held_back_message(held, [s.name for s in servers])
        self._emit(WorkspaceTrusted(applied=applied, request_id=command.request_id))

    def _host_call_expected(self, tool_use_id: str) -> bool:
        """A host tool call of the open turn is added or started, but not yet asked."""
        added = self._inputs.get(tool_use_id)
        if added is not None:
            return isinstance(added[0], HostTool)
        running = self._running.get((self.core.turn, tool_use_id))
        return running is not None and isinstance(running.tool, HostTool)

    def _on_permission_response(self, response: PermissionResponse, line: int | None) -> None:
        error = self.gate.on_response(response)
        if error is not None:
            self._emit(msgspec.structs.replace(error, line=line) if line else error)

    def _dispatch_command(self, command: Any, lineno: int) -> None:
        if isinstance(command, AddTool):
            self._add_tool(command, lineno)
        elif isinstance(command, PermissionResponse):
            self._on_permission_response(command, lineno)
        elif isinstance(command, RegisterTool | UnregisterTool | ToolProgressCommand | ToolOutput):
            self._on_host_command(command, lineno)
        else:
            self._dispatch(command)

    def _on_signal(self, signum: int) -> None:
        code = 128 + signum
        if self._stopping is not None:
            log.warning("second signal %d: exiting now", signum)
            self._stopping = code
            self._stop_deadline = 0.0
            return
        log.info("signal %d: cancelling every tool and exiting", signum)
        self._stopping = code
        self._stop_deadline = time.monotonic() + self.config.shutdown_grace
        self._perform(self.core.handle(ShutdownRequested()))

    def _on_host_gone(self, why: str) -> None:
        if self._stopping == EXIT_HOST_GONE:
            return
        log.warning("host is gone (%s): stopping every tool and exiting", why)
        self._stopping = EXIT_HOST_GONE
        self._stop_deadline = time.monotonic() + self.config.shutdown_grace
        # Nobody can read results any more: stop everything the quickest way.
        self._perform(self.core.handle(DiscardRequested(None)))

    # --------------------------------------------------------------------- commands

    def _add_tool(self, cmd: AddTool, lineno: int | None) -> None:
        use = cmd.tool_use
        if self.core.holds(use.id):
            self._emit(
                ErrorEvent(
                    code="duplicate_tool_use_id",
                    message=(
                        f"tool_use id {use.id!r} is already in turn {self.core.turn}; "
                        "this add_tool was ignored"
                    ),
                    line=lineno,
                    request_id=cmd.request_id,
                    tool_use_id=use.id,
                )
            )
            return
        try:
            added = self._classify(use.id, use.name, use.input)
        except Exception as exc:
            # A bug in a tool's loading or validation must still give this call a result
            # ("every add_tool gets exactly one tool_result"), and the daemon goes on.
            log.exception("could not prepare tool %s", use.name)
            message = f"<tool_use_error>Error: {type(exc).__name__}: {exc}</tool_use_error>"
            added = ToolAdded(use.id, use.name, True, outcome=Outcome(message, True, "error"))
        self._perform(self.core.handle(added))

    def _classify(self, tool_use_id: str, name: str, raw: dict[str, Any]) -> ToolAdded:
        """Resolve, validate and classify one call; what the core needs to schedule it."""
        tool = self.registry.get(name)
        if tool is None and self.mcp is not None:
            tool = self.mcp.placeholder(name)  # a tool of a server that is not up (yet)
        if tool is None:
            message = f"<tool_use_error>Error: No such tool available: {name}</tool_use_error>"
            return ToolAdded(
                tool_use_id, name, True, outcome=Outcome(message, True, "unknown_tool")
            )
        spec = tool.spec
        try:
            value = tool.validate(raw)
        except InputError as exc:
            label = None
            if spec.cancels_siblings:  # an invalid Bash call is a failed Bash call
                label = sibling_label(spec.name, str(raw.get("command", "")))
            outcome = Outcome(str(exc), True, "invalid_input")
            return ToolAdded(tool_use_id, spec.name, True, spec.interrupt_behavior, label, outcome)
        label = sibling_label(spec.name, tool.describe(value)) if spec.cancels_siblings else None
        safe = tool.is_concurrency_safe(value)
        self._inputs[tool_use_id] = (tool, value, raw)
        return ToolAdded(tool_use_id, spec.name, safe, spec.interrupt_behavior, label)

    # ---------------------------------------------------------------------- actions

    def _perform(self, actions: list[Action]) -> None:
        for action in actions:
            if isinstance(action, StartTool):
                self._start(action)
            elif isinstance(action, EmitResult):
                self._emit_result(action)
            elif isinstance(action, CancelTool):
                running = self._running.get((self.core.turn, action.tool_use_id))
                if running is not None:
                    running.scope.cancel(action.reason.value)
            elif isinstance(action, EmitDrained):
                errors = sum(n for status, n in action.by_status.items() if status != "success")
                self._emit(
                    Drained(
                        request_id=action.request_id,
                        turn=action.turn,
                        results=sum(action.by_status.values()),
                        errors=errors,
                        by_status=dict(action.by_status),
                    )
                )
            elif isinstance(action, EmitDiscarded):
                for tool_use_id in action.tool_use_ids:
                    self._inputs.pop(tool_use_id, None)
                self._emit(
                    Discarded(
                        tool_use_ids=list(action.tool_use_ids),
                        request_id=action.request_id,
                        turn=action.turn,
                    )
                )
            elif isinstance(action, EmitInterrupted):
                self._emit(
                    Interrupted(
                        reason=action.reason,
                        tool_use_ids=list(action.tool_use_ids),
                        request_id=action.request_id,
                        turn=action.turn,
                    )
                )
            elif isinstance(action, EmitDuplicate):
                self._emit(
                    ErrorEvent(
                        code="duplicate_tool_use_id",
                        message=(
                            f"tool_use id {action.tool_use_id!r} is already in turn "
                            f"{action.turn}; this add_tool was ignored"
                        ),
                        tool_use_id=action.tool_use_id,
                    )
                )

    def _start(self, action: StartTool) -> None:
        tool, value, raw = self._inputs.pop(action.tool_use_id)
        turn, tool_use_id = action.turn, action.tool_use_id
        self._emit(ToolStarted(tool_use_id=tool_use_id, name=action.name, turn=turn))
        cwd = action.context.get("cwd", self.config.workspace)
        ctx = ToolContext(
            tool_use_id=tool_use_id,
            cwd=cwd,
            session=self.session,
            progress=self._progress_sink(turn, tool_use_id),
        )
        call = CallInfo(tool_use_id, tool, raw, value, turn, cwd, self.core.turn_tool_ids)
        started = time.monotonic()
        verdict = self.gate.quick_verdict(call)
        if isinstance(verdict, Deny):
            outcome = Outcome(verdict.message, True, "denied", self._timing(started))
            self.inbox.put(_Finished(turn, tool_use_id, outcome))
            return
        if (
            isinstance(verdict, Allow)
            and verdict.updated_input is None
            and not verdict.notes
            and not self.gate.needs_after_run(call)
        ):
            try:
                fast = tool.run_inline(value, ctx)
            except Exception as exc:  # a bug in the tool's fast path: still one result
                log.exception("tool %s raised", tool.spec.name)
                message = f"<tool_use_error>Error: {type(exc).__name__}: {exc}</tool_use_error>"
                outcome = Outcome(message, True, "error", self._timing(started))
                self.inbox.put(_Finished(turn, tool_use_id, outcome))
                return
            if fast is not None:
                self.inbox.put(_Finished(turn, tool_use_id, self._outcome(fast, started)))
                return
        scope = anyio.CancelScope()
        self._running[(turn, tool_use_id)] = _Running(tool, value, scope, started)
        assert self._tg is not None
        self._tg.start_soon(self._run_tool, call, ctx, scope, started, verdict)

    async def _run_tool(
        self,
        call: CallInfo,
        ctx: ToolContext,
        scope: anyio.CancelScope,
        started: float,
        verdict: Verdict | None,
    ) -> None:
        outcome: Outcome | None = None
        tool = call.tool
        with scope:
            try:
                outcome = await self._gated_run(call, ctx, started, verdict)
            except Exception as exc:
                # A tool raised: that is a bug in the tool, but the model gets an error
                # result and the daemon goes on (SPEC section 4).
                log.exception("tool %s raised", tool.spec.name)
                message = f"<tool_use_error>Error: {type(exc).__name__}: {exc}</tool_use_error>"
                outcome = Outcome(message, True, "error", self._timing(started))
        if outcome is None:  # cancelled: report what the tool had produced so far
            partial = ctx.sink.collect() if ctx.sink is not None else None
            extra = self._timing(started)
            if partial is not None:
                extra.update(
                    truncated=partial.truncated,
                    output_path=partial.path,
                    output_bytes=partial.total_bytes,
                )
            outcome = Outcome(partial.text if partial else "", True, "interrupted", extra, True)
        if ctx.sink is not None:
            # A cancelled or crashed tool never reached its own close: the spill file's fd
            # would leak for the daemon's lifetime.
            ctx.sink.close()
        self.inbox.put(_Finished(call.turn, ctx.tool_use_id, outcome))

    async def _gated_run(
        self, call: CallInfo, ctx: ToolContext, started: float, verdict: Verdict | None
    ) -> Outcome:
        """Permission check and PreToolUse hooks, the run, then PostToolUse hooks."""
        if verdict is None:
            verdict = await self.gate.before_run(call)
        if isinstance(verdict, Deny):
            return Outcome(verdict.message, True, "denied", self._timing(started))
        value = call.value
        if verdict.updated_input is not None:
            try:
                value = call.tool.validate(verdict.updated_input)
            except InputError as exc:
                return Outcome(str(exc), True, "invalid_input", self._timing(started))
            call = replace(call, raw_input=verdict.updated_input, value=value)
        result = await call.tool.run(value, ctx)
        if verdict.notes:
            result = _with_notes(result, verdict.notes)
        if self.gate.needs_after_run(call):
            result = await self.gate.after_run(call, result)
        return self._outcome(result, started)

    def _outcome(self, result: ToolOutcome, started: float) -> Outcome:
        extra = {
            **self._timing(started),
            "exit_code": result.exit_code,
            "truncated": result.truncated,
            "output_path": result.output_path,
            "output_bytes": result.output_bytes,
        }
        return Outcome(
            result.content,
            result.is_error,
            result.final_status,
            extra,
            context_update=result.context_update,
        )

    @staticmethod
    def _timing(started: float) -> dict[str, Any]:
        # round(x, 3) formats the float as decimal digits: a microsecond per call.
        return {"duration_ms": round((time.monotonic() - started) * 1e6) / 1000}

    def _progress_sink(self, turn: int, tool_use_id: str) -> Callable[[dict[str, Any]], None]:
        def progress(data: dict[str, Any]) -> None:
            # Output of a discarded turn must never reach the host.
            if self.core.turn == turn and self.core.is_live(tool_use_id):
                self._emit(Progress(tool_use_id=tool_use_id, data=data))
                self.wire.kick()

        return progress

    def _emit_result(self, action: EmitResult) -> None:
        outcome = action.outcome
        extra = outcome.extra
        meta = ResultMeta(
            status=outcome.status,  # type: ignore[arg-type]
            turn=action.turn,
            duration_ms=extra.get("duration_ms"),
            exit_code=extra.get("exit_code"),
            truncated=bool(extra.get("truncated", False)),
            output_path=extra.get("output_path"),
            output_bytes=extra.get("output_bytes"),
        )
        self._emit(
            ToolResult(
                tool_use_id=action.tool_use_id,
                content=outcome.content,
                is_error=outcome.is_error,
                meta=meta,
            )
        )

    def _emit(self, event: Event) -> None:
        self.wire.send(encode_event(event))

    def _emit_now(self, event: Event) -> None:
        """Write an event from outside the loop's batches (a tool task)."""
        self._emit(event)
        self.wire.kick()

    def _abort_turn(self, request_id: str | None) -> None:
        """The gate aborts the turn (a host's ``interrupt: true``, a hook's ``continue:
        false``): handled exactly like an ``interrupt`` command with reason "abort"."""
        self.inbox.put(Interrupt(reason="abort", request_id=request_id))

    # ---------------------------------------------------------------------- watchers

    async def _read_input(self) -> None:
        framer = LineFramer(self.config.max_line_bytes)
        decode = self._decoder.decode
        put = self.inbox.put
        try:
            async for chunk in read_chunks(self.fds, self.wire.backlog_waiter):
                for line in framer.feed(chunk):
                    put(self._decode_line(line, decode))
                if self.journal is not None:
                    self.journal.flush()
            for line in framer.eof():
                put(self._decode_line(line, decode))
            if self.journal is not None:
                self.journal.flush()
        except OSError as exc:
            log.error("reading stdin failed: %s", exc)
        put(_Eof())

    def _decode_line(self, line: tuple[int, bytes] | TooLong, decode: Any) -> Any:
        if isinstance(line, TooLong):
            if self.journal is not None:
                self.journal.record_skipped(line.lineno, line.size)
            return ErrorEvent(
                code="line_too_long",
                message=(
                    f"line {line.lineno} is {line.size} bytes, over --max-line-bytes "
                    f"({self.config.max_line_bytes}); it was skipped"
                ),
                line=line.lineno,
            )
        lineno, data = line
        command = decode(data, lineno)
        if self.journal is not None:
            is_json = not (
                isinstance(command, ErrorEvent) and command.code in ("invalid_json", "invalid_utf8")
            )
            self.journal.record_in(lineno, data, is_json)
        return _Line(lineno, command) if isinstance(command, _LINE_COMMANDS) else command

    async def _watch_signals(self) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
            async for signum in signals:
                self.inbox.put(_Signal(signum))

    async def _watch_parent(self) -> None:
        """Notice a host that died or stopped reading even while nothing is written."""
        parent = os.getppid()
        poller = select.poll()
        # An empty event mask still reports POLLERR/POLLHUP: the pipe's read end is closed.
        poller.register(self.fds.output_fd, 0)
        while True:
            await anyio.sleep(_PARENT_POLL_S)
            if parent != 1 and os.getppid() != parent:
                self.inbox.put(_HostGone(f"parent process {parent} exited"))
                return
            if poller.poll(0):
                self.inbox.put(_HostGone("stdout closed"))
                return
