"""A repository's own config files as something other than a file, through the real
daemon: a FIFO (which blocks a plain ``open`` forever) or a huge file in place of
``.claude/settings.json``, ``.claude/settings.local.json``, ``.mcp.json``. The daemon must
answer at once: the settings files are refused as unreadable (exit 2 with the reason, as
for invalid JSON), never hang start-up."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _start(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "stdio_executor", "--workspace", str(ws), *args],
        input="",
        capture_output=True,
        text=True,
        timeout=20,  # a hang is the failure this file is about
    )


@pytest.mark.parametrize("name", [".claude/settings.json", ".claude/settings.local.json"])
@pytest.mark.parametrize("kind", ["fifo", "huge"])
def test_a_planted_settings_file_is_refused_not_waited_on(
    tmp_path: Path, name: str, kind: str
) -> None:
    (tmp_path / ".claude").mkdir()
    path = tmp_path / name
    if kind == "fifo":
        os.mkfifo(path)
    else:
        with open(path, "wb") as f:
            f.truncate(17 * 1024 * 1024)  # sparse
    done = _start(tmp_path, "--no-prompt")
    assert done.returncode == 2, done.stderr
    assert str(path) in done.stderr and "cannot be read" in done.stderr
    assert done.stdout == ""


def test_a_planted_mcp_json_fifo_does_not_hang_a_trusting_start(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / ".mcp.json")
    done = _start(tmp_path, "--no-prompt", "--trust-workspace")
    # Not a regular file: not a config file at all (skipped, as an absent one is).
    assert '"type":"ready"' in done.stdout, done.stderr
    assert done.returncode == 0, done.stderr


def test_a_hosts_settings_may_come_through_a_pipe(tmp_path: Path) -> None:
    """``--settings <(jq ...)`` is the host's own choice: a pipe there is read, not refused."""
    import threading

    pipe = tmp_path / "settings.pipe"
    os.mkfifo(pipe)

    def feed() -> None:
        with open(pipe, "w") as f:
            f.write('{"permissions": {"deny": ["Bash(rm:*)"]}}')

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    ws = tmp_path / "ws"
    ws.mkdir()
    done = _start(ws, "--no-prompt", "--settings", str(pipe))
    writer.join(timeout=5)
    assert done.returncode == 0, done.stderr
    assert '"type":"ready"' in done.stdout
