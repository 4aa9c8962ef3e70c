"""``stdio-executor pretty``: plain text over a real daemon's output when stdout is a pipe,
a live coloured view when it is a terminal (a pseudo-terminal here)."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
ENV.pop("NO_COLOR", None)
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def bash(tool_id: str, command: str) -> str:
    use = {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": command}}
    return json.dumps({"type": "add_tool", "tool_use": use})


SCRIPT = "\n".join(
    [
        bash("hello", "echo hi; sleep 0.2; echo there"),
        bash("ls", "ls"),
        "this is not json",
        bash("fails", "sleep 0.3; ls missing-file"),
        '{"type":"drain"}',
        "",
    ]
)


def run_daemon(tmp_path: Path, journal: Path | None = None) -> bytes:
    args = ["--permission-mode", "bypassPermissions"]
    if journal is not None:
        args += ["--journal", str(journal)]
    out = subprocess.run(
        [sys.executable, "-m", "stdio_executor", *args],
        input=SCRIPT.encode(),
        capture_output=True,
        cwd=tmp_path,
        env=ENV,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def pretty(stdin: bytes, *args: str) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "stdio_executor", "pretty", *args],
        input=stdin,
        capture_output=True,
        env=ENV,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.decode()


def test_plain_text_has_one_line_per_event_and_no_escape_codes(tmp_path: Path) -> None:
    events = run_daemon(tmp_path)
    text = pretty(events)
    assert "\x1b" not in text
    lines = text.splitlines()
    # One line per event, then the totals.
    assert len(lines) == len(events.splitlines()) + 1
    assert all(re.match(r"^ *\d+\.\d\ds \S", line) for line in lines), lines
    body = [line.split("s ", 1)[1] for line in lines]
    assert body[0].startswith("ready  stdio-executor ")
    assert "start  hello Bash  (turn 1)" in body
    assert "...    hello  hi" in body  # progress: the last line of output so far
    assert any(re.fullmatch(r"success hello Bash  \d+ms  hi", line) for line in body), body
    assert any(
        re.fullmatch(r"error   fails Bash  \d+ms  exit 2  ls: cannot access .*", line)
        for line in body
    ), body
    assert any(line.startswith("error  invalid_json line 3: ") for line in body)
    assert "drained turn 1: 3 results (2 success, 1 error)" in body
    assert body[-1] == "total  1 error, 2 success"


def test_a_journal_adds_each_calls_input(tmp_path: Path) -> None:
    journal = tmp_path / "run.journal"
    run_daemon(tmp_path, journal)
    body = [line.split("s ", 1)[1] for line in pretty(journal.read_bytes()).splitlines()]
    assert "start  hello Bash  echo hi; sleep 0.2; echo there  (turn 1)" in body
    assert any(line.startswith("error   fails Bash  sleep 0.3; ls missing-file") for line in body)


PERMISSION = {
    "type": "permission_request",
    "request_id": "perm_1",
    "tool_use_id": "w",
    "name": "Bash",
    "input": {"command": "touch notes.txt"},
    "reason": "default mode: the command is not read-only",
    "turn": 1,
    "siblings": [],
}


def test_a_permission_request_stands_out_in_plain_text() -> None:
    text = pretty((json.dumps(PERMISSION) + "\n").encode())
    (line,) = text.splitlines()
    assert line.split("s ", 1)[1] == (
        " PERMISSION  w Bash  touch notes.txt  default mode: the command is not read-only"
        "  (request perm_1)"
    )


HOSTILE = "hi \x1b]0;PWNED\x07 \x1b]52;c;cm0gLXJmIH4=\x07 \x9b2J \x1b[2J \u202eevil \x7f\x00"
SHOWN = "hi \\x1b]0;PWNED\\x07 \\x1b]52;c;cm0gLXJmIH4=\\x07 \\x9b2J \\x1b[2J \\u202eevil \\x7f\\x00"
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def hostile_events() -> list[dict[str, object]]:
    """What a tool can print (a file the model read): escapes that retitle the terminal,
    write its clipboard (OSC 52), clear it, and a bidi override."""
    return [
        {"type": "tool_started", "tool_use_id": "t\x1b[2J", "name": "Bash", "turn": 1},
        {"type": "progress", "tool_use_id": "t\x1b[2J", "data": {"text": HOSTILE + "\n"}},
        {
            "type": "tool_result",
            "tool_use_id": "t\x1b[2J",
            "content": HOSTILE,
            "is_error": False,
            "meta": {"status": "success", "turn": 1, "duration_ms": 5.0},
        },
        {**PERMISSION, "reason": HOSTILE, "input": {"command": HOSTILE}},
    ]


def test_plain_text_shows_control_characters_instead_of_sending_them() -> None:
    text = pretty(b"".join(json.dumps(e).encode() + b"\n" for e in hostile_events()))
    assert not CONTROLS.search(text), repr(text)
    assert SHOWN in text
    assert "t\\x1b[2J" in text


# -------------------------------------------------------------------------- live view (pty)


class Terminal:
    """``stdio-executor pretty`` with stdout on a pseudo-terminal and stdin on a pipe."""

    def __init__(self) -> None:
        master, slave = pty.openpty()
        env = {**ENV, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "30"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "stdio_executor", "pretty"],
            stdin=subprocess.PIPE,
            stdout=slave,
            stderr=slave,
            env=env,
        )
        os.close(slave)
        self.master = master
        self.raw = b""

    def send(self, *events: dict[str, object]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"".join(json.dumps(e).encode() + b"\n" for e in events))
        self.proc.stdin.flush()

    @property
    def text(self) -> str:
        return ANSI.sub("", self.raw.decode("utf-8", "replace"))

    def wait_for(self, done: Callable[[str], bool], timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while not done(self.text):
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out; the screen so far:\n{self.text}")
            ready, _, _ = select.select([self.master], [], [], min(left, 0.2))
            if ready:
                try:
                    self.raw += os.read(self.master, 65536)
                except OSError:  # EIO: the child closed the terminal
                    if self.proc.poll() is not None:
                        raise AssertionError(f"exited; the screen:\n{self.text}") from None

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                self.raw += chunk
            elif self.proc.poll() is not None:
                break
        code = self.proc.wait(timeout=10)
        os.close(self.master)
        return code


@pytest.fixture
def terminal() -> Iterator[Terminal]:
    term = Terminal()
    yield term
    if term.proc.poll() is None:
        term.proc.kill()
        term.proc.wait(timeout=10)


def test_the_live_view_shows_running_tools_with_elapsed_time_and_colours(
    terminal: Terminal,
) -> None:
    terminal.send(
        {"type": "tool_started", "tool_use_id": "slow", "name": "Bash", "turn": 1},
        {
            "type": "progress",
            "tool_use_id": "slow",
            "data": {"kind": "bash_output", "text": "step 1\n", "total_bytes": 7, "elapsed_ms": 1},
        },
    )
    # The running line: spinner, id, tool, elapsed seconds (redrawn as time passes), progress.
    running = re.compile(r"slow +Bash +(\d+\.\d)s +1 update, 7 B +step 1")
    terminal.wait_for(lambda text: any(float(m) >= 0.3 for m in running.findall(text)))
    terminal.send(PERMISSION)
    terminal.wait_for(lambda text: "waiting for permission (perm_1)" in text)
    terminal.send(
        {
            "type": "tool_result",
            "tool_use_id": "slow",
            "content": "step 1",
            "is_error": False,
            "meta": {"status": "success", "turn": 1, "duration_ms": 420.0},
        },
        {
            "type": "tool_result",
            "tool_use_id": "w",
            "content": "<tool_use_error>Permission denied</tool_use_error>",
            "is_error": True,
            "meta": {"status": "denied", "turn": 1, "duration_ms": 3.0},
        },
    )
    assert terminal.close() == 0
    raw = terminal.raw.decode("utf-8", "replace")
    text = terminal.text
    assert "success slow Bash  420ms  step 1" in text
    assert "denied  w Bash  touch notes.txt  3ms" in text
    assert "total  1 denied, 1 success" in text
    # Colours: success green, denied red, the permission request black on yellow.
    assert re.search(r"\x1b\[[0-9;]*32m(\x1b\[[0-9;]*m)*success", raw), raw
    assert re.search(r"\x1b\[[0-9;]*31m(\x1b\[[0-9;]*m)*denied", raw), raw
    assert re.search(r"\x1b\[[0-9;]*43m(\x1b\[[0-9;]*m)* PERMISSION ", raw), raw
    # Progress is in the running line, not printed for good as in plain text.
    assert "...    slow" not in text


def test_the_live_view_never_sends_a_tools_escape_sequences(terminal: Terminal) -> None:
    events = hostile_events()
    terminal.send(*events[:2])
    terminal.wait_for(lambda text: "PWNED" in text)
    terminal.send(*events[2:])
    assert terminal.close() == 0
    # rich styles with its own CSI sequences; none of the tool's got through.
    for sent in (b"\x1b]0;PWNED", b"\x1b]52;", b"\xc2\x9b", b"\x07", "\u202e".encode()):
        assert sent not in terminal.raw
    assert "\\x1b]0;PWNED\\x07" in terminal.text
