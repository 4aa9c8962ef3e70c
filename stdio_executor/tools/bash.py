"""The Bash tool: one ``bash -c`` per call, in its own process group.

Owns: running a command with Claude Code's Bash inputs; streaming combined stdout/stderr as
coalesced ``progress``; the exit code; the timeout (the group is stopped, partial output
kept); stopping the group on cancel (SIGTERM, bounded wait, SIGKILL, reap); carrying the
final working directory into the session (``cd`` persists); background commands.
Must not: decide whether its failure cancels siblings (the core does), or hold output in
memory past the size limit (``OutputSink`` spills it).

stdout and stderr share one pipe (``2>&1``) so the model sees them interleaved as a
terminal would, and one reader serves both.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import math
import os
import re
import stat
import subprocess
from collections.abc import Mapping
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
import msgspec

from ..permissions.bash_syntax import CommandInfo, analyze
from ..permissions.readonly import harden_git
from ..processes import (
    DRAIN_AFTER_EXIT_S,
    Child,
    ChildSetup,
    start_child,
    stop_group,
    supervised,
)
from ..sandbox.plan import Spawn
from .base import Tool, ToolContext, ToolOutcome
from .files.results import input_error
from .inputs import BashInput, parse
from .output import OutputSink, complete_utf8

__all__ = ["BashTool"]

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
_PROGRESS_INTERVAL_S = 0.1
_PROGRESS_MAX_CHARS = 8_192  # bytes of output per progress event, newest kept
# The output pipe is raised to 1 MiB (Linux's default cap for a user) and read up to that
# much at a time: with the default 64 KiB, a command writing a gigabyte woke the event loop
# 16,000 times and the daemon kept up at a quarter of `cat`'s speed (bench/NOTES.md). It is
# raised only once a read finds the pipe full (``_Reader``): most commands write a few lines,
# and the resize (a system call and a 10 KB ring allocation) was a tenth of a call's start.
_PIPE_SIZE = 1024 * 1024
_READ_SIZE = _PIPE_SIZE
_DEFAULT_PIPE_SIZE = 64 * 1024

# $1: file that receives the final working directory; $2: the command. The EXIT trap also
# fires when the command calls `exit`, so `cd x && exit 3` still moves the session.
_WRAPPER = (
    "__se_cwd_file=$1; __se_command=$2; shift 2; "
    "trap 'pwd -P >\"$__se_cwd_file\" 2>/dev/null' EXIT; "
    'eval "$__se_command"'
)
# Words after which the shell's directory may differ at exit: only then is the wrapper
# worth its cost (the EXIT trap keeps bash from exec'ing the last command in place: one more
# fork per call). Checked on the text with quotes and backslashes removed, so `c""d` and
# `\cd` count; a command that builds `cd` at run time (`$(printf ...)`) still runs, it just
# does not move the session.
_MAY_CHANGE_DIRECTORY = re.compile(
    r"(?<![\w.-])(?:cd|pushd|popd|source|eval)(?![\w-])|(?:^|[\s;&|(){}`])\.(?:\s|$)"
)


class _Call(msgspec.Struct, frozen=True):
    command: str
    timeout_ms: float
    background: bool
    info: CommandInfo
    disable_sandbox: bool = False  # dangerouslyDisableSandbox: the gate asked first
    description: str = ""


class _Begun(msgspec.Struct):
    """A foreground call whose shell is started (``BashTool._begin``), for ``_finish``."""

    process: Child
    read_fd: int
    spawn: Spawn | None
    sink: OutputSink
    cwd: str
    note: str
    cwd_file: str | None
    started: float  # loop time: the timeout counts from here


_BEGUN = "bash.begun"  # its key in ToolContext.extra, from ``run_inline`` to ``run``


# Linux passes one argument of at most 32 pages (MAX_ARG_STRLEN), NUL included, and the
# command is one argument of `bash -c`: a longer one cannot start at all (E2BIG). Refused
# when validated, before it costs a parse or a trip through the spawner.
MAX_COMMAND_BYTES = 32 * 4096 - 1


class BashTool(Tool):
    def validate(self, raw: Mapping[str, Any]) -> _Call:
        value = parse(self.spec.name, BashInput, raw)
        size = len(value.command.encode("utf-8", "surrogatepass"))
        if size > MAX_COMMAND_BYTES:
            raise input_error(
                self.spec.name,
                "command",
                f"is {size} bytes; Linux passes at most {MAX_COMMAND_BYTES} bytes as one "
                "argument (MAX_ARG_STRLEN). Write the script to a file and run the file.",
            )
        timeout = value.timeout
        if not isinstance(timeout, float) or not timeout > 0:  # also NaN
            timeout = DEFAULT_TIMEOUT_MS
        # Claude Code clamps rather than refuses an over-long timeout; so do we.
        return _Call(
            command=value.command,
            timeout_ms=min(timeout, MAX_TIMEOUT_MS),
            background=value.run_in_background is True,
            info=analyze(value.command),
            # Accepted as Claude Code accepts it; the sandbox gives it its meaning.
            disable_sandbox=value.dangerouslyDisableSandbox is True,
            description=value.description if isinstance(value.description, str) else "",
        )

    def is_concurrency_safe(self, value: Any) -> bool:
        call: _Call = value
        return call.info.read_only and not call.background

    def describe(self, value: Any) -> str:
        call: _Call = value
        return call.command

    def describe_raw(self, raw: Mapping[str, Any]) -> str:
        command = raw.get("command", "")
        return command if isinstance(command, str) else str(command)

    def run_inline(self, value: Any, ctx: ToolContext) -> ToolOutcome | None:
        """Starts the command now, while the runtime is still admitting the calls that came
        with this one (its task runs only after the last of them is admitted): the shell
        is started here and the task takes the call over (``run``). ``None`` when started
        or left to the task; an error outcome when it cannot start."""
        call: _Call = value
        if call.background or ctx.confine is not None:
            return None
        spawn = _route(call, ctx)
        if isinstance(spawn, _NeedsPrepare):
            return None  # the sandbox is built in a thread first: the task does it
        if isinstance(spawn, ToolOutcome):
            return spawn
        begun = self._begin(call, ctx, spawn)
        if isinstance(begun, ToolOutcome):
            return begun
        ctx.extra[_BEGUN] = begun
        return None

    async def run(self, value: Any, ctx: ToolContext) -> ToolOutcome:
        call: _Call = value
        if call.background:
            spawn = await _sandboxing(call, ctx)
            if isinstance(spawn, ToolOutcome):
                return spawn
            return await self._start_background(call, ctx, spawn)
        begun = ctx.extra.pop(_BEGUN, None)
        if begun is None:
            # The sink first: a call cancelled while the sandbox is built reports its
            # (empty) output as one cancelled after its start does.
            sink = self._sink(ctx)
            spawn = await _sandboxing(call, ctx)
            if isinstance(spawn, ToolOutcome):
                sink.close()
                return spawn
            begun = self._begin(call, ctx, spawn, sink)
            if isinstance(begun, ToolOutcome):
                return begun
        return await self._finish(call, ctx, begun)

    def _sink(self, ctx: ToolContext) -> OutputSink:
        sink = OutputSink(self.spec.max_result_bytes, ctx.session.spill_path(ctx.tool_use_id))
        ctx.sink = sink
        return sink

    def _begin(
        self, call: _Call, ctx: ToolContext, spawn: Spawn | None, sink: OutputSink | None = None
    ) -> _Begun | ToolOutcome:
        """Start the shell, without an await (``run_inline`` calls it too)."""
        cwd, note = ctx.cwd, ""
        if not os.path.isdir(cwd):
            # The session's directory was deleted (`rmdir` of where we `cd`'d): fall back to
            # the workspace, as Claude Code does, instead of failing every later call.
            cwd = ctx.session.workspace
            note = f"(The working directory {ctx.cwd} no longer exists; ran in {cwd}.)\n"
        if sink is None:
            sink = self._sink(ctx)
        cwd_file: str | None = None
        argv = ["/bin/bash", "-c", call.command]
        kwargs = _spawn_kwargs(spawn, ctx, read_only=call.info.read_only)
        if _may_change_directory(call.command, kwargs.get("env")):
            # A sandboxed shell may not write the spill directory: it has one of its own.
            sandbox = ctx.session.sandbox
            where = sandbox.cwd_dir if spawn is not None and sandbox is not None else ""
            cwd_file = ctx.session.spill_path(ctx.tool_use_id, ".cwd", where)
            argv = ["/bin/bash", "-c", _WRAPPER, "bash", cwd_file, call.command]
        read_fd, write_fd = _output_pipe()
        try:
            # A failure to start is seen once the call is gone (``_finish``).
            process = start_child(
                ctx.session.processes,
                _argv(spawn, argv),
                stdin=subprocess.DEVNULL,
                stdout=write_fd,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                **kwargs,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            os.close(read_fd)
            _release(spawn, ctx)
            sink.close()
            return ToolOutcome(f"Could not start bash in {cwd}: {exc}", is_error=True)
        finally:
            os.close(write_fd)  # the shell has its copy: EOF once its group closes it
        return _Begun(process, read_fd, spawn, sink, cwd, note, cwd_file, anyio.current_time())

    async def _finish(self, call: _Call, ctx: ToolContext, begun: _Begun) -> ToolOutcome:
        """Read the started shell's output until it is gone (or the timeout), then the
        result."""
        process, sink, cwd, note = begun.process, begun.sink, begun.cwd, begun.note
        registry = ctx.session.processes
        timed_out = False
        try:
            # Cancelled (interrupt, discard, sibling error, shutdown): the group goes.
            async with supervised(process, registry):
                deadline = begun.started + call.timeout_ms / 1000
                timed_out = await _pump(process, begun.read_fd, sink, ctx, deadline)
                if timed_out:
                    await stop_group(process)
        finally:
            os.close(begun.read_fd)
            _release(begun.spawn, ctx)
        if process.failure is not None:
            sink.close()
            return ToolOutcome(f"Could not start bash in {cwd}: {process.failure}", is_error=True)
        out = sink.collect()  # before close: collect flushes the spill file
        sink.close()
        new_cwd = _read_cwd(begun.cwd_file) if begun.cwd_file is not None else None
        code = _exit_code(process.returncode)
        text = out.text.rstrip("\n")
        extra: dict[str, Any] = {
            "exit_code": code,
            "truncated": out.truncated,
            "output_path": out.path,
            "output_bytes": out.total_bytes,
        }
        if timed_out:
            note = f"Command timed out after {call.timeout_ms / 1000:g}s and was stopped."
            text = f"{text}\n{note}" if text else note
            return ToolOutcome(text, is_error=True, status="timed_out", **extra)
        is_error = code != 0 and not (code == 1 and call.info.exit_1_is_not_error)
        if code != 0:
            text = f"{text}\nExit code {code}" if text else f"Exit code {code}"
        if new_cwd is None and note:
            new_cwd = cwd
        update = {"cwd": new_cwd} if new_cwd and new_cwd != ctx.cwd else None
        text = note + text if note else text
        return ToolOutcome(text or "(no output)", is_error=is_error, context_update=update, **extra)

    async def _start_background(
        self, call: _Call, ctx: ToolContext, spawn: Spawn | None
    ) -> ToolOutcome:
        """A job in ``session.jobs``; the id is worded as Claude Code words it, so a model
        goes on to BashOutput/TaskOutput and KillShell/TaskStop as it learned to."""
        cwd = ctx.cwd if os.path.isdir(ctx.cwd) else ctx.session.workspace  # noqa: ASYNC240
        path = ctx.session.spill_path(ctx.tool_use_id, ".log")
        try:
            job = await ctx.session.jobs.start(
                call.command,
                cwd=cwd,
                tool_use_id=ctx.tool_use_id,
                log_path=path,
                description=call.description,
                # In the sandbox like any Bash call; its proxy listener (if any) lives until
                # the session ends.
                argv_prefix=spawn.argv_prefix if spawn is not None else (),
                **_spawn_kwargs(spawn, ctx),
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return ToolOutcome(f"Could not start bash in {cwd}: {exc}", is_error=True)
        return ToolOutcome(
            f"Command running in background with ID: {job.job_id}. Output is being written "
            f"to: {path}. Read new output with BashOutput (or TaskOutput) and stop it with "
            "KillShell (or TaskStop); it is stopped when the session ends.",
        )


def _may_change_directory(command: str, env: Mapping[str, str] | None = None) -> bool:
    """``env``: the shell's environment (None: the daemon's). A plain dict is asked
    directly: ``in os.environ`` costs ~2 us (a KeyError raised inside), on every call."""
    if "BASH_ENV" in (os.environ if env is None else env):
        # Its functions could change directory under any name.
        return True
    text = command.translate(_UNQUOTE)
    return _MAY_CHANGE_DIRECTORY.search(text) is not None


_UNQUOTE = str.maketrans("", "", "\"'\\")


class _NeedsPrepare:
    """The session's sandbox is not built yet (``Sandbox.prepare``, in a thread)."""


