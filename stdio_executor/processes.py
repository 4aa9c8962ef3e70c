"""Child process groups: start them, stop them, and never leak them.

Owns: the registry of every process group the daemon starts (Bash commands, hooks, MCP
servers), their orderly stop (SIGTERM to the group, bounded wait, SIGKILL, reap), and the
*reaper*: a tiny watchdog process that kills every registered group when the daemon dies,
even by SIGKILL.
Must not: decide *when* to stop a process (the executor core does), or read its output.

Why a reaper and not only a parent-death signal: ``PR_SET_PDEATHSIG`` reaches the direct
child alone and is cleared on fork, so the ``sleep`` that ``bash -c 'sleep 60; echo'`` forks
would survive a killed daemon. Each child runs in its own session, so its process group
holds its whole tree; the reaper holds the list of groups and reads a pipe from the daemon.
When that pipe reaches EOF (the daemon is gone, however it died) it SIGKILLs every group
still listed. It ignores SIGINT/SIGTERM/SIGHUP so a Ctrl-C to the terminal's foreground
group cannot take it down before it has done its job.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import anyio
import anyio.abc

__all__ = [
    "KILL_GRACE_S",
    "ProcessRegistry",
    "group_alive",
    "read_until_exit",
    "spawn_group",
    "stop_group",
    "supervised",
]

# After a child exits, how long to keep reading output that its background children might
# still be writing into the shared pipes before giving up on EOF.
DRAIN_AFTER_EXIT_S = 0.1
# How long a group gets between SIGTERM and SIGKILL (and then to be reaped).
KILL_GRACE_S = float(os.environ.get("STDIO_EXECUTOR_KILL_GRACE", "1.0"))

log = logging.getLogger(__name__)

_REAPER_SOURCE = r"""
import os, signal
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
    signal.signal(s, signal.SIG_IGN)
groups, buf = set(), b""
while True:
    try:
        chunk = os.read(0, 65536)
    except InterruptedError:
        continue
    if not chunk:
        break
    buf += chunk
    *lines, buf = buf.split(b"\n")
    for line in lines:
        if line[:1] == b"+":
            groups.add(int(line[1:]))
        elif line[:1] == b"-":
            groups.discard(int(line[1:]))
for g in groups:
    try:
        os.killpg(g, signal.SIGKILL)
    except OSError:
        pass
