"""examples/host_tool.py: a standard-library host that declares a tool and serves it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


STDIO_EXECUTOR_FORMS = {
    "unset": None,
    "json array": json.dumps([sys.executable, "-m", "stdio_executor", "--log-level", "error"]),
    "shell words": f"'{sys.executable}' -m stdio_executor --log-level error",
}


@pytest.mark.parametrize("form", STDIO_EXECUTOR_FORMS)
def test_example_host_declares_and_serves_a_tool(tmp_path: Path, form: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    env.pop("STDIO_EXECUTOR", None)
    if STDIO_EXECUTOR_FORMS[form] is not None:
        env["STDIO_EXECUTOR"] = str(STDIO_EXECUTOR_FORMS[form])
    done = subprocess.run(
        [sys.executable, str(REPO_ROOT / "examples" / "host_tool.py")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0] == "registered: ['word_count']"
    message = json.loads(lines[-1])
    assert message["role"] == "user"
    assert message["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "3 words", "is_error": False},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "hi", "is_error": False},
    ]
