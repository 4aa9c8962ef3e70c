"""Background shells: the commands Bash started with ``run_in_background``.

Owns: the session's job registry (``JobRegistry``): starting a job contained like any call
(``processes.spawn_group``) with its merged output going to a log file in the spill
directory, a watcher per job that records its exit and tells the host (``job_exited``),
reading the output a job produced since the last read (capped like a Bash result, the log
being the spill file), waiting for a job, killing a job and everything it started
(``processes.stop_group``), and the listing the host gets with ``list_jobs``.
Must not: know the wire or the tools' wording (``tools/shells.py`` words results; the daemon
turns the registry's notices into events). A job outlives the tool call that started it but
never the daemon, and nothing it starts outlives the job (``processes``: its own PID
namespace).

Job ids are ``bash_1``, ``bash_2``... in start order: stable across replays of a fixture,
and the shape Claude Code used before 2.1 (later versions use random ids; a model takes
whatever id the Bash result gives it).
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, BinaryIO, Literal

import anyio
import msgspec

from ..processes import KILL_GRACE_S, Child, ProcessRegistry, spawn_group, stop_group
from .output import complete_utf8, create_new, decode_prefix, decode_suffix

__all__ = ["Job", "JobRegistry", "JobStatus", "NewOutput"]

JobStatus = Literal["running", "completed", "failed", "killed"]

_HEAD = 2_000  # preview bytes kept from each end of an oversized read, as OutputSink keeps
_TAIL = 2_000
_CHUNK = 256 * 1024


class Job(msgspec.Struct):
    job_id: str
    command: str
    description: str
    tool_use_id: str
    cwd: str
    log_path: str
    pid: int
    started_wall: float
    status: JobStatus = "running"
    exit_code: int | None = None
    read_offset: int = 0  # bytes of the log already given to the model
    done: anyio.Event = msgspec.field(default_factory=anyio.Event)
    killed: bool = False

    @property
    def output_bytes(self) -> int:
        try:
            return os.path.getsize(self.log_path)
        except OSError:
            return 0

    @property
    def unread_bytes(self) -> int:
        return max(0, self.output_bytes - self.read_offset)


class NewOutput(msgspec.Struct, frozen=True):
    """What one read of a job's output gives the model."""

    text: str
    truncated: bool  # over the limit: ``text`` is a head/tail preview
    total_bytes: int  # bytes this read covered (before filtering)
    shown_lines: int | None = None  # with a filter: lines that matched


StartSoon = Callable[[Callable[[], Coroutine[Any, Any, None]]], Any]


