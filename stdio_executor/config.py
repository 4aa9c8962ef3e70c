"""The daemon's settings, as parsed from the command line.

Owns: one frozen struct with every knob and its default. Cheap to import (start-up path).
"""

from __future__ import annotations

import os
from typing import Literal

import msgspec

__all__ = ["DEFAULT_MAX_LINE_BYTES", "Config"]

DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024


def _default_spill_dir() -> str:
    # tempfile.gettempdir() would cost ~10 ms of start-up (it imports random and shutil).
    tmp = next((os.environ[v] for v in ("TMPDIR", "TEMP", "TMP") if os.environ.get(v)), "/tmp")
    # One directory per user: made 0700 and checked as this user's before anything is
    # written below it (``private_dir``), which a directory shared by users could not be.
    return os.path.join(tmp, f"stdio-executor-{os.geteuid()}", f"session-{os.getpid()}")


class Config(msgspec.Struct, frozen=True):
    workspace: str = msgspec.field(default_factory=os.getcwd)
    max_concurrency: int = 10
    result_order: Literal["strict", "barrier"] = "strict"
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    spill_dir: str = msgspec.field(default_factory=_default_spill_dir)
    tools: tuple[str, ...] | None = None  # None: every built-in
    # Seconds to wait for running tools to stop after SIGTERM/SIGINT before exiting anyway.
    shutdown_grace: float = 5.0
    settings: tuple[str, ...] = ()  # --settings PATH|JSON (may repeat), after .claude/*.json
    permission_mode: str | None = None  # --permission-mode: overrides defaultMode
    no_prompt: bool = False  # --no-prompt: every ask is a deny
    # --trust-workspace: the workspace's own settings and .mcp.json apply in full at once
    trust_workspace: bool = False
    permission_timeout: float | None = None  # --permission-timeout: unanswered asks deny
    host_tool_files: tuple[str, ...] = ()  # --tools FILE (may repeat)
    host_builtins: tuple[str, ...] = ()  # --host-builtins: Claude Code tools the host serves
    mcp_configs: tuple[str, ...] = ()  # --mcp-config FILE (may repeat)
    strict_mcp_config: bool = False  # ignore the workspace's .mcp.json
    journal: str | None = None  # --journal FILE
    argv: tuple[str, ...] = ()  # the command line, as recorded in the journal
    sandbox: Literal["auto", "on", "off"] = "auto"  # --sandbox: Bash in an OS sandbox