_NEEDS_PREPARE = _NeedsPrepare()


def _route(call: _Call, ctx: ToolContext) -> Spawn | ToolOutcome | _NeedsPrepare | None:
    """How this call runs in the session's sandbox (None: outside it: no sandbox, an
    excluded command, or dangerouslyDisableSandbox after the gate's ask); an error outcome
    when the sandbox cannot be had, never an unprotected run."""
    sandbox = ctx.session.sandbox
    if sandbox is None:
        return None
    route = sandbox.route(call.command, call.disable_sandbox)
    if route == "disabled" and not sandbox.settings.allow_unsandboxed:
        # The gate refuses this first; kept here so no other gate can skip it.
        return ToolOutcome(
            "dangerouslyDisableSandbox is refused: sandbox.allowUnsandboxedCommands is false.",
            is_error=True,
            status="denied",
        )
    if route != "sandboxed":
        return None
    if not sandbox.ready:
        return _NEEDS_PREPARE
    return sandbox.spawn()


async def _sandboxing(call: _Call, ctx: ToolContext) -> Spawn | ToolOutcome | None:
    """``_route``, with the sandbox built first (in a thread) if it is not yet."""
    spawn = _route(call, ctx)
    if isinstance(spawn, _NeedsPrepare):
        sandbox = ctx.session.sandbox
        assert sandbox is not None
        try:
            await anyio.to_thread.run_sync(sandbox.prepare)
        except OSError as exc:
            return ToolOutcome(f"Not run: {exc}", is_error=True)
        spawn = _route(call, ctx)
        assert not isinstance(spawn, _NeedsPrepare)
    return spawn


