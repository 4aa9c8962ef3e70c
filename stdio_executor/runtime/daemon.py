"""The anyio driver around the executor core: the one loop that owns it.

Owns: the loop (everything arrives in one typed inbox; the loop feeds the core and performs
its actions; input lines that arrive while it is parked are fed to it inside the stdin
reader's callback, in the same loop iteration), the stdin reader, signal and host-death
watchers, and the daemon's exit.
Must not: make scheduling, ordering, cancellation or turn decisions (the core does, including
when the daemon may exit), run calls (``runner``), admit them (``admission``), shape events
(``to_wire``), or let an exception escape as anything but an ``error`` event or an exit code.

Call tasks hang from one task group that lives as long as the daemon; which calls a
cancellation reaches (a sibling error, an interrupt of ``cancel`` tools only, an abort, a
discard) is the core's decision, so the loop cancels exactly the calls it names, each with
its reason. A call outlives its turn only as a "zombie" of a discarded turn, whose processes
are still being killed.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import anyio
import anyio.abc
import msgspec

from .. import PARENT_AT_START
from ..config import Config
from ..core import (
    Action,
    CancelTool,
    DiscardRequested,
    DrainRequested,
    EmitInterrupted,
    Executor,
    InputClosed,
    InterruptRequested,
    ShutdownRequested,
    StartTool,
    ToolFinished,
)
from ..permissions.gate import Gate, OpenGate
from ..processes import PARENT_DEATH_SIGNAL
from ..protocol import (
    AddTool,
    CommandDecoder,
    Discard,
    Drain,
    ErrorEvent,
    Interrupt,
    JobExited,
    JobStarted,
    ListJobs,
    PermissionResponse,
    RegisterTool,
    ToolOutput,
    ToolProgressCommand,
    TrustWorkspace,
    UnregisterTool,
    WorkspaceTrusted,
    encode_event,
)
from ..protocol.messages import Command, Event
from ..tools.base import Tool
from ..tools.catalog import ToolRegistry
from ..tools.host import HostBridge, HostTool
from ..tools.session import Session
from . import jobs
from .admission import Call, admit
from .fds import _pollable
from .framing import LineFramer, TooLong
from .inbox import (
    Eof,
    Finished,
    HostGone,
    Inbox,
    InboxItem,
    Line,
    SignalReceived,
    TurnAbort,
)
from .runner import CallRunner
from .stdio import StdioFds, WireWriter, feed_chunks
from .to_wire import event_for
from .toolset import ServerTools, ToolSet

if TYPE_CHECKING:  # each loads only when configured (start-up cost)
    from ..journal import Journal
    from ..tools.mcp import McpManager, McpServerConfig

__all__ = ["EXIT_HOST_GONE", "EXIT_INTERNAL", "EXIT_OK", "Daemon"]

log = logging.getLogger("stdio_executor")

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_HOST_GONE = 3

_PARENT_POLL_S = 0.5
# Output queued during one burst of dispatching that is written without waiting for the
# burst to end.
_KICK_BYTES = 64 * 1024


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
        when_idle: Sequence[Callable[[], None]] = (),
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
        self.inbox = Inbox()
        self.wire = WireWriter(
            fds, on_closed=lambda: self.inbox.put(HostGone("stdout closed")), journal=journal
        )
        self._decoder = CommandDecoder()
        self.gate.attach(self._emit_now, self._abort_turn)
        self.runner = CallRunner(
            gate=self.gate,
            session=session,
            workspace=config.workspace,
            emit=self._emit,
            emit_now=self._emit_now,
            finished=self.inbox.put,
            is_live=self.core.is_live,
            turn_tool_ids=self.core.turn_tool_ids,
        )
        self._stopping: int | None = None  # exit code once we are on the way out
        self._stop_deadline = float("inf")
        # Tools beyond the built-ins (SPEC section 7): the host's and MCP servers'.
        self.host = host or HostBridge()
        self.host.attach(self._emit_now, lambda: self.core.turn, self._host_call_expected)
        self.toolset = ToolSet(registry, self.host)
        self.mcp: McpManager | None = None
        if mcp_servers:
            self.mcp = self._mcp_manager(mcp_servers)
        # The workspace's .mcp.json servers, until the host trusts the workspace.
        self._held_mcp = list(held_mcp_servers)
        self._tg: anyio.abc.TaskGroup | None = None
        # Start-up work nothing waits for yet (the spawner, the sandbox's namespace): done
        # the first time the loop has nothing to do, so it never delays the first call.
        self._when_idle = list(when_idle)
        self._input_ended = False

    # ------------------------------------------------------------------------ life

    async def run(self) -> int:
        _use_pidfd_child_watcher()
        async with anyio.create_task_group() as tg:
            self._tg = tg
            self.runner.attach(tg)
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
        self.runner.cancel_all("daemon exiting")
        if self.mcp is not None:
            await self.mcp.aclose()
        processes = self.session.processes
        if processes.live:
            # Leftovers (background commands): a chance to exit cleanly, then KILL.
            processes.kill_all(signal.SIGTERM)
            with anyio.move_on_after(0.5):
                while processes.live:  # noqa: ASYNC110
                    await anyio.sleep(0.02)
        processes.close()
        await self.session.jobs.aclose()
        if not self.wire.closed:
            with anyio.move_on_after(5.0):
                await self.wire.flush()

    async def _own_core(self) -> None:
        while True:
            if self._when_idle and self._nothing_to_do():
                self._idle()
            if self._stopping is not None:
                timeout = self._stop_deadline - time.monotonic()
                if not self.runner.running or timeout <= 0:
                    if self.runner.running:
                        log.warning("%d tools did not stop in time", self.runner.running)
                    return
                with anyio.move_on_after(timeout):
                    self._dispatch_all(await self.inbox.get_all())
                continue
            self._dispatch_all(await self.inbox.get_all())
            if self.core.finished:
                self._stopping = EXIT_OK
                return

    def _serve_here(self, lines: list[InboxItem]) -> bool:
        """Dispatch input lines inside the reader's callback, in the loop iteration that
        read them, when the loop is parked with nothing else to do; False: queue them.

        Only in the steady state: while start-up work waits for the first idle moment, or
        the daemon is stopping, the loop's own turn decides what comes next. What the lines
        lead to (the core finished, a stop) wakes the loop, which checks it as after any
        batch.
        """
        if self._when_idle or self._stopping is not None:
            return False
        if not self.inbox.serve_here(lines, self._dispatch_all):
            return False
        if self._stopping is not None or self.core.finished:
            self.inbox.wake()
        return True

    def _nothing_to_do(self) -> bool:
        """Idle, for the start-up work kept for idle moments: no line queued or unread, and no
        call running. A call in flight (the host's first Bash waiting on the spawner) is
        work: the warm-up thread took the GIL from it, and the sandbox holder (a third
        Python start-up) a core (bench/NOTES.md section 19). Its end puts its result in the
        inbox, which brings the loop back here. A long first call keeps the collector off
        until it ends; start-up allocates nothing cyclic that it would free."""
        return not self.inbox.pending and not self.runner.running and not self._input_waiting()

    def _input_waiting(self) -> bool:
        """Whether the host sent bytes the reader has not taken yet: they are work, and the
        idle-time start-up work must not go before them. (The reader takes input in the
        loop's reader callback, a loop iteration or two after the loop starts.) Asked only
        until that work is done; a regular file, always "readable", and input past its end
        never hold it back."""
        fd = self.fds.input_fd
        if self._input_ended or not _pollable(fd):
            return False
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(0))

    def _idle(self) -> None:
        hooks, self._when_idle = self._when_idle, []
        for hook in hooks:
            try:
                hook()
            except Exception:  # a start-up helper's failure shows up where it is used
                log.exception("start-up work after ready failed")

    def _dispatch_all(self, items: list[InboxItem]) -> None:
        for item in items:
            try:
                self._dispatch(item)
            except Exception as exc:  # the one place a bug in the loop becomes a wire error
                log.exception("internal error while handling %r", item)
                self._emit(ErrorEvent(code="internal_error", message=f"internal error: {exc}"))
        # Write once the burst is over: an inline tool's result is already back in the
        # inbox, and writing its `tool_started` alone first woke the host twice per call
        # (bench/NOTES.md). A long burst (thousands of inline calls) still writes as it goes.
        if not self.inbox.pending or self.wire.pending >= _KICK_BYTES:
            self.wire.kick()

    def _dispatch(self, item: InboxItem) -> None:
        if isinstance(item, Finished):
            self._perform(self.core.handle(ToolFinished(item.tool_use_id, item.outcome, item.turn)))
        elif isinstance(item, Line):
            self._on_command(item.command, item.lineno)
        elif isinstance(item, ErrorEvent | JobStarted | JobExited):
            self._emit(item)
        elif isinstance(item, TurnAbort):
            event = InterruptRequested("abort", item.request_id, turn=item.turn)
            self._perform(self.core.handle(event))
        elif isinstance(item, Eof):
            self._input_ended = True
            log.debug("stdin closed; finishing what was sent")
            self.gate.on_input_closed()
            self.host.on_input_closed()
            self._perform(self.core.handle(InputClosed()))
        elif isinstance(item, SignalReceived):
            self._on_signal(item.signum)
        elif isinstance(item, HostGone):
            self._on_host_gone(item.why)
        else:
            for change in self.toolset.apply(item):
                self._emit(change)

    def _on_command(self, command: Command, line: int) -> None:
        core = self.core
        if isinstance(command, AddTool):
            self._perform(core.handle(admit(command, line, self._resolve)))
        elif isinstance(command, Interrupt):
            self._perform(core.handle(InterruptRequested(command.reason, command.request_id)))
        elif isinstance(command, Discard):
            self._perform(core.handle(DiscardRequested(command.request_id)))
        elif isinstance(command, Drain):
            self._perform(core.handle(DrainRequested(command.request_id)))
        elif isinstance(command, PermissionResponse):
            error = self.gate.on_response(command)
            if error is not None:
                self._emit(msgspec.structs.replace(error, line=line))
        elif isinstance(command, ListJobs):
            self._emit(jobs.list_jobs(command, self.session.jobs))
        elif isinstance(command, TrustWorkspace):
            self._trust_workspace(command)
        else:
            self._on_host_command(command, line)

    def _on_host_command(
        self,
        command: RegisterTool | UnregisterTool | ToolProgressCommand | ToolOutput,
        line: int,
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
                self.mcp = self._mcp_manager(servers)
                assert self._tg is not None
                self._tg.start_soon(self.mcp.run)
            else:
                self.mcp.add(servers)
        applied = held_back_message(held, [s.name for s in servers])
        self._emit(WorkspaceTrusted(applied=applied, request_id=command.request_id))

    def _mcp_manager(self, servers: Sequence[McpServerConfig]) -> McpManager:
        from ..tools.mcp import McpManager

        return McpManager(
            list(servers),
            self.session,
            lambda server, tools: self.inbox.put(ServerTools(server, tools)),
        )

    def _resolve(self, name: str) -> Tool | None:
        tool = self.registry.get(name)
        if tool is None and self.mcp is not None:
            tool = self.mcp.placeholder(name)  # a tool of a server that is not up (yet)
        return tool

    def _host_call_expected(self, tool_use_id: str) -> bool:
        """A host tool call is added (queued or held) or started, but not yet asked."""
        call = self.core.expected(tool_use_id)
        if isinstance(call, Call):
            return isinstance(call.tool, HostTool)
        return isinstance(self.runner.tool_of(self.core.turn, tool_use_id), HostTool)

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
        self._perform(self.core.handle(ShutdownRequested(discard=True)))

    # ---------------------------------------------------------------------- actions

    def _perform(self, actions: list[Action]) -> None:
        for action in actions:
            if isinstance(action, StartTool):
                self.runner.start(action)
            elif isinstance(action, CancelTool):
                self.runner.cancel(action.turn, action.tool_use_id, action.reason.value)
            else:
                if isinstance(action, EmitInterrupted) and action.turn is not None:
                    # Permission requests of the calls it leaves running are void too.
                    self.gate.on_interrupt(action.reason)
                self._emit(event_for(action))

    def _emit(self, event: Event) -> None:
        self.wire.send(encode_event(event))

    def _emit_now(self, event: Event) -> None:
        """Write an event from outside the loop's batches (a tool task)."""
        self._emit(event)
        self.wire.kick()

    def _abort_turn(self, request_id: str | None) -> None:
        """The gate aborts the turn of the call it is checking: the open one (held turns
        have not started a call yet)."""
        self.inbox.put(TurnAbort(self.core.turn, request_id))

    # ---------------------------------------------------------------------- watchers

    async def _read_input(self) -> None:
        framer = LineFramer(self.config.max_line_bytes)
        put = self.inbox.put
        decode = self._decode_line
        lines: list[InboxItem] = []

        def on_chunk(chunk: bytes) -> None:
            lines.extend(decode(line) for line in framer.feed(chunk))
            if self.journal is not None:
                self.journal.flush()

        def on_read_all() -> None:
            # Everything the host had sent is read: the lines go to the core now (in this
            # loop iteration, when the loop is idle) or to the inbox.
            if lines:
                batch = lines.copy()
                lines.clear()
                if not self._serve_here(batch):
                    self.inbox.put_all(batch)

        try:
            await feed_chunks(self.fds, on_chunk, self.wire.backlog_waiter, on_read_all)
            for line in framer.eof():
                put(self._decode_line(line))
            if self.journal is not None:
                self.journal.flush()
        except OSError as exc:
            on_read_all()  # what was read before the error is still the host's
            log.error("reading stdin failed: %s", exc)
        put(Eof())

    def _decode_line(self, line: tuple[int, bytes] | TooLong) -> Line | ErrorEvent:
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
        command = self._decoder.decode(data, lineno)
        if self.journal is not None:
            is_json = not (
                isinstance(command, ErrorEvent) and command.code in ("invalid_json", "invalid_utf8")
            )
            self.journal.record_in(lineno, data, is_json)
        return command if isinstance(command, ErrorEvent) else Line(lineno, command)

    async def _watch_signals(self) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
            async for signum in signals:
                self.inbox.put(SignalReceived(signum))

    async def _watch_parent(self) -> None:
        """Notice a host that died or stopped reading even while nothing is written: the
        parent-death signal, and a poll (a host that died before we asked for the signal,
        or a platform without it)."""
        parent = PARENT_AT_START
        poller = select.poll()
        # An empty event mask still reports POLLERR/POLLHUP: the pipe's read end is closed.
        poller.register(self.fds.output_fd, 0)
        with anyio.open_signal_receiver(PARENT_DEATH_SIGNAL) as deaths:
            while True:
                if parent != 1 and os.getppid() != parent:
                    self.inbox.put(HostGone(f"parent process {parent} exited"))
                    return
                if poller.poll(0):
                    self.inbox.put(HostGone("stdout closed"))
                    return
                with anyio.move_on_after(_PARENT_POLL_S):
                    await deaths.__anext__()
