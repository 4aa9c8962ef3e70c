"""How a call is signalled when its command is pid 1 of its PID namespace (docs/sandbox.md,
"Stopping a call"), over the real daemon.

The kernel drops a signal sent to a namespace's pid 1 unless it has a handler for it, so the
spawner sends SIGTERM to the command's process group when the command handles it (a
``trap``: its handler runs), leaves one that ignores it to the SIGKILL after the grace, and
SIGKILLs one that does neither at once, before anything else is signalled, reporting it as
ended by SIGTERM (143), which is what the default action would have done. Whatever the
command did, nothing it started outlives the call.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from daemon_harness import alive, marked_processes, run_daemon, tool_use, wait_until

from stdio_executor.protocol import Drained, Progress

TIMEOUT_MS = 1500


def _survivors(mark: str, token: str) -> list[int]:
    found = []
    for pid in marked_processes(mark):
        try:
            if token.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
        except OSError:
            continue
    return found


def test_the_command_is_pid_1_of_its_namespace(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as d:
        d.send(tool_use("who", "echo $$; readlink /proc/self/ns/pid"))
        result = d.result("who")
        pid, namespace = str(result.content).split("\n")
        assert pid == "1"
        assert namespace != os.readlink("/proc/self/ns/pid")


def test_a_timeout_ends_a_pid_1_command_without_a_handler_as_sigterm_would(
    tmp_path: Path,
) -> None:
    with run_daemon(tmp_path) as d:
        # `exec`: sleep itself is pid 1, with no handler for anything.
        d.send(tool_use("plain", {"command": "echo $$; exec sleep 30", "timeout": TIMEOUT_MS}))
        result = d.result("plain", timeout=15)
        assert result.meta.status == "timed_out"
        assert str(result.content).startswith("1\n")
        assert result.meta.exit_code == 143  # SIGTERM's, not SIGKILL's 137


def test_a_pid_1_command_with_a_handler_runs_it(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as d:
        # (Output after the timeout is not read any more: the handler writes a file.)
        command = "trap 'echo got TERM > handled; exit 7' TERM; echo $$; sleep 30 & wait"
        d.send(tool_use("trapped", {"command": command, "timeout": TIMEOUT_MS}))
        result = d.result("trapped", timeout=15)
        assert result.meta.status == "timed_out"
        assert str(result.content).startswith("1\n")
        assert result.meta.exit_code == 7
        assert (tmp_path / "handled").read_text() == "got TERM\n"


def test_an_interrupt_reaches_the_foreground_job_of_a_pid_1_shell(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as d:
        # bash has a handler only for SIGCHLD, so it is SIGKILLed, and `sleep` with it
        # (the namespace ends with its pid 1).
        d.send(tool_use("fg", "cut -d' ' -f4 /proc/self/stat; sleep 30; echo after"))
        pid = d.printed_pid("fg")
        assert alive(pid)
        d.send({"type": "interrupt", "reason": "interrupt"})
        result = d.result("fg", timeout=10)
        assert result.meta.status == "interrupted"
        assert "after" not in str(result.content)
        assert wait_until(lambda: not alive(pid), timeout=5)


def test_a_setsid_grandchild_of_a_pid_1_command_that_handles_sigterm_is_gone_with_the_call(
    tmp_path: Path,
) -> None:
    """The grandchild is in a session of its own, so the group's SIGTERM misses it, and
    the command handles SIGTERM and exits cleanly: only the namespace's end kills it."""
    with run_daemon(tmp_path) as d:
        command = (
            "trap 'exit 0' TERM; setsid sleep 3101 & cut -d' ' -f4 /proc/self/stat; sleep 30 & wait"
        )
        d.send(tool_use("escape", {"command": command, "timeout": TIMEOUT_MS}))
        d.printed_pid("escape")
        assert wait_until(lambda: bool(_survivors(d.mark, "3101")), timeout=10)
        result = d.result("escape", timeout=15)
        assert result.meta.status == "timed_out"
        assert result.meta.exit_code == 0  # its handler ran
        assert wait_until(lambda: not _survivors(d.mark, "3101"), timeout=5), (
            f"outlived the call: {_survivors(d.mark, '3101')}"
        )


def test_a_python_pid_1_command_gets_sigterm_as_sigterm(tmp_path: Path) -> None:
    """Python installs no SIGTERM handler: the default action, made explicit."""
    with run_daemon(tmp_path) as d:
        script = "import os, time\nprint(os.getpid(), flush=True)\ntime.sleep(30)\n"
        (tmp_path / "wait.py").write_text(script)
        d.send(tool_use("py", {"command": "exec python3 wait.py", "timeout": TIMEOUT_MS}))
        result = d.result("py", timeout=15)
        assert result.meta.status == "timed_out"
        assert str(result.content).startswith("1\n")
        assert result.meta.exit_code == 143


def _progress_of(call: str) -> Callable[[object], bool]:
    return lambda e: isinstance(e, Progress) and e.tool_use_id == call


def _drained(request: str) -> Callable[[object], bool]:
    return lambda e: isinstance(e, Drained) and e.request_id == request


def test_an_interrupted_shell_runs_nothing_after_its_foreground_job(tmp_path: Path) -> None:
    """The shell, pid 1 with no SIGTERM handler, is SIGKILLed before anything else is
    signalled. Signalling its process group first let a foreground job that exits on
    SIGTERM (here a shell with a trap) end while the shell still lived, and the shell went
    on to its next command: a side effect after the call was reported interrupted (a
    fixture run under load left `touch marker` done). The window was microseconds wide:
    2 rounds in 30 hit it under load, few on an idle machine; the rounds are cheap."""
    rounds = 40
    with run_daemon(tmp_path) as d:
        for i in range(rounds):
            command = f"echo go; sh -c 'trap \"exit 0\" TERM; sleep 30 & wait'; : > after{i}"
            d.send(tool_use(f"r{i}", command))
            d.wait_for(_progress_of(f"r{i}"))
            d.send({"type": "interrupt", "reason": "interrupt"})
            assert d.result(f"r{i}").meta.status == "interrupted"
            d.send({"type": "drain", "request_id": f"d{i}"})  # the next call: a new turn
            d.wait_for(_drained(f"d{i}"))
    # The daemon is gone, and every namespace with it: nothing can still write.
    assert sorted(p.name for p in tmp_path.glob("after*")) == []
