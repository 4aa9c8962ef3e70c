"""What every measurement shares: processes over real pipes, same-run floors, statistics.

Owns: spawning a daemon (or a floor process) with a pipe on each side, pumping a payload in
from one thread while the main thread reads events, peak RSS from ``/proc``, the bare
msgspec echo process that is the floor for throughput and latency, and the paired
measure-then-floor loop whose medians and ratios every row reports.
Must not: decide targets or format the table (``measures`` and ``__main__`` do).
"""

from __future__ import annotations

import compileall
import contextlib
import functools
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import msgspec

__all__ = [
    "ECHO_FLOOR",
    "ENV",
    "ROOT",
    "Paired",
    "Proc",
    "Row",
    "add_line",
    "daemon",
    "daemon_args",
    "echo_floor",
    "paired",
    "percentile",
    "pump",
    "use_compiled_copy",
]

ROOT = pathlib.Path(__file__).resolve().parents[1]
# Every process the bench starts runs the package from PYTHONPATH: the checkout, or (after
# ``use_compiled_copy``) a compiled copy of it. Mutated in place, so every user sees it.
ENV = dict(os.environ, PYTHONPATH=str(ROOT))


def use_compiled_copy(directory: str) -> None:
    """Run the daemon from a copy of the package with compiled bytecode, as a wheel install
    has it (pip compiles at install time). Without it a checkout where
    ``PYTHONDONTWRITEBYTECODE`` is set (this machine) compiles every module at every start,
    and start-up and the first call would be timed with work no user's install does."""
    target = pathlib.Path(directory) / "stdio_executor"
    shutil.copytree(ROOT / "stdio_executor", target, ignore=shutil.ignore_patterns("__pycache__"))
    # py_compile writes the .pyc files whatever PYTHONDONTWRITEBYTECODE says.
    if not compileall.compile_dir(str(target), quiet=1):
        raise SystemExit("bench: compiling the package copy failed")
    ENV["PYTHONPATH"] = directory


# The floor for throughput and latency: the least a Python process can do with the same
# NDJSON over the same pipes (PERF-NOTES: read 64 KiB chunks, answer every complete line,
# write once per chunk). It says `ready` first, so its start-up is never timed.
ECHO_FLOOR = r"""
import os, msgspec
dec, enc = msgspec.json.Decoder(), msgspec.json.Encoder()
os.write(1, b'{"type":"ready"}\n')
buf = b""
while True:
    chunk = os.read(0, 65536)
    if not chunk:
        break
    buf += chunk
    *lines, buf = buf.split(b"\n")
    out = bytearray()
    for line in lines:
        if not line:
            continue
        msg = dec.decode(line)
        if msg["type"] != "add_tool":
            out += b'{"type":"drained"}\n'
            continue
        out += enc.encode({"type": "tool_result", "tool_use_id": msg["tool_use"]["id"],
                           "content": "x", "is_error": False}) + b"\n"
    os.write(1, bytes(out))
"""


@dataclass(frozen=True, slots=True)
class Row:
    name: str
    measured: str
    floor: str
    ratio: str
    target: str
    ok: bool | None  # None: informational, no target


def add_line(i: int | str, name: str, tool_input: dict[str, object]) -> bytes:
    return msgspec.json.encode(
        {
            "type": "add_tool",
            "tool_use": {"type": "tool_use", "id": f"t{i}", "name": name, "input": tool_input},
        }
    )


class Proc:
    """A process with pipes on stdin and stdout; stderr is discarded."""

    def __init__(self, argv: list[str], cwd: str) -> None:
        self.p = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=cwd,
            env=ENV,
        )
        assert self.p.stdin is not None and self.p.stdout is not None
        self.stdin = self.p.stdin
        self.stdout = self.p.stdout

    def write(self, data: bytes) -> None:
        self.stdin.write(data)
        self.stdin.flush()

    def readline(self) -> bytes:
        return self.stdout.readline()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.stdin.close()
        try:
            self.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()

    def status_mb(self, field: str) -> float:
        """A ``/proc/PID/status`` size field in MB (VmHWM: peak RSS; VmRSS: now)."""
        try:
            text = pathlib.Path(f"/proc/{self.p.pid}/status").read_text()
        except OSError:
            return float("nan")
        for line in text.splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
        return float("nan")


@functools.cache
def daemon_args() -> tuple[str, ...]:
    """Options every bench daemon gets: no permission prompts where the option exists
    (every tool the benchmarks run is read-only, so this changes nothing measured)."""
    help_text = subprocess.run(
        [sys.executable, "-m", "stdio_executor", "--help"],
        capture_output=True,
        text=True,
        env=ENV,
        check=True,
    ).stdout
    if "--permission-mode" in help_text:
        return ("--permission-mode", "bypassPermissions")
    return ()


def daemon(cwd: str, *args: str, warm: bool = True) -> Proc:
    """A daemon past ``ready``; ``warm`` runs one call of each benchmarked tool first, so
    lazy imports (the tools) are never part of a timed run."""
    proc = Proc([sys.executable, "-m", "stdio_executor", *daemon_args(), *args], cwd)
    ready = proc.readline()
    assert b'"ready"' in ready, ready
    if warm:
        warmup = [
            add_line("warm-bash", "Bash", {"command": "true"}),
            add_line("warm-read", "Read", {"file_path": os.path.join(cwd, "small.txt")}),
            add_line("warm-glob", "Glob", {"pattern": "*.txt"}),
            b'{"type":"drain"}',
        ]
        proc.write(b"\n".join(warmup) + b"\n")
        while b'"drained"' not in proc.readline():
            pass
    return proc


def echo_floor(cwd: str) -> Proc:
    proc = Proc([sys.executable, "-c", ECHO_FLOOR], cwd)
    assert b'"ready"' in proc.readline()
    return proc


def pump(proc: Proc, payload: bytes, until: bytes) -> float:
    """Write ``payload`` from a thread while reading lines until one contains ``until``.

    Returns the wall seconds from the first byte written to that line.
    """
    started = time.perf_counter()
    writer = threading.Thread(target=proc.write, args=(payload,))
    writer.start()
    while True:
        line = proc.readline()
        if not line or until in line:
            break
    elapsed = time.perf_counter() - started
    writer.join()
    return elapsed


@dataclass(frozen=True, slots=True)
class Paired:
    measured: float  # median
    floor: float  # median
    ratio: float  # median of the per-pair ratios


def paired(measured: Callable[[], float], floor: Callable[[], float], repeat: int) -> Paired:
    """Run floor and measurement alternately ``repeat`` times; medians and ratio.

    Alternating keeps a noisy neighbour's burst from landing on one side only; the ratio of
    each pair, then its median, is what stays stable on a shared machine.
    """
    ms: list[float] = []
    fs: list[float] = []
    for _ in range(repeat):
        fs.append(floor())
        ms.append(measured())
    ratios = [m / f for m, f in zip(ms, fs, strict=True)]
    return Paired(statistics.median(ms), statistics.median(fs), statistics.median(ratios))


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * pct / 100))]
