"""The file tools end to end: the real daemon over real pipes.

A model's usual loop (Read, Edit, check with Bash, search with Grep), and a turn in which a
Write races Reads of the same file: the unsafe Write runs alone, so a Read added before it
sees the old text and a Read added after it sees the new. Every stdout line must parse as a
JSON event.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest

pytestmark = pytest.mark.anyio

REPO_ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 20.0


def numbered(*lines: str) -> str:
    return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, 1))


class Client:
    """Writes commands to the daemon and reads its events, each read bounded in time."""

    def __init__(self, process: anyio.abc.Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self.stdin = process.stdin
        self.stdout = process.stdout
        self.buffer = b""
        self.events: list[dict[str, Any]] = []

    async def send(self, *commands: dict[str, Any]) -> None:
        data = b"".join(json.dumps(c).encode() + b"\n" for c in commands)
        with anyio.fail_after(TIMEOUT):
            await self.stdin.send(data)

    async def next(self) -> dict[str, Any] | None:
        """The next event, or ``None`` at the end of stdout."""
        with anyio.fail_after(TIMEOUT):
            while b"\n" not in self.buffer:
                try:
                    self.buffer += await self.stdout.receive()
                except anyio.EndOfStream:
                    assert not self.buffer, f"stdout ended inside a line: {self.buffer!r}"
                    return None
        line, self.buffer = self.buffer.split(b"\n", 1)
        event = json.loads(line)  # every line is one JSON object
        assert isinstance(event, dict), line
        assert isinstance(event.get("type"), str), line
        self.events.append(event)
        return event

    async def turn(self, *uses: tuple[str, str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """Send one turn's tool uses and a drain in one write; its results by id."""
        commands: list[dict[str, Any]] = [
            {
                "type": "add_tool",
                "tool_use": {"type": "tool_use", "id": id_, "name": name, "input": raw},
            }
            for id_, name, raw in uses
        ]
        await self.send(*commands, {"type": "drain"})
        results: dict[str, dict[str, Any]] = {}
        while True:
            event = await self.next()
            assert event is not None, "the daemon exited in the middle of a turn"
            assert event["type"] != "error", event
            if event["type"] == "tool_result":
                results[event["tool_use_id"]] = event
            elif event["type"] == "drained":
                break
        assert list(results) == [id_ for id_, _, _ in uses]  # strict result order
        return results


@asynccontextmanager
async def daemon(workspace: Path, tmp_path: Path) -> AsyncIterator[Client]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), *filter(None, [env.get("PYTHONPATH")])])
    argv = [
        sys.executable,
        "-m",
        "stdio_executor",
        "--workspace",
        str(workspace),
        "--spill-dir",
        str(tmp_path / "spill"),
        "--permission-mode",  # these tests are not about permissions: Write/Edit just run
        "bypassPermissions",
    ]
    stderr = os.open(tmp_path / "stderr.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        process = await anyio.open_process(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=REPO_ROOT,
            env=env,
        )
    finally:
        os.close(stderr)
    client = Client(process)
    try:
        ready = await client.next()
        assert ready is not None and ready["type"] == "ready"
        names = {tool["name"] for tool in ready["tools"]}
        assert {"Read", "Write", "Edit", "Glob", "Grep", "Bash"} <= names
        yield client
        # EOF on stdin: the daemon finishes and exits 0 after its last line.
        await client.stdin.aclose()
        while await client.next() is not None:
            pass
        with anyio.fail_after(TIMEOUT):
            code = await process.wait()
        assert code == 0, await anyio.Path(tmp_path / "stderr.log").read_text()
    finally:
        if process.returncode is None:
            process.kill()
            with anyio.fail_after(TIMEOUT), anyio.CancelScope(shield=True):
                await process.wait()
        with anyio.CancelScope(shield=True):
            await process.aclose()


async def test_read_edit_bash_grep_loop(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    async with daemon(ws, tmp_path) as client:
        read = (await client.turn(("r1", "Read", {"file_path": "notes.txt"})))["r1"]
        assert (read["is_error"], read["content"]) == (False, numbered("alpha", "beta", "gamma"))
        assert read["meta"]["status"] == "success"

        edit_input = {"file_path": "notes.txt", "old_string": "beta", "new_string": "BETA"}
        edit = (await client.turn(("e1", "Edit", edit_input)))["e1"]
        assert not edit["is_error"], edit["content"]
        assert "     2\tBETA" in edit["content"]

        cat = (await client.turn(("b1", "Bash", {"command": "cat notes.txt"})))["b1"]
        assert (cat["is_error"], cat["content"]) == (False, "alpha\nBETA\ngamma")

        grep_input = {"pattern": "BETA", "output_mode": "content"}
        grep = (await client.turn(("g1", "Grep", grep_input)))["g1"]
        assert (grep["is_error"], grep["content"]) == (False, f"{ws}/notes.txt:2:BETA")
    assert [e["type"] for e in client.events].count("tool_result") == 4


async def test_a_read_added_after_a_write_of_the_same_file_sees_the_new_text(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "race.txt").write_text("before\n")
    async with daemon(ws, tmp_path) as client:
        await client.turn(("r0", "Read", {"file_path": "race.txt"}))
        results = await client.turn(
            ("r1", "Read", {"file_path": "race.txt"}),
            ("w1", "Write", {"file_path": "race.txt", "content": "after\n"}),
            ("r2", "Read", {"file_path": "race.txt"}),
            ("g1", "Grep", {"pattern": "after", "output_mode": "count"}),
        )
        assert results["r1"]["content"] == numbered("before")
        assert results["w1"]["content"] == f"The file {ws}/race.txt has been updated."
        assert results["r2"]["content"] == numbered("after")
        assert results["g1"]["content"].startswith(f"{ws}/race.txt:1\n")
        assert not any(result["is_error"] for result in results.values())
    assert (ws / "race.txt").read_text() == "after\n"
