"""Admission: what the core needs to know about one ``add_tool`` before it can schedule it.

Owns: resolving the tool name (built-in, host, MCP, or an MCP server that is not up yet),
validating the input once, and classifying the call (concurrency-safe, interrupt behavior,
the label its errors cancel siblings with), as a ``ToolAdded`` event whose payload (``Call``)
the core hands back when the call starts.
Must not: decide anything the core decides (whether the call is a duplicate, whether its
error cascades, whether it runs now or waits behind a draining turn), or run the tool.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from ..core import Outcome, ToolAdded, sibling_label
from ..protocol import AddTool
from ..tools.base import InputError, Tool
from .failures import crash_outcome

__all__ = ["Call", "admit"]


class Call(msgspec.Struct):
    """A validated call waiting to start: the core carries it as ``ToolAdded.payload``."""

    tool: Tool
    value: Any  # the validated input
    raw: dict[str, Any]


def admit(cmd: AddTool, line: int | None, resolve: Callable[[str], Tool | None]) -> ToolAdded:
    """The core's event for one ``add_tool``; never raises (a bug becomes the call's result)."""
    use = cmd.tool_use
    try:
        return _classify(use.id, use.name, use.input, resolve, cmd.request_id, line)
    except Exception as exc:  # a bug in a tool's loading or validation: still one result
        outcome = crash_outcome(exc, use.name)
        return ToolAdded(
            use.id, use.name, True, outcome=outcome, request_id=cmd.request_id, line=line
        )


def _classify(
    tool_use_id: str,
    name: str,
    raw: dict[str, Any],
    resolve: Callable[[str], Tool | None],
    request_id: str | None,
    line: int | None,
) -> ToolAdded:
    tool = resolve(name)
    if tool is None:
        message = f"<tool_use_error>Error: No such tool available: {name}</tool_use_error>"
        outcome = Outcome(message, True, "unknown_tool")
        return ToolAdded(tool_use_id, name, True, outcome=outcome, request_id=request_id, line=line)
    spec = tool.spec
    try:
        value = tool.validate(raw)
    except InputError as exc:
        label = sibling_label(spec.name, tool.describe_raw(raw)) if spec.cancels_siblings else None
        outcome = Outcome(str(exc), True, "invalid_input")
        return ToolAdded(
            tool_use_id,
            spec.name,
            True,
            spec.interrupt_behavior,
            label,
            outcome,
            request_id=request_id,
            line=line,
        )
    label = sibling_label(spec.name, tool.describe(value)) if spec.cancels_siblings else None
    return ToolAdded(
        tool_use_id,
        spec.name,
        tool.is_concurrency_safe(value),
        spec.interrupt_behavior,
        label,
        payload=Call(tool, value, raw),
        request_id=request_id,
        line=line,
    )
