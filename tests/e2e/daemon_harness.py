"""A synchronous harness that runs the real daemon over real pipes.

Owns: spawning ``python -m stdio_executor`` in a scratch workspace, a reader thread that
parses every stdout line as a protocol event (any line that does not parse fails the test),
bounded helpers to send commands and wait for events, and a teardown that kills the daemon
and checks that no process it started outlives it.
Must not: interpret the protocol beyond decoding it; the tests say what they expect.

Every process the daemon starts inherits a per-daemon marker in its environment, so a leak
check can find grandchildren that changed their process group, working directory or parent.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from stdio_executor.protocol import (
    Drained,
    Event,
    Progress,
    Ready,
    ToolResult,
    ToolStarted,
    decode_event,
)

__all__ = [
    "REPO_ROOT",
    "DaemonProcess",
    "alive",
    "group_members",
    "is_progress",
    "is_result",
    "is_started",
    "is_type",
    "marked_processes",
    "rss_kib",
    "run_daemon",
    "tool_use",
    "wait_until",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
_MARKER = "STDIO_EXECUTOR_E2E_MARK"
DEFAULT_TIMEOUT = 10.0

_json = msgspec.json.Encoder()


def tool_use(tool_use_id: str, command_or_input: str | dict[str, Any], name: str = "Bash") -> Any:
    """An ``add_tool`` command; a string is a Bash command."""
    raw = (
        {"command": command_or_input}
        if isinstance(command_or_input, str)
        else dict(command_or_input)
    )
    return {
        "type": "add_tool",
        "tool_use": {"type": "tool_use", "id": tool_use_id, "name": name, "input": raw},
    }


def is_result(tool_use_id: str) -> Callable[[Event], bool]:
    return lambda e: isinstance(e, ToolResult) and e.tool_use_id == tool_use_id


def is_started(tool_use_id: str) -> Callable[[Event], bool]:
    return lambda e: isinstance(e, ToolStarted) and e.tool_use_id == tool_use_id


def is_progress(tool_use_id: str) -> Callable[[Event], bool]:
    return lambda e: isinstance(e, Progress) and e.tool_use_id == tool_use_id


def is_type(kind: type[Any]) -> Callable[[Event], bool]:
    return lambda e: isinstance(e, kind)


# --------------------------------------------------------------------------- /proc


def _stat_fields(pid: int) -> list[str] | None:
    """Fields of /proc/PID/stat after the command name (state is [0], pgrp is [2])."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    return data[data.rindex(b")") + 2 :].decode().split()


def alive(pid: int) -> bool:
    """Whether the process exists and is not a zombie (an unreaped orphan is dead to us)."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def _pids() -> Iterator[int]:
    for name in os.listdir("/proc"):
        if name.isdigit():
            yield int(name)


def group_members(pgid: int) -> list[int]:
    """Live processes whose process group is ``pgid``."""
    members = []
    for pid in _pids():
        fields = _stat_fields(pid)
        if fields is not None and fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
            members.append(pid)
    return members


def marked_processes(mark: str) -> list[int]:
    """Live processes that inherited this marker in their environment."""
    needle = f"{_MARKER}={mark}".encode()
    found = []
    for pid in _pids():
        if pid == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if needle in env and alive(pid):
            found.append(pid)
    return found


def wait_until(check: Callable[[], bool], timeout: float, interval: float = 0.05) -> bool:
    """Poll ``check`` until it is true or ``timeout`` passes; the last answer is returned."""
    deadline = time.monotonic() + timeout
    while True:
        if check():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def rss_kib(pid: int, field: str = "VmRSS") -> int:
    """Resident memory in KiB; ``VmHWM`` is the peak, which a freed buffer cannot hide."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {field} for {pid}")


# --------------------------------------------------------------------------- the daemon


