"""The Bash tool end to end: large output, progress coalescing, timeout (SPEC section 5)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from daemon_harness import group_members, is_type, run_daemon, tool_use, wait_until

from stdio_executor.protocol import Drained, Progress, ToolResult


def test_large_output_is_spilled_to_a_file_with_a_preview(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as d:
        d.send(tool_use("big", "head -c 200000 /dev/zero | tr '\\0' a"))
        result = d.result("big")
        assert result.meta.status == "success"
        assert result.meta.truncated is True
        assert result.meta.output_bytes == 200_000
        path = result.meta.output_path
        assert path is not None and os.path.isfile(path)
        assert Path(path).read_bytes() == b"a" * 200_000
        assert isinstance(result.content, str)
        assert "output truncated" in result.content and path in result.content
        assert len(result.content) < 10_000
        assert result.content.startswith("a" * 100) and result.content.endswith("a" * 100)


def test_chatty_output_is_coalesced_into_few_progress_events(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as d:
        d.send(tool_use("chat", "for i in $(seq 1 2000); do echo line $i; done"))
        result = d.result("chat")
        assert result.meta.status == "success" and result.meta.truncated is False
        assert result.content == "\n".join(f"line {i}" for i in range(1, 2001))
        progress = [p for p in d.of_type(Progress) if p.tool_use_id == "chat"]
        assert 1 <= len(progress) < 100
        # Whatever was shown or elided, the stream ends on the last line.
        assert d.output_of("chat").endswith("line 2000\n")


def test_output_held_back_for_coalescing_is_sent_while_the_command_still_runs(
    tmp_path: Path,
) -> None:
    # "a" goes out at once; "b", 50 ms later, falls inside the coalescing interval and
    # waits for its timer. The command then waits for a file the test creates only once
    # "b" was shown: output held back until EOF (a lost timer) would never arrive.
    go = tmp_path / "go"
    command = f"printf a; sleep 0.05; printf b; while [ ! -e {go} ]; do sleep 0.02; done; printf c"
    with run_daemon(tmp_path) as d:
        d.send(tool_use("held", command))
        d.wait_for(lambda _: "b" in d.output_of("held"), timeout=10)
        assert d.of_type(ToolResult) == []  # still running: "b" came from the timer
        go.touch()
        result = d.result("held")
        assert result.content == "abc"
        assert d.output_of("held") == "abc"


def test_timeout_stops_the_command_keeps_partial_output_and_cancels_siblings(
    tmp_path: Path,
) -> None:
    with run_daemon(tmp_path) as d:
        d.send(tool_use("sibling", "cut -d' ' -f4 /proc/self/stat; sleep 10"))
        sibling_pid = d.printed_pid("sibling")
        sent = time.monotonic()
        d.send(
            tool_use(
                "t",
                {
                    "command": "echo start; cut -d' ' -f4 /proc/self/stat; sleep 10",
                    "timeout": 500,
                },
            )
        )
        result = d.result("t", timeout=8)
        elapsed = time.monotonic() - sent
        assert result.is_error and result.meta.status == "timed_out"
        assert isinstance(result.content, str)
        assert result.content.startswith("start\n")
        assert "timed out" in result.content
        assert elapsed < 4, f"took {elapsed:.1f}s"
        pid = int(result.content.split("\n")[1])
        assert not group_members(pid)

        # A timeout is a Bash error: the sibling still running is cancelled.
        sibling = d.result("sibling")
        assert sibling.meta.status == "sibling_cancelled"
        failed = "echo start; cut -d' ' -f4 /proc/self/stat; sleep 10"
        assert sibling.content == (
            "<tool_use_error>Cancelled: parallel tool call "
            f"Bash({failed[:40]}\u2026) errored</tool_use_error>"
        )
        assert wait_until(lambda: not group_members(sibling_pid), timeout=3)
        d.send({"type": "drain"})
        drained = d.wait_for(is_type(Drained))
        assert isinstance(drained, Drained)
        assert drained.by_status == {"timed_out": 1, "sibling_cancelled": 1}


def test_interrupted_command_keeps_its_spilled_partial_output(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as d:
        d.send(
            tool_use(
                "big",
                "cut -d' ' -f4 /proc/self/stat; sleep 0.3; "
                "head -c 100000 /dev/zero | tr '\\0' b; echo; sleep 30",
            )
        )
        pid = d.printed_pid("big")
        d.wait_for(lambda e: isinstance(e, Progress) and e.data.get("total_bytes", 0) > 100_000)
        d.send({"type": "interrupt", "reason": "interrupt"})
        result = d.result("big", timeout=5)
        assert result.meta.status == "interrupted"
        assert result.meta.truncated is True
        path = result.meta.output_path
        assert path is not None
        assert result.meta.output_bytes is not None and result.meta.output_bytes > 100_000
        assert Path(path).read_bytes().count(b"b") == 100_000
        assert isinstance(result.content, str) and "Output before it stopped" in result.content
        assert path in result.content
        assert not group_members(pid)
        # The spill file was closed, not leaked: the daemon holds no descriptor on it.
        fds = os.listdir(f"/proc/{d.pid}/fd")
        held = {os.readlink(f"/proc/{d.pid}/fd/{fd}") for fd in fds if fd.isdigit()}
        assert path not in held


def test_a_flood_of_multibyte_output_is_accounted_for_byte_by_byte(tmp_path: Path) -> None:
    # Chunks of up to a megabyte: progress keeps only the newest bytes, never splits a
    # character, and what it shows plus what it elided is every byte the command wrote.
    with run_daemon(tmp_path) as d:
        d.send(tool_use("flood", "head -c 3000000 /dev/zero | tr '\\0' 'x' | sed 's/x/é/g'; echo"))
        result = d.result("flood", timeout=30)
        assert result.meta.status == "success" and result.meta.truncated is True
        assert result.meta.output_bytes == 6_000_001
        progress = [p for p in d.of_type(Progress) if p.tool_use_id == "flood"]
        shown = sum(len(str(p.data["text"]).encode()) for p in progress)
        elided = sum(int(p.data.get("elided_bytes", 0)) for p in progress)
        assert shown + elided == 6_000_001
        assert "\ufffd" not in d.output_of("flood")
        assert d.output_of("flood").endswith("é\n")
