"""Shared by the host-tool and MCP tests: the real-daemon harness and a few helpers.

Owns: re-exporting ``tests/e2e/daemon_harness`` (import it through this module, which puts
it on the path), the options that let every tool run without a permission prompt, and a
bounded ``drain``.
"""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))

from daemon_harness import (
    REPO_ROOT,
    DaemonProcess,
    alive,
    group_members,
    is_progress,
    is_result,
    is_started,
    is_type,
    marked_processes,
    run_daemon,
    tool_use,
    wait_until,
)

from stdio_executor.protocol import Drained

__all__ = [
    "REPO_ROOT",
    "DaemonProcess",
    "alive",
    "drain",
    "group_members",
    "is_progress",
    "is_result",
    "is_started",
    "is_type",
    "marked_processes",
    "permission_args",
    "run_daemon",
    "tool_use",
    "wait_until",
]


@functools.cache
def permission_args() -> tuple[str, ...]:
    """Run everything without asking, if this build has permission modes."""
    out = subprocess.run(
        [sys.executable, "-m", "stdio_executor", "--help"],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=REPO_ROOT,
        check=False,
    )
    return ("--permission-mode", "bypassPermissions") if "--permission-mode" in out.stdout else ()


def drain(daemon: DaemonProcess, request_id: str, timeout: float = 10.0) -> Drained:
    """Send ``drain`` and wait for its answer."""
    daemon.send({"type": "drain", "request_id": request_id})
    event = daemon.wait_for(
        lambda e: isinstance(e, Drained) and e.request_id == request_id, timeout
    )
    assert isinstance(event, Drained)
    return event