class DaemonProcess:
    """One running daemon. Events are kept in arrival order in ``events``."""

    def __init__(self, workspace: Path, args: list[str]) -> None:
        self.workspace = workspace
        self.mark = uuid.uuid4().hex
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [str(REPO_ROOT), *filter(None, [env.get("PYTHONPATH")])]
        )
        env[_MARKER] = self.mark
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "stdio_executor", *args],
            cwd=workspace,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert self.proc.stdin and self.proc.stdout and self.proc.stderr
        self._stdin_fd: int | None = self.proc.stdin.fileno()
        os.set_blocking(self._stdin_fd, False)
        self.pid = self.proc.pid
        self.events: list[Event] = []
        self.raw = bytearray()  # every byte the daemon wrote to stdout
        self.bad_lines: list[tuple[bytes, str]] = []
        self.stderr = bytearray()
        self._cond = threading.Condition()
        self._eof = False
        self._stop_r, self._stop_w = os.pipe()
        self._reading = threading.Event()
        self._reading.set()
        self._reader = threading.Thread(target=self._read_stdout, daemon=True)
        self._reader.start()
        self._err_reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._err_reader.start()

    # ------------------------------------------------------------------ reading

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        buf = b""
        while True:
            while not self._reading.wait(0.05):
                if select.select([self._stop_r], [], [], 0)[0]:
                    break
            ready, _, _ = select.select([fd, self._stop_r], [], [])
            if self._stop_r in ready:
                break
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            buf += chunk
            *lines, buf = buf.split(b"\n")
            with self._cond:
                self.raw += chunk
                for line in lines:
                    self._take(line)
                self._cond.notify_all()
        with self._cond:
            if buf:
                self.bad_lines.append((buf, "stdout ended inside a line (no \\n)"))
            self._eof = True
            self._cond.notify_all()

    def _take(self, line: bytes) -> None:
        try:
            event = decode_event(line)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            self.bad_lines.append((line, str(exc)))
            return
        self.events.append(event)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        fd = self.proc.stderr.fileno()
        while chunk := os.read(fd, 65536):
            self.stderr += chunk

    def pause_reading(self) -> None:
        """Play a slow host: stop taking the daemon's output until ``resume_reading``."""
        self._reading.clear()

    def resume_reading(self) -> None:
        self._reading.set()

    def close_stdout(self) -> None:
        """Play a host that stops reading: close our read end of the daemon's stdout."""
        os.write(self._stop_w, b"x")
        self._reader.join(timeout=5)
        assert not self._reader.is_alive()
        assert self.proc.stdout is not None
        self.proc.stdout.close()

    # ------------------------------------------------------------------ writing

    def send(self, obj: Any, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Write one command as a JSON line (bytes are written as they are)."""
        data = obj if isinstance(obj, bytes) else _json.encode(obj) + b"\n"
        self.send_bytes(data, timeout)

    def send_bytes(self, data: bytes, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Write bytes as they are, failing if the daemon does not take them in time."""
        assert self._stdin_fd is not None, "stdin is closed"
        view = memoryview(data)
        deadline = time.monotonic() + timeout
        while view:
            left = deadline - time.monotonic()
            assert left > 0, f"daemon did not read {len(view)} more bytes in {timeout}s"
            _, writable, _ = select.select([], [self._stdin_fd], [], left)
            if writable:
                try:
                    written = os.write(self._stdin_fd, view)
                except BlockingIOError:
                    continue
                view = view[written:]

    def close_stdin(self) -> None:
        if self._stdin_fd is not None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self._stdin_fd = None

    # ------------------------------------------------------------------ waiting

    def wait_for(self, pred: Callable[[Event], bool], timeout: float = DEFAULT_TIMEOUT) -> Event:
        """The first event so far (or to come) that matches ``pred``."""
        deadline = time.monotonic() + timeout
        with self._cond:
            seen = 0
            while True:
                self._check_lines()
                for event in self.events[seen:]:
                    if pred(event):
                        return event
                seen = len(self.events)
                left = deadline - time.monotonic()
                if self._eof or left <= 0:
                    why = "stdout closed" if self._eof else f"{timeout}s passed"
                    raise AssertionError(
                        f"no matching event ({why}); events so far:\n{self._dump()}"
                    )
                self._cond.wait(left)

    def result(self, tool_use_id: str, timeout: float = DEFAULT_TIMEOUT) -> ToolResult:
        event = self.wait_for(
            lambda e: isinstance(e, ToolResult) and e.tool_use_id == tool_use_id, timeout
        )
        assert isinstance(event, ToolResult)
        return event

    def each_in_its_turn(
        self, commands: list[str], back_to: Path | None = None
    ) -> list[ToolResult]:
        """Each Bash command in a turn of its own (a denied call cancels the rest of its
        turn), and, with ``back_to``, a ``cd`` there after each (``cd`` persists)."""
        results = []
        for i, command in enumerate(commands):
            self.send(tool_use(f"each{i}", command))
            results.append(self.result(f"each{i}"))
            self.send({"type": "drain"})
            self.wait_for(lambda e: isinstance(e, Drained))
            if back_to is not None:
                self.send(tool_use(f"back{i}", f"cd {back_to}"))
                self.result(f"back{i}")
        return results

    def of_type(self, kind: type[Any]) -> list[Any]:
        with self._cond:
            self._check_lines()
            return [e for e in self.events if isinstance(e, kind)]

    def started(self, tool_use_id: str, timeout: float = DEFAULT_TIMEOUT) -> ToolStarted:
        event = self.wait_for(
            lambda e: isinstance(e, ToolStarted) and e.tool_use_id == tool_use_id, timeout
        )
        assert isinstance(event, ToolStarted)
        return event

    def printed_pid(self, tool_use_id: str, timeout: float = DEFAULT_TIMEOUT) -> int:
        """The pid a command printed on its first line, from progress. Commands print it
        with ``cut -d' ' -f4 /proc/self/stat``, not ``echo $$``: a call runs in a PID
        namespace of its own, where ``$$`` is its pid there, not the one we can see."""

        def first_line_done(event: Event) -> bool:
            return "\n" in self.output_of(tool_use_id)

        self.wait_for(first_line_done, timeout)
        return int(self.output_of(tool_use_id).split("\n", 1)[0])

    def output_of(self, tool_use_id: str) -> str:
        """The text streamed so far as ``progress`` of one tool."""
        with self._cond:
            return "".join(
                str(e.data.get("text", ""))
                for e in self.events
                if isinstance(e, Progress) and e.tool_use_id == tool_use_id
            )

    def index(self, pred: Callable[[Event], bool]) -> int:
        """Position of the first matching event received so far (fails if none)."""
        with self._cond:
            for i, event in enumerate(self.events):
                if pred(event):
                    return i
        raise AssertionError(f"no such event; events so far:\n{self._dump()}")

    def ready(self, timeout: float = DEFAULT_TIMEOUT) -> Ready:
        event = self.wait_for(lambda e: isinstance(e, Ready), timeout)
        assert isinstance(event, Ready)
        return event

    def wait_exit(self, timeout: float = DEFAULT_TIMEOUT) -> int:
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"daemon still running after {timeout}s; stderr:\n{self.stderr.decode()}"
            ) from None
        # Let the reader see the last bytes before a test looks at them.
        self._reader.join(timeout=5)
        with self._cond:
            self._check_lines()
        return code

    def _check_lines(self) -> None:
        if self.bad_lines:
            line, why = self.bad_lines[0]
            raise AssertionError(f"stdout line is not a protocol event ({why}): {line[:300]!r}")

    def _dump(self) -> str:
        lines = [repr(e)[:300] for e in self.events[-30:]]
        return "\n".join(lines) + f"\nstderr:\n{self.stderr.decode(errors='replace')[-2000:]}"

    # ------------------------------------------------------------------ teardown

    def teardown(self, check_leaks: bool) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)
        self._reader.join(timeout=5)
        with contextlib.suppress(OSError):
            os.write(self._stop_w, b"x")
        self._reader.join(timeout=5)
        self._err_reader.join(timeout=5)
        self.close_stdin()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        os.close(self._stop_r)
        os.close(self._stop_w)
        # The reaper notices the daemon's death by EOF; give it and the groups it kills time.
        wait_until(lambda: not marked_processes(self.mark), timeout=5)
        leaked = marked_processes(self.mark)
        for pid in leaked:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if check_leaks:
            assert not leaked, f"processes outlived the daemon: {leaked}"
            assert not self.bad_lines, f"non-protocol stdout lines: {self.bad_lines[:3]}"


@contextlib.contextmanager
def run_daemon(
    workspace: Path, *args: str, spill_dir: Path | None = None
) -> Iterator[DaemonProcess]:
    """Start a daemon in ``workspace`` and wait for ``ready``; always torn down.

    Spilled output goes under ``workspace`` unless ``--spill-dir`` is given, so tests leave
    nothing in the system temp dir. Unless the test picks its own ``--permission-mode`` or
    ``--settings``, the daemon runs in ``bypassPermissions``: tests that are not about
    permissions must not wait for a ``permission_response``.
    """
    argv = list(args)
    if not {"--permission-mode", "--settings"} & set(argv):
        argv += ["--permission-mode", "bypassPermissions"]
    if "--spill-dir" not in argv:
        argv += ["--spill-dir", str(spill_dir or workspace / ".spill")]
    daemon = DaemonProcess(workspace, argv)
    ok = False
    try:
        daemon.ready()
        yield daemon
        ok = True
    finally:
        daemon.teardown(check_leaks=ok)
