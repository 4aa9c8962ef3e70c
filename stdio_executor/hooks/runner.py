"""Running hook commands: one process group each, concurrently, bounded in time.

Owns: spawning a hook (``/bin/bash -c COMMAND`` in its own session, registered with the
daemon's process registry so the reaper knows it), feeding it its JSON on stdin, collecting
its exit status, stdout and stderr (each capped), its timeout, and stopping its whole group
when it times out or the tool call it belongs to is cancelled (the Bash tool's stop: TERM,
bounded wait, KILL, reap).
Must not: interpret what a hook said (``outcome`` does).
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
from collections.abc import Mapping, Sequence

import anyio
import anyio.abc
import msgspec

from ..processes import Child, ProcessRegistry, read_until_exit, spawn_group, stop_group, supervised
from .config import HookCommand

__all__ = ["HookRun", "run_hooks"]

log = logging.getLogger("stdio_executor")

_MAX_OUTPUT = 1024 * 1024  # per stream; the rest is read and dropped
# After the hook exits, how long to keep reading output its background children might hold.


class HookRun(msgspec.Struct, frozen=True):
    hook: HookCommand
    exit_code: int | None  # None: it did not finish (timeout, could not start)
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    error: str | None = None  # why it could not start


async def run_hooks(
    hooks: Sequence[HookCommand],
    payload: bytes,
    *,
    cwd: str,
    env: Mapping[str, str],
    processes: ProcessRegistry,
) -> list[HookRun]:
    """Run every hook at once; their results in the order given."""
    results: list[HookRun | None] = [None] * len(hooks)

    async def one(i: int, hook: HookCommand) -> None:
        results[i] = await run_hook(hook, payload, cwd=cwd, env=env, processes=processes)

    if len(hooks) == 1:
        await one(0, hooks[0])
    else:
        async with anyio.create_task_group() as tg:
            for i, hook in enumerate(hooks):
                tg.start_soon(one, i, hook)
    return [r for r in results if r is not None]


async def run_hook(
    hook: HookCommand,
    payload: bytes,
    *,
    cwd: str,
    env: Mapping[str, str],
    processes: ProcessRegistry,
) -> HookRun:
    if not os.path.isdir(cwd):  # noqa: ASYNC240 - one stat
        cwd = env.get("CLAUDE_PROJECT_DIR", "/")
    try:
        process = await spawn_group(
            processes,
            ["/bin/bash", "-c", hook.command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=dict(env),
        )
    except OSError as exc:
        return HookRun(hook, None, error=f"could not start: {exc}")
    out = _Capped()
    err = _Capped()
    # The tool call was cancelled: the hook's whole group goes (supervised).
    async with supervised(process, processes):
        with anyio.move_on_after(hook.timeout) as deadline:
            await _communicate(process, payload, out, err)
        timed_out = deadline.cancelled_caught
        if timed_out:
            await stop_group(process)
    code = process.returncode
    if code is not None and code < 0:
        code = 128 - code
    return HookRun(hook, None if timed_out else code, out.text(), err.text(), timed_out=timed_out)


class _Capped:
    def __init__(self) -> None:
        self.data = bytearray()

    def add(self, chunk: bytes) -> None:
        room = _MAX_OUTPUT - len(self.data)
        if room > 0:
            self.data += chunk[:room]

    def text(self) -> str:
        return self.data.decode("utf-8", "replace")


async def _communicate(process: Child, payload: bytes, out: _Capped, err: _Capped) -> None:
    async def feed() -> None:
        assert process.stdin is not None
        # A hook that never reads its stdin must not block us: it just loses the payload.
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            await process.stdin.send(payload)
        with contextlib.suppress(OSError):
            await process.stdin.aclose()

    async def pump(stream: anyio.abc.ByteReceiveStream | None, sink: _Capped) -> None:
        if stream is None:
            return
        with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, OSError):
            while True:
                sink.add(await stream.receive(65536))

    async def read_both() -> None:
        async with anyio.create_task_group() as inner:
            inner.start_soon(feed)
            inner.start_soon(pump, process.stdout, out)
            inner.start_soon(pump, process.stderr, err)

    await read_until_exit(process, read_both)