class JobRegistry:
    """Every background job of the session, running or finished."""

    def __init__(self, processes: ProcessRegistry) -> None:
        self.processes = processes
        self._jobs: dict[str, Job] = {}
        self._processes: dict[str, Child] = {}
        self._count = 0
        self._start_soon: StartSoon | None = None
        self._on_start: Callable[[Job], None] = lambda job: None
        self._on_exit: Callable[[Job], None] = lambda job: None

    def attach(
        self,
        start_soon: StartSoon,
        on_start: Callable[[Job], None],
        on_exit: Callable[[Job], None],
    ) -> None:
        """The daemon lends a task group (watchers outlive the call that started a job)
        and ways to tell the host that a job started and exited."""
        self._start_soon = start_soon
        self._on_start = on_start
        self._on_exit = on_exit

    @property
    def jobs(self) -> list[Job]:
        return list(self._jobs.values())

    def get(self, job_id: str) -> Job | None:
        return self._jobs.get(job_id)

    async def start(
        self,
        command: str,
        *,
        cwd: str,
        tool_use_id: str,
        log_path: str,
        description: str = "",
        argv_prefix: Sequence[str] = (),
        **spawn: Any,
    ) -> Job:
        """Start ``command`` in the background; ``OSError`` if bash cannot be started.
        ``argv_prefix`` and ``spawn``: what the sandbox adds (bubblewrap's command line;
        ``preexec_fn``, ``env``)."""
        # One open of a new file in the spill directory: no await needed around it.
        with create_new(log_path) as log:
            process = await spawn_group(
                self.processes,
                [*argv_prefix, "/bin/bash", "-c", command],
                stdin=subprocess.DEVNULL,
                stdout=log.fileno(),
                stderr=subprocess.STDOUT,
                cwd=cwd,
                **spawn,
            )
        self._count += 1
        job = Job(
            job_id=f"bash_{self._count}",
            command=command,
            description=description,
            tool_use_id=tool_use_id,
            cwd=cwd,
            log_path=log_path,
            pid=process.pid,
            started_wall=time.time(),
        )
        self._jobs[job.job_id] = job
        self._processes[job.job_id] = process
        self._on_start(job)
        if self._start_soon is not None:
            self._start_soon(lambda: self._watch(job, process))
        return job

    async def _watch(self, job: Job, process: Child) -> None:
        try:
            await process.wait()
        finally:
            with anyio.CancelScope(shield=True), contextlib.suppress(OSError):
                await process.aclose()
        code = process.returncode
        job.exit_code = None if code is None else (128 - code if code < 0 else code)
        if job.killed:
            job.status = "killed"
        else:
            job.status = "completed" if job.exit_code == 0 else "failed"
        job.done.set()
        self._on_exit(job)

    async def wait(self, job: Job, timeout_s: float) -> bool:
        """Wait until the job has exited, at most ``timeout_s``; whether it has."""
        with anyio.move_on_after(timeout_s):
            await job.done.wait()
        return job.done.is_set()

    async def kill(self, job: Job) -> bool:
        """Stop the job and everything it started; False if nothing was running any more."""
        process = self._processes.get(job.job_id)
        was_running = job.status == "running"
        if was_running:
            job.killed = True
        if process is not None and was_running:
            with anyio.CancelScope(shield=True):
                # Gone when this returns: the job's init and with it its whole namespace.
                await stop_group(process)
                # Let the watcher record the exit before the caller reports it.
                with anyio.move_on_after(KILL_GRACE_S):
                    await job.done.wait()
        return was_running

    def read_new(self, job: Job, limit: int, pattern: re.Pattern[str] | None) -> NewOutput:
        """The output produced since the last read, which it marks as read.

        Past ``limit`` bytes the text is a preview (head and tail) naming the log, which
        holds all of it: the same limit and the same shape as a Bash result. With
        ``pattern`` only matching lines are kept; while the job runs a line still being
        written is left for the next read so a match is never cut in two."""
        end = job.output_bytes
        start = job.read_offset
        if end <= start:
            return NewOutput("", False, 0, 0 if pattern else None)
        with open(job.log_path, "rb") as log:
            if pattern is None:
                return self._plain(job, log, start, end, limit)
            return self._filtered(job, log, start, end, limit, pattern)

    def _plain(self, job: Job, log: BinaryIO, start: int, end: int, limit: int) -> NewOutput:
        log.seek(start)
        if end - start <= limit:
            data = log.read(end - start)
            cut = len(data) if job.status != "running" else complete_utf8(data)
            job.read_offset = start + cut
            return NewOutput(data[:cut].decode("utf-8", "replace"), False, cut)
        head = log.read(_HEAD)
        log.seek(end - _TAIL)
        tail = log.read(_TAIL)
        job.read_offset = end
        note = (
            f"\n\n... [output truncated: {end - start:,} new bytes; all of the job's output is "
            f"in {job.log_path}, this read covered bytes {start:,} to {end:,}] ...\n\n"
        )
        text = decode_prefix(head) + note + decode_suffix(tail)
        return NewOutput(text, True, end - start)

    def _filtered(
        self,
        job: Job,
        log: BinaryIO,
        start: int,
        end: int,
        limit: int,
        pattern: re.Pattern[str],
    ) -> NewOutput:
        log.seek(start)
        kept: list[str] = []
        kept_bytes = 0
        tail: list[str] = []  # the newest matches once over the limit
        tail_bytes = 0
        matched = 0
        consumed = 0
        pending = b""
        remaining = end - start
        while remaining > 0:
            chunk = log.read(min(_CHUNK, remaining))
            if not chunk:
                break
            remaining -= len(chunk)
            *lines, pending = (pending + chunk).split(b"\n")
            for raw in lines:
                consumed += len(raw) + 1
                line = raw.decode("utf-8", "replace")
                if not pattern.search(line):
                    continue
                matched += 1
                size = len(raw) + 1
                if kept_bytes + size <= limit and not tail:
                    kept.append(line)
                    kept_bytes += size
                    continue
                tail.append(line)
                tail_bytes += size
                while tail_bytes > _TAIL and len(tail) > 1:
                    tail_bytes -= len(tail.pop(0).encode("utf-8", "replace")) + 1
        if pending and job.status != "running":  # the last line, with no newline
            consumed += len(pending)
            line = pending.decode("utf-8", "replace")
            if pattern.search(line):
                matched += 1
                (tail if tail else kept).append(line)
        job.read_offset = start + consumed
        if not tail:
            return NewOutput("\n".join(kept), False, consumed, matched)
        # Over the limit: the first matches up to the head size, then the newest ones.
        head: list[str] = []
        size = 0
        for line in kept:
            size += len(line.encode("utf-8", "replace")) + 1
            if size > _HEAD and head:
                break
            head.append(line)
        note = (
            f"\n\n... [filtered output truncated: {matched:,} matching lines; all of the job's "
            f"output is in {job.log_path}] ...\n\n"
        )
        return NewOutput("\n".join(head) + note + "\n".join(tail), True, consumed, matched)

    async def aclose(self) -> None:
        """Daemon exit: every job is killed (the registry's close does it for every call);
        mark what was running as killed."""
        for job in self._jobs.values():
            if job.status == "running":
                job.killed = True
