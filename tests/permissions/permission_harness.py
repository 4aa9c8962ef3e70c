"""Builds a real settings gate over a scratch workspace, without a daemon.

Owns: writing ``.claude/settings.json`` (Claude Code's format) into a workspace under
``tmp_path``, loading it through ``load_settings`` as the daemon does, and making calls the
way the runtime does (the real tool validates the input; the real tool classifies it).
Must not: stand in for the policy or the gate; every decision comes from them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from stdio_executor.permissions.gate import CallInfo
from stdio_executor.permissions.policy import Decision
from stdio_executor.permissions.settings import load_settings
from stdio_executor.permissions.settings_gate import SettingsGate, build_gate
from stdio_executor.processes import ProcessRegistry
from stdio_executor.tools.catalog import ToolRegistry, builtin_specs

__all__ = ["Workspace", "workspace"]

_REGISTRY = ToolRegistry(builtin_specs())


class Workspace:
    """``root/ws`` is the workspace; ``root/outside`` is a directory next to it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.ws = root / "ws"
        self.ws.mkdir()
        self.outside = root / "outside"
        self.outside.mkdir()
        self.spill = root / "spill"
        self.processes = ProcessRegistry()

    def settings(self, data: dict[str, Any], name: str = "settings.json") -> Path:
        path = self.ws / ".claude" / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(data, indent=2))
        return path

    def gate(
        self,
        settings: dict[str, Any] | None = None,
        *,
        mode: str | None = None,
        no_prompt: bool = False,
        extra: tuple[str, ...] = (),
        ignore_case: bool = False,
    ) -> SettingsGate:
        if settings is not None:
            self.settings(settings)
        loaded = load_settings(str(self.ws), extra, ignore_case=ignore_case)
        return build_gate(
            loaded,
            mode=mode,
            no_prompt=no_prompt,
            workspace=str(self.ws),
            spill_dir=str(self.spill),
            session_id="test-session",
            processes=self.processes,
            ignore_case=ignore_case,
        )

    def call(
        self,
        name: str,
        tool_input: dict[str, Any],
        *,
        cwd: str | os.PathLike[str] | None = None,
        tool_use_id: str = "toolu_1",
        turn: int = 1,
        siblings: tuple[str, ...] = (),
    ) -> CallInfo:
        tool = _REGISTRY.get(name)
        assert tool is not None, name
        value = tool.validate(tool_input)
        ids = (tool_use_id, *siblings)
        return CallInfo(
            tool_use_id, tool, tool_input, value, turn, str(cwd or self.ws), lambda: ids
        )

    def decide(
        self,
        gate: SettingsGate,
        name: str,
        tool_input: dict[str, Any],
        cwd: str | os.PathLike[str] | None = None,
    ) -> Decision:
        return gate.decide(self.call(name, tool_input, cwd=cwd))

    def close(self) -> None:
        self.processes.close()


def workspace(tmp_path: Path) -> Iterator[Workspace]:
    """The body of each test module's ``space`` fixture (a conftest.py here would clash
    with the other test directories' conftest modules under mypy)."""
    w = Workspace(tmp_path)
    (w.ws / "a.txt").write_text("a\n")
    try:
        yield w
    finally:
        w.close()