def _spawn_kwargs(
    spawn: Spawn | None, ctx: ToolContext, *, read_only: bool = False
) -> dict[str, Any]:
    # A command that runs without asking because it only reads must not let a repository's
    # config run programs through git (an embedded bare repository's core.fsmonitor ...).
    if spawn is None or ctx.session.sandbox is None:
        return {"env": harden_git(os.environ)} if read_only else {}
    env = harden_git(spawn.env) if read_only else spawn.env
    if spawn.pre_exec is None and not spawn.unshare_flags:
        return {"env": env}  # bubblewrap: all of it is in the argv prefix
    # The sandbox's plan through the spawner's seam (processes.ChildSetup): its namespaces
    # are created with the call's, its set-up runs in the call's init. (Its argv prefix is
    # added by the callers: ``_argv`` and the job registry.)
    setup = ChildSetup(
        unshare_flags=spawn.unshare_flags,
        pre_exec=spawn.pre_exec,
        pre_exec_args=spawn.pre_exec_args,
        share_key=spawn.share_key,
    )
    return {"setup": setup, "env": env}


def _argv(spawn: Spawn | None, argv: list[str]) -> list[str]:
    return [*spawn.argv_prefix, *argv] if spawn is not None else argv


def _release(spawn: Spawn | None, ctx: ToolContext) -> None:
    if spawn is not None and ctx.session.sandbox is not None:
        ctx.session.sandbox.release(spawn)


