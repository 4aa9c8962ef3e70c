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
    "HeldBack",
    "HostToolDefinition",
    "Interrupt",
    "Interrupted",
    "JobExited",
    "JobInfo",
    "JobStarted",
    "Jobs",
    "JournalRecovered",
    "Limits",
    "ListJobs",
    "PermissionCancelled",
    "PermissionRequest",
    "PermissionResponse",
    "Progress",
    "Ready",
    "RegisterTool",
    "ResultMeta",
    "SandboxInfo",
    "Status",
    "TodoItem",
    "Todos",
    "ToolCall",
    "ToolCancel",
    "ToolDefinition",
    "ToolInfo",
    "ToolOutput",
    "ToolProgressCommand",
    "ToolResult",
    "ToolStarted",
    "ToolUse",
    "ToolsChanged",
    "TrustWorkspace",
    "UnfinishedTool",
    "UnregisterTool",
    "WorkspaceTrust",
    "WorkspaceTrusted",
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
    "unknown_tool_use_id",
    "unknown_request_id",
    "invalid_tool_definition",
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


class TrustWorkspace(_Message, tag="trust_workspace", frozen=True, kw_only=True):
    """The host trusts the workspace: the settings and MCP servers ``ready`` reported as
    held back take effect (answered with ``workspace_trusted``)."""

    request_id: str | None = None


class PermissionResponse(_Message, tag="permission_response", frozen=True, kw_only=True):
    """The host's answer to a ``permission_request`` (same ``request_id``)."""

    request_id: str
    decision: Literal["allow", "deny"]
    message: str | None = None
    # Replaces the tool's input (validated again) when allowing.
    updated_input: dict[str, Any] | None = None
    # Deny and abort the whole turn, like rejecting a tool in Claude Code.
    interrupt: bool = False


class HostToolDefinition(msgspec.Struct, frozen=True, kw_only=True):
    """A tool the host implements: an API tool definition plus scheduling facts."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = msgspec.field(default_factory=lambda: {"type": "object"})
    read_only: bool = False
    interrupt_behavior: Literal["cancel", "block"] = "block"
    timeout_ms: int | None = None
    aliases: list[str] = msgspec.field(default_factory=list)


class RegisterTool(_Message, tag="register_tool", frozen=True, kw_only=True):
    tool: HostToolDefinition
    request_id: str | None = None


class UnregisterTool(_Message, tag="unregister_tool", frozen=True, kw_only=True):
    name: str
    request_id: str | None = None


class ToolProgressCommand(_Message, tag="tool_progress", frozen=True, kw_only=True):
    """Progress of a host tool call, relayed as a ``progress`` event."""

    tool_use_id: str
    data: dict[str, Any]


class ToolOutput(_Message, tag="tool_output", frozen=True, kw_only=True):
    """The result of a host tool call."""

    tool_use_id: str
    content: str | list[ContentBlock]
    is_error: bool = False


class ListJobs(_Message, tag="list_jobs", frozen=True, kw_only=True):
    """Ask for the background jobs (``run_in_background``), answered by ``jobs``."""

    request_id: str | None = None


Command = (
    AddTool
    | Interrupt
    | Discard
    | Drain
    | TrustWorkspace
    | PermissionResponse
    | RegisterTool
    | UnregisterTool
    | ToolProgressCommand
    | ToolOutput
    | ListJobs
)

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


class HeldBack(msgspec.Struct, frozen=True, kw_only=True):
    """What the workspace's own files asked for that an untrusted workspace does not get:
    only their deny and ask rules apply until the host trusts it."""

    files: list[str] = []  # the workspace files something was held back from
    allow: list[str] = []  # allow rules
    default_mode: str | None = None
    additional_directories: list[str] = []
    hooks: list[str] = []  # hook commands
    sandbox: bool = False  # a `sandbox` section
    mcp_servers: list[str] = []  # servers of the workspace's .mcp.json


class WorkspaceTrust(msgspec.Struct, frozen=True, kw_only=True):
    trusted: bool
    held_back: HeldBack | None = None  # None: nothing was held back


class SandboxInfo(msgspec.Struct, frozen=True, kw_only=True):
    """Whether Bash runs in an OS sandbox, by what, and what it does and does not cover."""

    enabled: bool
    mechanism: Literal["landlock+namespaces", "landlock", "bubblewrap", "none"]
    network: Literal["blocked", "proxy", "unrestricted"]
    enforced: list[str] = []
    not_enforced: list[str] = []
    # Relaxations an untrusted workspace file asked for and did not get ("FILE: key").
    held_back: list[str] = []
    reason: str | None = None  # why it is off (enabled false)
    allowed_domains: list[str] = []


class Ready(_Message, tag="ready", frozen=True, kw_only=True):
    protocol_version: int
    version: str
    pid: int
    tools: list[ToolDefinition]
    tool_info: dict[str, ToolInfo]
    limits: Limits
    workspace_trust: WorkspaceTrust | None = None
    sandbox: SandboxInfo | None = None


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


class PermissionRequest(_Message, tag="permission_request", frozen=True, kw_only=True):
    """A tool waits for the host to allow or deny it (answer: ``permission_response``)."""

    request_id: str
    tool_use_id: str
    name: str
    input: dict[str, Any]
    # What caused the ask: the matching rule (``Bash(npm run *)``), a hook, or the mode.
    reason: str
    turn: int | None = None
    # Ids of the other tools of the turn so far, for hosts that decide per batch.
    siblings: list[str] = msgspec.field(default_factory=list)


class PermissionCancelled(_Message, tag="permission_cancelled", frozen=True, kw_only=True):
    """A pending ``permission_request`` will not be needed any more (interrupt, discard,
    shutdown, end of input); a late answer to it is ignored."""

    request_id: str
    tool_use_id: str
    reason: str


class ToolCall(_Message, tag="tool_call", frozen=True, kw_only=True):
    """Run a host tool now: answer with ``tool_progress`` (any number) and ``tool_output``."""

    tool_use_id: str
    name: str
    input: dict[str, Any]
    turn: int | None = None


class ToolCancel(_Message, tag="tool_cancel", frozen=True, kw_only=True):
    """Stop a host tool call; its result has been (or is being) written by the daemon."""

    tool_use_id: str
    reason: str


class ToolsChanged(_Message, tag="tools_changed", frozen=True, kw_only=True):
    """The enabled tools changed (host registration, an MCP server came up or went away)."""

    tools: list[ToolDefinition]
    tool_info: dict[str, ToolInfo]
    added: list[str] = msgspec.field(default_factory=list)
    removed: list[str] = msgspec.field(default_factory=list)
    request_id: str | None = None


class TodoItem(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One task of the model's list, in the shape the model sent it: ``activeForm`` (Claude
    Code 1.0.9x on) or ``id`` and ``priority`` (before); absent fields are left out."""

    content: str
    status: Literal["pending", "in_progress", "completed"]
    activeForm: str | None = None
    id: str | None = None
    priority: Literal["high", "medium", "low"] | None = None


