"""MCP servers' tools through the real daemon, with a real server written with the ``mcp`` SDK.

The server (``SERVER`` below, written to a temp dir and started by the daemon from an
``.mcp.json``) has a read-only tool that reports progress, a side-effecting tool, a slow tool
that notes its own cancellation, a failing tool, one that returns an image, and one that
kills the server mid-call.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from external_harness import (
    DaemonProcess,
    alive,
    drain,
    is_progress,
    is_result,
    is_started,
    marked_processes,
    permission_args,
    run_daemon,
    tool_use,
    wait_until,
)

from stdio_executor.protocol import ErrorEvent, Progress, ToolsChanged

# Server start-up is slow (the SDK takes 1-3 s to import); every wait allows for that.
SLOW = 40.0

SERVER = '''
import os
import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp_types import ToolAnnotations

app = MCPServer("demo")
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


@app.tool(annotations=ToolAnnotations(readOnlyHint=True))
async def lookup(key: str, ctx: Context) -> str:
    """Look a key up."""
    await ctx.report_progress(1, 2, "halfway")
    await anyio.sleep(0.3)
    return f"value of {key}"


@app.tool()
def write_note(text: str) -> str:
    """Append a note to notes.txt."""
    with open("notes.txt", "a") as f:
        f.write(text + "\\n")
    return "saved"


@app.tool(annotations=ToolAnnotations(readOnlyHint=True))
async def slow(ctx: Context) -> str:
    """Wait a long time."""
    await ctx.report_progress(0, None, "started")
    try:
        await anyio.sleep(30)
    except BaseException:
        with open("cancelled.txt", "w") as f:
            f.write("cancelled")
        raise
    return "finished"


@app.tool()
def fail() -> str:
    """Always fails."""
    raise ToolError("it broke")


@app.tool()
def picture() -> list:
    """A caption and an image."""
    return ["a red dot", Image(data=PIXEL, format="png")]


@app.tool()
def crash() -> str:
    """Kills the server."""
    os._exit(3)


if __name__ == "__main__":
    app.run("stdio")
'''


@contextmanager
def mcp_daemon(tmp_path: Path, servers: dict[str, Any]) -> Iterator[DaemonProcess]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "server.py").write_text(SERVER)
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    with run_daemon(workspace, "--mcp-config", str(config), *permission_args()) as daemon:
        yield daemon


def demo_server(tmp_path: Path) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(tmp_path / "server.py")]}


def announced(daemon: DaemonProcess) -> ToolsChanged:
    event = daemon.wait_for(lambda e: isinstance(e, ToolsChanged), timeout=SLOW)
    assert isinstance(event, ToolsChanged)
    return event


def test_server_tools_are_announced_and_work_by_name(tmp_path: Path) -> None:
    with mcp_daemon(tmp_path, {"demo": demo_server(tmp_path)}) as daemon:
        assert not [t for t in daemon.ready().tools if t.name.startswith("mcp__")]
        changed = announced(daemon)
        names = {f"mcp__demo__{n}" for n in ("lookup", "write_note", "slow", "fail", "crash")}
        assert names <= set(changed.added)
        info = changed.tool_info
        assert info["mcp__demo__lookup"].read_only == "always"
        assert info["mcp__demo__write_note"].read_only == "never"
        assert info["mcp__demo__lookup"].source == "mcp"
        lookup = next(t for t in changed.tools if t.name == "mcp__demo__lookup")
        assert lookup.input_schema["required"] == ["key"]

        # Two read-only calls run together; the side-effecting one waits for both.
        daemon.send(tool_use("l1", {"key": "a"}, name="mcp__demo__lookup"))
        daemon.send(tool_use("l2", {"key": "b"}, name="mcp__demo__lookup"))
        daemon.send(tool_use("w", {"text": "hello"}, name="mcp__demo__write_note"))
        daemon.send(tool_use("f", {}, name="mcp__demo__fail"))
        daemon.send(tool_use("p", {}, name="mcp__demo__picture"))
        daemon.send(tool_use("bad", {"key": 5}, name="mcp__demo__lookup"))
        daemon.send(tool_use("none", {}, name="mcp__demo__nope"))
        assert daemon.result("l1", SLOW).content == "value of a"
        assert daemon.result("l2").content == "value of b"
        assert daemon.index(is_started("l2")) < daemon.index(is_result("l1"))
        assert daemon.index(is_result("l2")) < daemon.index(is_started("w"))
        progress = daemon.wait_for(is_progress("l1"))
        assert isinstance(progress, Progress)
        assert progress.data == {
            "kind": "mcp_progress",
            "progress": 1.0,
            "total": 2.0,
            "message": "halfway",
        }

        assert daemon.result("w").content == "saved"
        assert (daemon.workspace / "notes.txt").read_text() == "hello\n"
        failed = daemon.result("f")
        assert failed.is_error and failed.meta.status == "error"
        assert "it broke" in str(failed.content)
        picture = daemon.result("p")
        assert not picture.is_error
        assert isinstance(picture.content, list)
        assert picture.content[0] == {"type": "text", "text": "a red dot"}
        assert picture.content[1]["type"] == "image"
        assert picture.content[1]["source"]["media_type"] == "image/png"
        invalid = daemon.result("bad")
        assert invalid.meta.status == "invalid_input"
        assert "The parameter `key` type is expected as `string` but provided as `number`" in str(
            invalid.content
        )
        assert daemon.result("none").meta.status == "unknown_tool"
        drain(daemon, "d1")
        assert not daemon.of_type(ErrorEvent)

        daemon.close_stdin()
        assert daemon.wait_exit(SLOW) == 0


def test_cancellation_timeout_and_a_crash_mid_call_then_a_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_TOOL_TIMEOUT", "1500")  # ms, Claude Code's variable
    with mcp_daemon(tmp_path, {"demo": demo_server(tmp_path)}) as daemon:
        # Called before the server is up: the call waits for it instead of failing.
        daemon.send(tool_use("s", {}, name="mcp__demo__slow"))
        daemon.wait_for(is_progress("s"), timeout=SLOW)
        daemon.send({"type": "interrupt", "reason": "abort"})
        result = daemon.result("s")
        assert result.meta.status == "interrupted"
        cancelled = daemon.workspace / "cancelled.txt"
        assert wait_until(cancelled.exists, 10), "the server never saw notifications/cancelled"
        drain(daemon, "d1")
        cancelled.unlink()

        daemon.send(tool_use("hang", {}, name="mcp__demo__slow"))  # a server that hangs
        hung = daemon.result("hang", SLOW)
        assert hung.meta.status == "timed_out"
        assert hung.content == (
            "<tool_use_error>mcp__demo__slow did not finish within 1.5s and was cancelled."
            "</tool_use_error>"
        )
        assert wait_until(cancelled.exists, 10), "a timed-out call must be cancelled"
        drain(daemon, "d1b")

        daemon.send(tool_use("c", {}, name="mcp__demo__crash"))
        crashed = daemon.result("c", SLOW)
        assert crashed.is_error
        assert crashed.content == (
            "<tool_use_error>MCP server demo stopped while running crash: exited with code 3"
            "</tool_use_error>"
        )
        daemon.send(tool_use("again", {"key": "z"}, name="mcp__demo__lookup"))
        assert daemon.result("again", SLOW).content == "value of z"
        drain(daemon, "d2")
        assert b"MCP server demo stopped (exited with code 3)" in daemon.stderr

        # A daemon killed outright takes the server with it (the spawner's parent-death
        # signal, then the server's init's, then the kernel ends its PID namespace).
        servers = _running(daemon.mark, "server.py")
        assert servers
        daemon.proc.kill()
        daemon.wait_exit()
        assert wait_until(lambda: not any(alive(p) for p in servers), 10)


def test_server_that_cannot_start_gives_error_results_not_a_stuck_turn(tmp_path: Path) -> None:
    servers = {"ghost": {"command": str(tmp_path / "no-such-server")}}
    with mcp_daemon(tmp_path, servers) as daemon:
        daemon.send(tool_use("g", {}, name="mcp__ghost__anything"))
        result = daemon.result("g", SLOW)
        assert result.is_error
        assert str(result.content).startswith(
            "<tool_use_error>MCP server ghost is not available: it could not be started: "
        )
        drain(daemon, "d1")
        # stderr is read by another thread: the line may still be on its way.
        assert wait_until(lambda: b"MCP server ghost is unavailable" in daemon.stderr, 5)


def _running(mark: str, needle: str) -> list[int]:
    """The daemon's processes (they carry its mark) whose command line has ``needle``."""
    found = []
    for pid in marked_processes(mark):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if needle.encode() in cmdline:
            found.append(pid)
    return found


def test_a_sigkilled_daemon_with_four_servers_and_a_running_bash_leaves_nothing(
    tmp_path: Path,
) -> None:
    """Issue 10's scenario (run 50 times by hand, see docs/sandbox.md; once here): the old
    reaper lost its pipe with several servers and then left children behind."""
    servers = {f"s{i}": demo_server(tmp_path) for i in range(4)}
    with mcp_daemon(tmp_path, servers) as daemon:
        daemon.send(tool_use("b", "sleep 300 & setsid sleep 301 & sleep 302"))
        assert wait_until(
            lambda: (
                len(_running(daemon.mark, "server.py")) == 4
                and len(_running(daemon.mark, "sleep\x0030")) == 3
            ),
            SLOW,
        )
        daemon.proc.kill()
        daemon.wait_exit()
        assert wait_until(lambda: not marked_processes(daemon.mark), 10)
        assert b"reaper is gone" not in daemon.stderr
        assert b"spawner" not in daemon.stderr
