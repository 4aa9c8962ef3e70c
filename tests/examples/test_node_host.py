"""The Node.js host in examples/node, a user of the TypeScript client, runs against the real
daemon. (The client's own tests run with `node --test` in .ci/run; its generated types are
checked in tests/clients/test_typescript.py.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
NODE_DIR = REPO_ROOT / "examples" / "node"
node = shutil.which("node")
pytestmark = pytest.mark.skipif(node is None, reason="node is not installed")


def test_the_node_host_streams_blocks_and_prints_results() -> None:
    assert node is not None
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env["STDIO_EXECUTOR"] = json.dumps([sys.executable, "-m", "stdio_executor"])
    out = subprocess.run(
        [node, str(NODE_DIR / "host.mjs")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    lines = [line.split("] ", 1)[-1] for line in out.stdout.splitlines()]
    assert lines[0].startswith("ready: protocol 1, tools Bash, Read, Write")
    for expected in (
        "started toolu_01 (Bash)",
        "permission toolu_02 Write: allow",
        "permission toolu_04 Bash: deny",
        "drained turn 1: 4 results, 1 errors",
        "daemon exited with code 0",
    ):
        assert expected in lines, out.stdout
    statuses = [line.split(":")[0] for line in lines if line.startswith("result ")]
    assert statuses == [
        "result toolu_01 success",
        "result toolu_02 success",
        "result toolu_03 success",
        "result toolu_04 denied",
    ]
    message_line = next(line for line in lines if line.startswith("next user message: "))
    message = json.loads(message_line.removeprefix("next user message: "))
    assert message["role"] == "user"
    assert [set(block) for block in message["content"]] == [
        {"type", "tool_use_id", "content", "is_error"}
    ] * 4
    assert message["content"][2]["content"] == "     1\twritten by the node host"