class Todos(_Message, tag="todos", frozen=True, kw_only=True):
    """The model replaced its task list (a ``TodoWrite`` call), for the host to show.

    Written as soon as the call runs, before its ``tool_result``. ``todos`` is the whole new
    list as the model sent it; ``previous`` the session's list before the call. As in Claude
    Code, a list whose tasks are all completed is then forgotten: the next call's
    ``previous`` is empty.
    """

    tool_use_id: str
    todos: list[TodoItem]
    previous: list[TodoItem] = msgspec.field(default_factory=list)


class UnfinishedTool(msgspec.Struct, frozen=True, kw_only=True):
    tool_use_id: str
    name: str
    input: dict[str, Any]
    turn: int | None = None


class JournalRecovered(_Message, tag="journal_recovered", frozen=True, kw_only=True):
    """Written right after ``ready`` when the journal shows tools that started in an earlier
    run and never finished: their side effects may or may not have happened."""

    journal: str
    unfinished: list[UnfinishedTool]


class WorkspaceTrusted(_Message, tag="workspace_trusted", frozen=True, kw_only=True):
    """The answer to ``trust_workspace``: what took effect (empty if nothing was held)."""

    applied: HeldBack
    request_id: str | None = None


class JobInfo(msgspec.Struct, frozen=True, kw_only=True):
    """A background job: a Bash call with ``run_in_background``, running or finished."""

    job_id: str
    tool_use_id: str
    command: str
    description: str
    status: Literal["running", "completed", "failed", "killed"]
    exit_code: int | None
    pid: int
    output_path: str
    output_bytes: int
    # Output the model has not read yet with BashOutput/TaskOutput.
    unread_bytes: int
    started_at: float  # Unix time


class JobStarted(_Message, tag="job_started", frozen=True, kw_only=True):
    """A Bash call started a background job (its result names ``job_id`` to the model)."""

    job: JobInfo


class JobExited(_Message, tag="job_exited", frozen=True, kw_only=True):
    """A background job's shell exited (of itself, or stopped by KillShell/TaskStop)."""

    job: JobInfo


class Jobs(_Message, tag="jobs", frozen=True, kw_only=True):
    """The answer to ``list_jobs``: every job of the session, oldest first."""

    jobs: list[JobInfo]
    request_id: str | None = None


class ErrorEvent(_Message, tag="error", frozen=True, kw_only=True):
    code: ErrorCode
    message: str
    line: int | None = None
    request_id: str | None = None
    tool_use_id: str | None = None


Event = (
    Ready
    | ToolStarted
    | Progress
    | ToolResult
    | Drained
    | Discarded
    | Interrupted
    | ErrorEvent
    | PermissionRequest
    | PermissionCancelled
    | ToolCall
    | ToolCancel
    | ToolsChanged
    | JournalRecovered
    | WorkspaceTrusted
    | Todos
    | JobStarted
    | JobExited
    | Jobs
)
