"""Drives the file tools directly: a real ``Session``, real files in ``tmp_path``, no daemon.

Owns: building a session and a ``ToolContext`` per call the way the runtime does, taking the
inline fast path first and ``run`` otherwise (as ``Daemon._start`` does), and a bound on
every call.
Must not: stand in for a tool; calls go through the tools' own ``validate`` and ``run``.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import anyio
import msgspec

from stdio_executor.processes import ProcessRegistry
from stdio_executor.tools.base import Tool, ToolContext, ToolOutcome
from stdio_executor.tools.catalog import ToolRegistry, builtin_specs
from stdio_executor.tools.session import Session

__all__ = ["CALL_TIMEOUT", "Harness"]

CALL_TIMEOUT = 10.0


class Harness:
    def __init__(self, root: Path) -> None:
        self.workspace = root / "ws"
        self.workspace.mkdir()
        self.spill_dir = root / "spill"
        self.session = Session(
            workspace=str(self.workspace),
            spill_dir=str(self.spill_dir),
            processes=ProcessRegistry(),
        )
        self.cwd = str(self.workspace)
        self.registry = ToolRegistry(builtin_specs())
        self._ids = itertools.count(1)
        self.progress: list[dict[str, Any]] = []

    def tool(self, name: str, max_result_bytes: int | None = None) -> Tool:
        tool = self.registry.get(name)
        assert tool is not None, name
        if max_result_bytes is None:
            return tool
        return type(tool)(msgspec.structs.replace(tool.spec, max_result_bytes=max_result_bytes))

    def context(self) -> ToolContext:
        return ToolContext(
            tool_use_id=f"toolu_{next(self._ids):03d}",
            cwd=self.cwd,
            session=self.session,
            progress=self.progress.append,
        )

    async def call(
        self, name: str, raw: dict[str, Any], *, tool: Tool | None = None, inline: bool = True
    ) -> ToolOutcome:
        """Validate and run one call; ``inline=False`` skips the fast path."""
        tool = tool or self.tool(name)
        value = tool.validate(raw)
        ctx = self.context()
        if inline:
            fast = tool.run_inline(value, ctx)
            if fast is not None:
                return fast
        with anyio.fail_after(CALL_TIMEOUT):
            return await tool.run(value, ctx)

    async def ok(self, name: str, raw: dict[str, Any], **kwargs: Any) -> str:
        outcome = await self.call(name, raw, **kwargs)
        assert not outcome.is_error, outcome.content
        assert isinstance(outcome.content, str)
        return outcome.content

    async def error(self, name: str, raw: dict[str, Any], **kwargs: Any) -> str:
        outcome = await self.call(name, raw, **kwargs)
        assert outcome.is_error, outcome.content
        assert isinstance(outcome.content, str)
        assert outcome.content.startswith("<tool_use_error>"), outcome.content
        assert outcome.content.endswith("</tool_use_error>"), outcome.content
        return outcome.content

    def close(self) -> None:
        self.session.processes.close()
