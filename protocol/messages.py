"""Wire messages of the stdio-executor protocol.

Owns: one msgspec Struct per command (host -> daemon) and per event (daemon -> host), the
closed sets of error codes, result statuses and cancel reasons, and the protocol version.
Must not: import anything but msgspec and the standard library, so that a Python host can
depend on this package alone.

Commands and events are tagged unions on ``type``. Unknown fields in a command are ignored
(hosts may add their own bookkeeping); events never carry fields that are not declared here.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = [
    "PROTOCOL_VERSION",
    "AddTool",
    "Command",
    "ContentBlock",
    "Discard",
    "Discarded",
    "Drain",
    "Drained",
    "ErrorCode",
    "ErrorEvent",
    "Event",
    "Interrupt",
    "Interrupted",
    "Limits",
    "Progress",
    "Ready",
    "ResultMeta",
    "Status",
    "ToolDefinition",
    "ToolInfo",
    "ToolResult",
    "ToolStarted",
    "ToolUse",
]

PROTOCOL_VERSION = 1

# The model-facing outcome of a tool call (SPEC section 3).
Status = Literal[
    "success",
    "error",
    "invalid_input",
    "unknown_tool",
    "denied",
    "timed_out",
    "interrupted",
    "rejected",
    "sibling_cancelled",
]

# Stable codes of `error` events; hosts switch on these, never on the message text.
ErrorCode = Literal[
    "invalid_json",
    "invalid_utf8",
    "not_an_object",
    "missing_type",
    "unknown_type",
    "invalid_command",
    "line_too_long",
    "duplicate_tool_use_id",
    "internal_error",
]

ContentBlock = dict[str, Any]


class _Message(msgspec.Struct, tag_field="type", frozen=True, kw_only=True):
    """Base of every wire message: the ``type`` tag is the class's ``tag``."""


# --------------------------------------------------------------------------- commands


class ToolUse(msgspec.Struct, frozen=True, kw_only=True):
    """An Anthropic ``tool_use`` content block, exactly as the model emitted it."""

    id: str
    name: str
    input: dict[str, Any] = msgspec.field(default_factory=dict)
    type: Literal["tool_use"] = "tool_use"


class AddTool(_Message, tag="add_tool", frozen=True, kw_only=True):
    """Schedule one tool call; it starts as soon as the concurrency rules allow."""

    tool_use: ToolUse
    request_id: str | None = None


class Interrupt(_Message, tag="interrupt", frozen=True, kw_only=True):
    """Cancel unfinished tools of the open turn.

    ``reason == "interrupt"`` (the user typed a new message) cancels only tools whose
    interrupt behaviour is ``cancel``; any other reason cancels everything.
    """

    reason: str = "abort"
    request_id: str | None = None


class Discard(_Message, tag="discard", frozen=True, kw_only=True):
    """Throw the open turn away: nothing more of it is written (a retried stream)."""

    request_id: str | None = None


class Drain(_Message, tag="drain", frozen=True, kw_only=True):
    """Wait until every tool of the turn has its result written, then end the turn."""

    request_id: str | None = None


Command = AddTool | Interrupt | Discard | Drain

# ----------------------------------------------------------------------------- events


class ToolDefinition(msgspec.Struct, frozen=True, kw_only=True):
    """A tool in the Anthropic Messages API shape: only API fields."""

    name: str
    description: str
    input_schema: dict[str, Any]


class ToolInfo(msgspec.Struct, frozen=True, kw_only=True):
    """Facts about a tool that are not part of the API definition."""

    read_only: Literal["always", "never", "per_input"]
    interrupt_behavior: Literal["cancel", "block"]
    aliases: list[str]
    max_result_bytes: int
    source: Literal["builtin", "host", "mcp"]


class Limits(msgspec.Struct, frozen=True, kw_only=True):
    max_line_bytes: int
    max_concurrency: int
    result_order: Literal["strict", "barrier"]


class Ready(_Message, tag="ready", frozen=True, kw_only=True):
    protocol_version: int
    version: str
    pid: int
    tools: list[ToolDefinition]
    tool_info: dict[str, ToolInfo]
    limits: Limits


class ToolStarted(_Message, tag="tool_started", frozen=True, kw_only=True):
    tool_use_id: str
    name: str
    turn: int


class Progress(_Message, tag="progress", frozen=True, kw_only=True):
    tool_use_id: str
    data: dict[str, Any]


class ResultMeta(msgspec.Struct, frozen=True, kw_only=True):
    """What a host wants to know about a result besides what the model sees."""

    status: Status
    turn: int
    duration_ms: float | None = None
    exit_code: int | None = None
    truncated: bool = False
    output_path: str | None = None
    output_bytes: int | None = None


class ToolResult(_Message, tag="tool_result", frozen=True, kw_only=True):
    """Minus ``meta``, exactly an Anthropic ``tool_result`` content block."""

    tool_use_id: str
    content: str | list[ContentBlock]
    is_error: bool
    meta: ResultMeta


class Drained(_Message, tag="drained", frozen=True, kw_only=True):
    request_id: str | None = None
    turn: int | None = None
    results: int = 0
    errors: int = 0
    by_status: dict[str, int] = msgspec.field(default_factory=dict)


class Discarded(_Message, tag="discarded", frozen=True, kw_only=True):
    tool_use_ids: list[str]
    request_id: str | None = None
    turn: int | None = None


class Interrupted(_Message, tag="interrupted", frozen=True, kw_only=True):
    """Acknowledges an ``interrupt``: which tools it cancelled (their results follow)."""

    reason: str
    tool_use_ids: list[str]
    request_id: str | None = None
    turn: int | None = None


class ErrorEvent(_Message, tag="error", frozen=True, kw_only=True):
    code: ErrorCode
    message: str
    line: int | None = None
    request_id: str | None = None
    tool_use_id: str | None = None


Event = Ready | ToolStarted | Progress | ToolResult | Drained | Discarded | Interrupted | ErrorEvent
