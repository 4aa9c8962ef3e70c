"""The one small interface every tool implements, and what a running tool is given.

Owns: ``Tool`` (validate, classify, run), ``ToolContext`` (what the runtime lends a running
tool), ``ToolOutcome`` (how it ended), and ``InputError``.
Must not: know about the wire, the scheduler or other tools. A failing tool *returns* an
error outcome; raising is reserved for bugs, which the runtime turns into an error result.
"""

from __future__ import annotations

import abc
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from ..core.events import Status

if TYPE_CHECKING:
    from ..confine import Confinement
    from .output import OutputSink
    from .session import Session

__all__ = [
    "InputError",
    "Tool",
    "ToolContext",
    "ToolOutcome",
    "ToolSpec",
    "describe_value",
    "normalized",
]

Content = str | list[dict[str, Any]]
ReadOnly = Literal["always", "never", "per_input"]
InterruptBehavior = Literal["cancel", "block"]
# Which file permissions a tool's calls need: Read rules and the read roots apply to "read"
# tools; Edit rules, acceptEdits and protected paths to "edit" tools (docs/permissions.md).
FileAccess = Literal["read", "edit"]


class InputError(Exception):
    """The input failed validation; the message is model-facing."""


def describe_value(value: Any) -> str:
    """What a bad input value was, for validation messages: ``string 'ten'``, ``array``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"number {value}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:40] + "\u2026"
        return f"string {shown!r}"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


class ToolSpec(msgspec.Struct, frozen=True):
    """Everything the daemon needs to announce and schedule a tool without loading it."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    read_only: ReadOnly
    interrupt_behavior: InterruptBehavior
    max_result_bytes: int
    aliases: tuple[str, ...] = ()
    source: Literal["builtin", "host", "mcp"] = "builtin"
    # A failure of this tool cancels its siblings (SPEC section 4: Bash only).
    cancels_siblings: bool = False
    # Permission facts. ``file_access``: the file rules a call is judged by (None: it touches
    # no file by path); ``path_field``: the input key holding that path.
    # ``permission_read_only``: whether modes treat a call as read-only (run in default and
    # plan mode without asking); None follows ``is_concurrency_safe``. TodoWrite changes only
    # the session's own list (True); WebFetch reads, but from the network, and asks unless a
    # rule allows its domain (False), as in Claude Code.
    file_access: FileAccess | None = None
    path_field: str | None = None
    permission_read_only: bool | None = None


class ToolOutcome(msgspec.Struct):  # one per call; never mutated (copies: structs.replace)
    content: Content
    is_error: bool = False
    status: Status | None = None  # None means "success" or "error" by is_error
    exit_code: int | None = None
    truncated: bool = False
    output_path: str | None = None
    output_bytes: int | None = None
    context_update: Mapping[str, str] | None = None

    @property
    def final_status(self) -> Status:
        return self.status or ("error" if self.is_error else "success")


def normalized(path: str) -> str:
    """``os.path.normpath(path)``, without its work for an absolute path with no empty, "."
    or ".." component and no trailing slash (already normal): normpath is Python code on
    3.11, ~1 us per call (bench/NOTES.md section 18)."""
    if path[:1] != "/" or "//" in path or "/." in path or path[-1] == "/":
        return os.path.normpath(path)
    return path


class ToolContext(msgspec.Struct):
    """What the runtime lends one running tool call."""

    tool_use_id: str
    cwd: str
    session: Session
    progress: Callable[[dict[str, Any]], None]
    # A tool that can report partial output when it is cancelled installs a sink here.
    sink: OutputSink | None = None
    # Writes an event for the host besides progress (TodoWrite's ``todos``), at once, unless
    # the call's turn was discarded. The event is built by the tool from ``protocol``; the
    # runtime only passes it on.
    notify: Callable[[Any], None] = msgspec.field(default=lambda event: None)
    extra: dict[str, Any] = msgspec.field(default_factory=dict)
    # The roots the file the call opens must lie in (set by the runtime from the permission
    # verdict; None: no check). Honoured by the file tools (Read, Glob, LS, Grep and the edit
    # tools); those whose ``confines`` is true may also take the gate's judging over.
    confine: Confinement | None = None

    def resolve(self, path: str) -> str:
        """A tool's path argument, absolute or relative to the session's working directory."""
        if path[:1] == "/":  # the common case, without expanduser's and join's work
            return normalized(path)
        return os.path.normpath(os.path.join(self.cwd, os.path.expanduser(path)))


class Tool(abc.ABC):
    """A tool implementation. Instances are shared by all calls; keep per-call state local."""

    # Whether the tool checks every file or directory it opens against ``ctx.confine``,
    # on the opened descriptor, before reading it: then the permission gate may leave
    # workspace confinement to it and skip judging calls nothing else could object to.
    confines = False

    def __init__(self, spec: ToolSpec) -> None:
        self.spec = spec

    @abc.abstractmethod
    def validate(self, raw: Mapping[str, Any]) -> Any:
        """Return the validated input or raise ``InputError`` naming every bad field."""

    def is_concurrency_safe(self, value: Any) -> bool:
        return self.spec.read_only == "always"

    def describe(self, value: Any) -> str:
        """A short form of the call for messages (Bash: the command)."""
        return ""

    def rule_content(self, value: Any) -> str | None:
        """What a permission rule's specifier is compared with (WebFetch: ``domain:HOST``),
        or ``None`` when the tool's rules take no specifier of that kind."""
        return None

    def describe_raw(self, raw: Mapping[str, Any]) -> str:
        """``describe`` for an input that failed validation (an invalid Bash call still
        cancels its siblings, and the message names it)."""
        return ""

    def run_inline(self, value: Any, ctx: ToolContext) -> ToolOutcome | None:
        """A synchronous fast path for calls that finish in microseconds, or ``None``.

        Saves a task per call for cheap tools (a small Read); must never block.
        """
        return None

    @abc.abstractmethod
    async def run(self, value: Any, ctx: ToolContext) -> ToolOutcome:
        """Do the work. Cancellation arrives as anyio's cancel exception."""