def _output_pipe() -> tuple[int, int]:
    """The shell's stdout+stderr: a pipe, read end non-blocking (``os.pipe`` fds are
    close-on-exec, so no other child holds it open); ``_Reader`` enlarges it once a
    command fills it."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    return read_fd, write_fd


def _enlarge_pipe(fd: int) -> None:
    """As large as the system allows (``_PIPE_SIZE``): a command writing fast gets fewer,
    larger reads. Growing a pipe in use keeps what is in it."""
    with contextlib.suppress(OSError, AttributeError):
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _PIPE_SIZE)


async def _pump(
    process: Child, fd: int, sink: OutputSink, ctx: ToolContext, deadline: float
) -> bool:
    """Copy the shell's output into the sink, with coalesced progress, until it is gone
    (and its output read to EOF) or the ``deadline`` (loop time) passes; True if it passed
    with the call still running (the caller stops it).

    The pipe is read by the event loop's own reader callback (``_Reader``), not by this
    task: the task sleeps on one future until the call is over, and the deadline is one
    loop timer. Per call that is one task wake-up, where a read loop awaiting
    ``wait_readable`` under a cancel scope woke at EOF and again for the exit, and set up
    a future, a reader and a scope for each wait (bench/NOTES.md section 17). A cancel
    (interrupt, discard, sibling error, shutdown) cancels the awaited future as it would
    any await; the reader is removed on every way out.
    """
    reader = _Reader(process, fd, sink, ctx, deadline)
    try:
        return await reader.done
    finally:
        reader.close()


class _Reader:
    """One call's output pipe, read on the event loop (see ``_pump``).

    Each readable event reads one chunk (up to ``_READ_SIZE``): the loop runs everything
    else between two chunks, so a command that never pauses cannot starve it. The call is
    over once the pipe reached EOF and the call is gone (the spawner's report); a pipe
    still open ``DRAIN_AFTER_EXIT_S`` after the call is gone (handed to something outside
    the call) stops being read then. Progress carries at most the newest
    ``_PROGRESS_MAX_CHARS`` bytes since the previous event, decoded only when sent (a
    command writing a gigabyte costs no text decoding), at most one event per
    ``_PROGRESS_INTERVAL_S``; the last bytes are sent at EOF.
    """

    def __init__(
        self, process: Child, fd: int, sink: OutputSink, ctx: ToolContext, deadline: float
    ) -> None:
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._process = process
        self._fd = fd
        self._sink = sink
        self._ctx = ctx
        self.done: asyncio.Future[bool] = loop.create_future()
        self._pending = bytearray()
        self._elided = 0
        self._carry = b""  # an incomplete UTF-8 sequence held back for the next event
        self._started = loop.time()
        self._next_emit = 0.0  # the first output is sent at once
        self._emit_timer: asyncio.TimerHandle | None = None
        self._drain_timer: asyncio.TimerHandle | None = None
        self._eof = False
        self._reading = True
        self._enlarged = False
        loop.add_reader(fd, self._on_readable)
        self._deadline_timer = (
            loop.call_at(deadline, self._on_deadline) if deadline != math.inf else None
        )
        process.when_gone(self._on_gone)

    def close(self) -> None:
        self._stop_reading()
        self._process.not_when_gone(self._on_gone)
        for timer in (self._emit_timer, self._drain_timer, self._deadline_timer):
            if timer is not None:
                timer.cancel()

    def _stop_reading(self) -> None:
        if self._reading:
            self._reading = False
            self._loop.remove_reader(self._fd)

    def _finish(self, timed_out: bool) -> None:
        self._stop_reading()
        if not self.done.done():
            self.done.set_result(timed_out)

    # -- loop callbacks --

    def _on_readable(self) -> None:
        try:
            chunk = os.read(self._fd, _READ_SIZE)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        try:
            if not chunk:
                self._eof = True
                self._stop_reading()
                self._emit(final=True)
                if self._process.gone:
                    self._finish(False)
                return
            if len(chunk) >= _DEFAULT_PIPE_SIZE and not self._enlarged:
                self._enlarged = True  # the pipe was full: a command that writes fast
                _enlarge_pipe(self._fd)
            self._sink.write(chunk)
            self._keep_newest(chunk)
            now = self._loop.time()
            if now >= self._next_emit:
                self._emit()
            elif self._emit_timer is None:
                self._emit_timer = self._loop.call_at(self._next_emit, self._on_emit_timer)
        except Exception as exc:  # the sink's file (a full disk): the call's error
            self._stop_reading()
            if not self.done.done():
                self.done.set_exception(exc)

    def _on_emit_timer(self) -> None:
        self._emit_timer = None
        if self._reading and (self._pending or self._elided):
            self._emit()

    def _on_gone(self) -> None:
        if self._eof:
            self._finish(False)
        elif self._drain_timer is None:
            self._drain_timer = self._loop.call_later(DRAIN_AFTER_EXIT_S, self._finish, False)

    def _on_deadline(self) -> None:
        self._deadline_timer = None
        self._finish(not self._process.gone)

    # -- progress --

    def _emit(self, final: bool = False) -> None:
        if self._pending or self._elided or (final and self._carry):
            data_bytes = self._carry + bytes(self._pending)
            cut = len(data_bytes) if final else complete_utf8(data_bytes)
            self._carry = data_bytes[cut:]
            now = self._loop.time()
            data: dict[str, Any] = {
                "kind": "bash_output",
                "text": data_bytes[:cut].decode("utf-8", "replace"),
                "total_bytes": self._sink.total,
                "elapsed_ms": round((now - self._started) * 1000),
            }
            if self._elided:
                data["elided_bytes"] = self._elided
            self._ctx.progress(data)
            self._pending = bytearray()
            self._elided = 0
        else:
            now = self._loop.time()
        self._next_emit = now + _PROGRESS_INTERVAL_S
        if self._emit_timer is not None:
            self._emit_timer.cancel()
            self._emit_timer = None

    def _keep_newest(self, chunk: bytes) -> None:
        """Add to ``pending``, keeping the newest bytes only: a chatty command must not
        flood the host."""
        pending = self._pending
        excess = len(pending) + len(chunk) - _PROGRESS_MAX_CHARS
        if excess <= 0:
            pending += chunk
            return
        buf: bytes | bytearray
        if excess < len(pending):
            pending += chunk
            cut, buf, before = excess, pending, 0
        else:  # all of ``pending`` goes: cut in the chunk without copying all of it
            cut, buf, before = excess - len(pending), chunk, len(pending)
        while cut < len(buf) and (buf[cut] & 0xC0) == 0x80:
            cut += 1  # do not start inside a multi-byte character
        self._elided += before + cut + len(self._carry)
        self._carry = b""
        self._pending = bytearray(buf[cut:])


def _exit_code(returncode: int | None) -> int | None:
    if returncode is None:
        return None
    return 128 - returncode if returncode < 0 else returncode


_CWD_OPEN = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)


def _read_cwd(path: str) -> str | None:
    """The directory the shell wrote, read without following a symlink or waiting on a
    FIFO (another sandboxed call can write the directory it is in)."""
    try:
        fd = os.open(path, _CWD_OPEN)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            raw = os.read(fd, 65536)
        finally:
            os.close(fd)
            os.unlink(path)
    except OSError:
        return None
    cwd = raw.decode("utf-8", "surrogateescape").rstrip("\n")
    return cwd if cwd and os.path.isdir(cwd) else None