"""


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - only if the pgid was reused by another user
        return False
    return True


class ProcessRegistry:
    """The process groups this daemon started and has not yet seen die."""

    def __init__(self) -> None:
        self._groups: set[int] = set()
        self._reaper: subprocess.Popen[bytes] | None = None
        self._reaper_fd: int | None = None

    @property
    def groups(self) -> frozenset[int]:
        return frozenset(self._groups)

    @property
    def reaper_pid(self) -> int | None:
        return self._reaper.pid if self._reaper else None

    def register(self, pgid: int) -> None:
        """Call right after spawning a child with ``start_new_session=True``."""
        self._groups.add(pgid)
        self._tell(b"+%d\n" % pgid)

    def forget(self, pgid: int) -> None:
        """The group is empty (every member reaped): its id may be reused, stop tracking."""
        if pgid in self._groups:
            self._groups.discard(pgid)
            self._tell(b"-%d\n" % pgid)

    def forget_if_empty(self, pgid: int) -> bool:
        """Forget a group whose leader exited, unless background members still run."""
        if group_alive(pgid):
            return False
        self.forget(pgid)
        return True

    def kill_all(self, sig: int = signal.SIGKILL) -> None:
        for pgid in list(self._groups):
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                self.forget(pgid)
            except OSError as exc:  # pragma: no cover - defensive
                log.warning("could not signal process group %d: %s", pgid, exc)

    def close(self) -> None:
        """Kill every group still listed and let the reaper go (normal exit)."""
        self.kill_all(signal.SIGKILL)
        self._groups.clear()
        if self._reaper_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._reaper_fd)
            self._reaper_fd = None
        if self._reaper is not None:
            try:
                self._reaper.wait(timeout=2)
            except subprocess.TimeoutExpired:  # pragma: no cover - defensive
                self._reaper.kill()
            self._reaper = None

    def _tell(self, line: bytes) -> None:
        if self._reaper_fd is None:
            self._start_reaper()
        assert self._reaper_fd is not None
        try:
            os.write(self._reaper_fd, line)
        except OSError as exc:  # pragma: no cover - the reaper died; groups are still killed by us
            log.warning("reaper is gone (%s); children are killed only on orderly exit", exc)

    def _start_reaper(self) -> None:
        # -I -S: no site, no user paths, no environment: starts in ~10 ms and cannot be
        # broken by the workspace's sitecustomize or PYTHONPATH.
        self._reaper = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _REAPER_SOURCE],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
        assert self._reaper.stdin is not None
        # Keep the raw fd: writes are tiny and must not sit in a buffer if we are SIGKILLed.
        self._reaper_fd = os.dup(self._reaper.stdin.fileno())
        self._reaper.stdin.close()


async def spawn_group(
    registry: ProcessRegistry, argv: Sequence[str], **kwargs: Any
) -> anyio.abc.Process:
    """Start a child in a session (and process group) of its own and register the group.

    Shielded: a cancel landing mid-spawn would leave a started child unregistered and never
    killed. The cancel takes effect at the caller's next await instead, inside
    ``supervised``, which stops the group.
    """
    with anyio.CancelScope(shield=True):
        process = await _open_process(list(argv), start_new_session=True, **kwargs)
        registry.register(process.pid)
    return process


async def _open_process(argv: list[str], **kwargs: Any) -> anyio.abc.Process:
    """``anyio.open_process``, which does not accept ``preexec_fn`` (the sandbox's child
    set-up); its backend passes every subprocess keyword through, so that one goes there."""
    if "preexec_fn" not in kwargs:
        return await anyio.open_process(argv, **kwargs)
    from anyio._core._eventloop import get_async_backend

    kwargs.setdefault("stdin", subprocess.PIPE)
    kwargs.setdefault("stdout", subprocess.PIPE)
    kwargs.setdefault("stderr", subprocess.PIPE)
    process: anyio.abc.Process = await get_async_backend().open_process(argv, **kwargs)
    return process


async def stop_group(process: anyio.abc.Process) -> None:
    """SIGTERM the group, wait a bounded time, SIGKILL it, reap the leader."""
    pgid = process.pid
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGTERM)
    with anyio.move_on_after(KILL_GRACE_S):
        await process.wait()
    if group_alive(pgid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
    with anyio.move_on_after(KILL_GRACE_S):
        await process.wait()


@contextlib.asynccontextmanager
async def supervised(
    process: anyio.abc.Process, registry: ProcessRegistry
) -> AsyncIterator[anyio.abc.Process]:
    """The lifetime of a spawned group: on cancellation (or any error) the whole group is
    stopped, shielded so the kill itself cannot be cancelled and bounded by the grace; at the
    end the group is forgotten once empty (background children of a finished command stay
    registered until they exit or the daemon does) and the process is closed."""
    try:
        yield process
    except BaseException:
        with anyio.CancelScope(shield=True):
            await stop_group(process)
        raise
    finally:
        registry.forget_if_empty(process.pid)
        with anyio.CancelScope(shield=True), contextlib.suppress(OSError):
            await process.aclose()


async def read_until_exit(process: anyio.abc.Process, read: Callable[[], Awaitable[None]]) -> None:
    """Run ``read`` (which reads the child's pipes to EOF) until the child has exited.

    A background job the child started (``cmd &``) inherits its pipes, so EOF may never
    come: once the child itself is gone, reading gets ``DRAIN_AFTER_EXIT_S`` more to take
    what is already in the pipe, then stops.
    """
    async with anyio.create_task_group() as tg:
        done = anyio.Event()

        async def reader() -> None:
            try:
                await read()
            finally:
                done.set()

        tg.start_soon(reader)
        await process.wait()
        with anyio.move_on_after(DRAIN_AFTER_EXIT_S):
            await done.wait()
        tg.cancel_scope.cancel("child exited; background children keep its pipes open")
