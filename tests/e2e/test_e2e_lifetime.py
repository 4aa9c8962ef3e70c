"""How the daemon ends: EOF, signals, a host that stops reading, SIGKILL (SPEC section 8)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from daemon_harness import (
    REPO_ROOT,
    alive,
    group_members,
    is_type,
    marked_processes,
    run_daemon,
    tool_use,
    wait_until,
)

from stdio_executor.protocol import Drained, JobStarted, ToolResult, ToolStarted, decode_event


def test_eof_mid_work_finishes_the_turn_then_exits_zero(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as d:
        d.send(tool_use("slow", "sleep 0.5; echo slow"))
        d.send(tool_use("fast", "echo fast"))
        d.close_stdin()
        assert d.wait_exit(timeout=10) == 0
        assert [(r.tool_use_id, r.content) for r in d.of_type(ToolResult)] == [
            ("slow", "slow"),
            ("fast", "fast"),
        ]
        drained = d.events[-1]
        assert isinstance(drained, Drained) and drained.results == 2


def test_eof_with_nothing_to_do_exits_zero_at_once(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as d:
        d.close_stdin()
        assert d.wait_exit(timeout=5) == 0
        assert len(d.events) == 1  # ready only


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signal_writes_final_results_and_exits_promptly(
    tmp_path: Path, signum: signal.Signals, code: int
) -> None:
    with run_daemon(tmp_path) as d:
        d.send(tool_use("long", "cut -d' ' -f4 /proc/self/stat; sleep 30"))
        pid = d.printed_pid("long")
        members = group_members(pid)
        assert members
        d.send(tool_use("queued", "echo x > f"))
        sent = time.monotonic()
        d.proc.send_signal(signum)
        assert d.wait_exit(timeout=8) == code
        elapsed = time.monotonic() - sent
        result = d.result("long", timeout=1)
        assert result.is_error and result.meta.status == "interrupted"
        assert str(pid) in str(result.content)  # partial output kept
        queued = d.result("queued", timeout=1)
        assert queued.is_error and queued.meta.status == "rejected"
        assert elapsed < 6, f"took {elapsed:.1f}s to stop"
        assert not any(alive(p) for p in members)
        assert not marked_processes(d.mark)
        assert not (tmp_path / "f").exists()


def test_host_that_stops_reading_makes_the_daemon_exit_3_and_kill_children(
    tmp_path: Path,
) -> None:
    with run_daemon(tmp_path) as d:
        d.send(tool_use("long", "cut -d' ' -f4 /proc/self/stat; sleep 30"))
        pid = d.printed_pid("long")
        members = group_members(pid)
        assert members
        d.close_stdout()
        # The next event the daemon writes meets a closed pipe.
        d.send(tool_use("poke", "echo poke"))
        assert d.wait_exit(timeout=8) == 3
        assert wait_until(lambda: not any(alive(p) for p in members), timeout=3)
        assert wait_until(lambda: not marked_processes(d.mark), timeout=3)


def test_host_that_stops_reading_is_noticed_while_idle(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as d:
        d.send(tool_use("long", "cut -d' ' -f4 /proc/self/stat; sleep 30"))
        pid = d.printed_pid("long")
        members = group_members(pid)
        d.close_stdout()  # and send nothing more: no write will meet the closed pipe
        assert d.wait_exit(timeout=8) == 3
        assert wait_until(lambda: not any(alive(p) for p in members), timeout=3)


def test_sigkilled_daemon_leaves_no_grandchild_behind(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as d:
        d.send(tool_use("long", "cut -d' ' -f4 /proc/self/stat; sleep 30; echo done"))
        pid = d.printed_pid("long")
        assert wait_until(lambda: len(group_members(pid)) >= 2, timeout=3)
        members = group_members(pid)  # bash and the sleep it forked
        d.proc.kill()
        assert d.wait_exit(timeout=5) == -signal.SIGKILL
        assert wait_until(lambda: not group_members(pid), timeout=5), (
            f"survivors of group {pid}: {group_members(pid)}"
        )
        assert not any(alive(p) for p in members)
        assert wait_until(lambda: not marked_processes(d.mark), timeout=3)


def test_daemon_exits_when_its_parent_dies(tmp_path: Path) -> None:
    # The host is a shell that starts the daemon in the background and exits; the daemon
    # notices that its parent is gone and stops, killing what it runs.
    script = tmp_path / "host.sh"
    fifo = tmp_path / "in"
    os.mkfifo(fifo)
    out = tmp_path / "out"
    script.write_text(
        f'exec 3<>"{fifo}"\n'
        f'"{sys.executable}" -m stdio_executor --spill-dir "{tmp_path}/.spill" '
        f'<&3 >"{out}" 2>/dev/null &\n'
        "echo $!\n"
        "sleep 1\n"
    )
    mark = uuid.uuid4().hex
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), STDIO_EXECUTOR_E2E_MARK=mark)
    host = subprocess.Popen(
        ["/bin/bash", str(script)], cwd=tmp_path, env=env, stdout=subprocess.PIPE
    )
    assert host.stdout is not None
    daemon_pid = int(host.stdout.readline())
    with open(fifo, "w") as cmd:
        cmd.write(
            '{"type":"add_tool","tool_use":{"type":"tool_use","id":"s","name":"Bash",'
            '"input":{"command":"cut -d\\" \\" -f4 /proc/self/stat; sleep 30"}}}\n'
        )
    try:
        assert host.wait(timeout=5) == 0
        assert wait_until(lambda: not alive(daemon_pid), timeout=5), "daemon outlived host"
        assert wait_until(lambda: not marked_processes(mark), timeout=3)
        events = [decode_event(line) for line in out.read_bytes().splitlines()]
        assert any(isinstance(e, ToolStarted) and e.tool_use_id == "s" for e in events)
    finally:
        host.stdout.close()
        for pid in marked_processes(mark):
            os.kill(pid, signal.SIGKILL)


def test_last_line_without_newline_still_runs_at_eof(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as d:
        d.send_bytes(
            b'{"type":"add_tool","tool_use":{"type":"tool_use","id":"t","name":"Bash",'
            b'"input":{"command":"echo tail"}}}'
        )
        d.close_stdin()
        assert d.wait_exit() == 0
        assert d.result("t").content == "tail"


def test_background_command_is_stopped_when_the_daemon_exits(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as d:
        d.send(tool_use("bg", {"command": "sleep 30", "run_in_background": True}))
        result = d.result("bg")
        assert result.meta.status == "success"
        started = d.wait_for(is_type(JobStarted))
        assert isinstance(started, JobStarted) and started.job.tool_use_id == "bg"
        pid = started.job.pid
        assert alive(pid)
        d.close_stdin()
        assert d.wait_exit() == 0
        assert wait_until(lambda: not alive(pid), timeout=3)


@pytest.mark.parametrize("how", ["eof", "sigterm"])
def test_a_host_that_reads_slowly_still_gets_everything_at_exit(tmp_path: Path, how: str) -> None:
    ids = [f"big{i}" for i in range(12)]
    with run_daemon(tmp_path) as d:
        d.pause_reading()
        for tool_use_id in ids:
            d.send(tool_use(tool_use_id, "head -c 20000 /dev/zero | tr '\\0' q"))
        if how == "eof":
            d.close_stdin()
        time.sleep(1.5)  # the output fills the pipe; meanwhile every call finishes
        if how == "sigterm":
            d.proc.send_signal(signal.SIGTERM)
            time.sleep(0.3)  # the daemon is now flushing into the full pipe
        d.resume_reading()
        assert d.wait_exit(timeout=10) == (0 if how == "eof" else 143)
        results = d.of_type(ToolResult)
        assert [r.tool_use_id for r in results] == ids
        assert all(r.content == "q" * 20000 for r in results)
        if how == "eof":
            assert isinstance(d.events[-1], Drained)
