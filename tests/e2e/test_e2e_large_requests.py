"""Requests larger than one spawner socket message: a big environment, a long command.

A SOCK_SEQPACKET message must fit the socket's buffer (~208 KiB by default); an environment of
that size is ordinary (CI systems export large variables) and used to make every Bash call
fail with "the process spawner exited". Real daemon, real spawner, with and without the
sandbox (whose helper receives the request a second time).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("sandbox", ["auto", "off"])
def test_a_large_environment_and_a_long_command_reach_bash(tmp_path: Path, sandbox: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    env.update({f"BIG_{n}": chr(ord("a") + n) * 100_000 for n in range(3)})  # 300 KB
    longest = "echo " + "x" * (131_071 - 5)
    calls = [
        ("env", "echo ${#BIG_0} ${#BIG_1} ${#BIG_2}"),
        ("long", longest),
        ("after", "echo still here"),
    ]
    lines = []
    for tool_use_id, command in calls:
        use = {"type": "tool_use", "id": tool_use_id, "name": "Bash", "input": {"command": command}}
        lines += [{"type": "add_tool", "tool_use": use}, {"type": "drain"}]
    argv = [sys.executable, "-m", "stdio_executor", "--permission-mode", "bypassPermissions"]
    done = subprocess.run(
        [*argv, "--sandbox", sandbox, "--spill-dir", str(tmp_path / "spill")],
        input="".join(json.dumps(line) + "\n" for line in lines),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "spawner" not in done.stderr, done.stderr
    results = {
        e["tool_use_id"]: e
        for e in map(json.loads, done.stdout.splitlines())
        if e["type"] == "tool_result"
    }
    assert results["env"]["content"] == "100000 100000 100000"
    assert results["long"]["meta"]["status"] == "success"
    assert results["long"]["meta"]["output_bytes"] == 131_067
    assert results["after"]["content"] == "still here"
