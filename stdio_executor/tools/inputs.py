"""Input types of the built-in tools: one declaration is both the validator and the schema.

Owns: one ``msgspec.Struct`` per built-in tool with Claude Code's field names, types and
descriptions (``INPUTS``), and ``parse``, which turns a ``tool_use`` block's ``input`` into
that Struct or raises ``InputError`` in Claude Code's wording (``validation``). The published
``input_schema`` is generated from the same Structs (``schemas``), so what the schema allows
and what the validator accepts cannot drift apart.
Must not: hold a tool's semantic checks (an Edit whose old and new strings are equal): those
stay in the tool's ``validate``, after ``parse``.

The policy is Claude Code's (docs/tools.md, "Inputs"):
- Keys a tool knows are accepted and honoured; an unknown key is refused ("An unexpected
  parameter `x` was provided"), as Claude Code's strict schemas do.
- An optional key may be left out but not sent as ``null`` (zod's ``.optional()``).
- Claude Code's ``semanticNumber``/``semanticBoolean`` accept ``"10"`` for a number and
  ``"true"``/``"false"`` for a boolean; ``parse`` converts non-strictly to the same effect.

How to declare a tool's inputs (for a new built-in):
1. Subclass ``Input``. Required fields have no default; optional ones default to ``UNSET``
   (``int | UnsetType = UNSET``) or to a real default that the schema then advertises
   (``replace_all: bool = False``). Put the model-facing description in
   ``Annotated[T, Meta(description=...)]``; constraints (``min_length``, ``ge``) go there too.
   A key that is not a Python name (``-A``) is ``msgspec.field(name="-A")``.
   Nested objects are Structs too; one whose unknown keys Claude Code ignores (rather than
   refuses) subclasses ``LenientInput``.
2. Add it to ``INPUTS`` under the tool's name (every alias with different inputs, such as
   ``TaskOutput`` beside ``BashOutput``, is a tool of its own with its own entry).
3. In the tool's ``validate``: ``value = parse(self.spec.name, MyInput, raw)``.
4. Regenerate ``schemas.json``: ``python -m stdio_executor.tools.schemas`` (a test fails
   while it is stale).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeVar

import msgspec
from msgspec import UNSET, Meta, UnsetType, field

from .base import InputError

__all__ = [
    "INPUTS",
    "UNSET",
    "AgentInput",
    "BashInput",
    "BashOutputInput",
    "EditInput",
    "GlobInput",
    "GrepInput",
    "Input",
    "KillShellInput",
    "LSInput",
    "LenientInput",
    "MultiEditEntry",
    "MultiEditInput",
    "NotebookEditInput",
    "ReadInput",
    "TaskInput",
    "TaskOutputInput",
    "TaskStopInput",
    "TodoItem",
    "TodoWriteInput",
    "UnsetType",
    "WebFetchInput",
    "WebSearchInput",
    "WriteInput",
    "parse",
]


class Input(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A tool's input object: unknown keys refused, as Claude Code's strict schemas do."""


class LenientInput(msgspec.Struct, kw_only=True):
    """A nested object whose unknown keys Claude Code drops rather than refuses."""


S = TypeVar("S", bound=msgspec.Struct)


def parse(tool_name: str, cls: type[S], raw: Mapping[str, Any]) -> S:
    """``raw`` as ``cls``, or ``InputError`` listing every problem in Claude Code's words."""
    try:
        return msgspec.convert(raw, cls, strict=False)
    except msgspec.ValidationError as exc:
        from .validation import describe_problems

        raise InputError(describe_problems(tool_name, cls, raw, str(exc))) from None


# ---------------------------------------------------------------------------------------
# Bash


class BashInput(Input):
    command: Annotated[str, Meta(min_length=1, description="The command to execute")]
    timeout: Annotated[float, Meta(description="Optional timeout in milliseconds (max 600000)")] | (
        UnsetType
    ) = UNSET
    description: (
        Annotated[
            str,
            Meta(
                description="Clear, concise description of what this command does in 5-10 "
                "words, in active voice."
            ),
        ]
        | UnsetType
    ) = UNSET
    run_in_background: (
        Annotated[
            bool,
            Meta(
                description="Set to true to run this command in the background. The result "
                "gives a shell id; read its new output with BashOutput (or TaskOutput) and stop "
                "it with KillShell (or TaskStop)."
            ),
        ]
        | UnsetType
    ) = UNSET
    dangerouslyDisableSandbox: (
        Annotated[
            bool,
            Meta(
                description="Set to true to run this command outside the sandbox (when one "
                "is configured); the permission rules still apply."
            ),
        ]
        | UnsetType
    ) = UNSET


# ---------------------------------------------------------------------------------------
# Files


class ReadInput(Input):
    file_path: Annotated[str, Meta(description="The absolute path to the file to read")]
    offset: (
        Annotated[
            int,
            Meta(
                description="The line number to start reading from; a negative number counts "
                "from the end (-20: the last 20 lines). Only provide if the file is too large "
                "to read at once"
            ),
        ]
        | UnsetType
    ) = UNSET
    limit: (
        Annotated[
            int,
            Meta(
                description="The number of lines to read. Only provide if the file is too "
                "large to read at once."
            ),
        ]
        | UnsetType
    ) = UNSET


class WriteInput(Input):
    file_path: Annotated[
        str,
        Meta(description="The absolute path to the file to write (must be absolute, not relative)"),
    ]
    content: Annotated[str, Meta(description="The content to write to the file")]


class EditInput(Input):
    file_path: Annotated[str, Meta(description="The absolute path to the file to modify")]
    old_string: Annotated[str, Meta(description="The text to replace")]
    new_string: Annotated[
        str, Meta(description="The text to replace it with (must be different from old_string)")
    ]
    replace_all: Annotated[
        bool, Meta(description="Replace all occurrences of old_string (default false)")
    ] = False


class GlobInput(Input):
    pattern: Annotated[str, Meta(description="The glob pattern to match files against")]
    path: (
        Annotated[
            str,
            Meta(
                description="The directory to search in. If not specified, the current "
                "working directory will be used. Omit this field to use the default directory; "
                'do not pass "undefined" or "null". Must be a valid directory path if provided.'
            ),
        ]
        | UnsetType
    ) = UNSET


_CONTENT_ONLY = 'Requires output_mode: "content", ignored otherwise.'


class GrepInput(Input):
    pattern: Annotated[
        str, Meta(description="The regular expression pattern to search for in file contents")
    ]
    path: (
        Annotated[
            str,
            Meta(
                description="File or directory to search in (rg PATH). Defaults to current "
                "working directory."
            ),
        ]
        | UnsetType
    ) = UNSET
    glob: (
        Annotated[
            str,
            Meta(
                description='Glob pattern to filter files (e.g. "*.js", "*.{ts,tsx}") - maps '
                "to rg --glob"
            ),
        ]
        | UnsetType
    ) = UNSET
    output_mode: (
        Annotated[
            Literal["content", "files_with_matches", "count"],
            Meta(
                description='Output mode: "content" shows matching lines (supports -A/-B/-C '
                'context, -n line numbers, head_limit), "files_with_matches" shows file paths '
                '(supports head_limit), "count" shows match counts (supports head_limit). '
                'Defaults to "files_with_matches".'
            ),
        ]
        | UnsetType
    ) = UNSET
    before: (
        Annotated[
            int, Meta(ge=0, description=f"Lines to show before each match (rg -B). {_CONTENT_ONLY}")
        ]
        | UnsetType
    ) = field(default=UNSET, name="-B")
    after: (
        Annotated[
            int, Meta(ge=0, description=f"Lines to show after each match (rg -A). {_CONTENT_ONLY}")
        ]
        | UnsetType
    ) = field(default=UNSET, name="-A")
    around: (
        Annotated[
            int,
            Meta(
                ge=0,
                description="Lines to show before and after each match (rg -C); overrides -A "
                f"and -B. {_CONTENT_ONLY}",
            ),
        ]
        | UnsetType
    ) = field(default=UNSET, name="-C")
    context: (
        Annotated[
            int,
            Meta(
                ge=0,
                description=f"The same as -C, and takes precedence over it. {_CONTENT_ONLY}",
            ),
        ]
        | UnsetType
    ) = UNSET
    line_numbers: (
        Annotated[
            bool,
            Meta(description=f"Show line numbers in output (rg -n), default true. {_CONTENT_ONLY}"),
        ]
        | UnsetType
    ) = field(default=UNSET, name="-n")
    case_insensitive: Annotated[bool, Meta(description="Case insensitive search (rg -i)")] | (
        UnsetType
    ) = field(default=UNSET, name="-i")
    type: (
        Annotated[
            str,
            Meta(
                description="File type to search (rg --type). Common types: js, py, rust, go, "
                "java, etc. More efficient than include for standard file types."
            ),
        ]
        | UnsetType
    ) = UNSET
    head_limit: (
        Annotated[
            int,
            Meta(
                ge=0,
                description='Limit output to the first N lines/entries, like "| head -N", '
                "after skipping offset. Works across all output modes. 0 means no limit.",
            ),
        ]
        | UnsetType
    ) = UNSET
    offset: (
        Annotated[
            int,
            Meta(
                ge=0,
                description="Skip the first N lines/entries before applying head_limit, like "
                '"| tail -n +N | head -N". Works across all output modes. Defaults to 0.',
            ),
        ]
        | UnsetType
    ) = UNSET
    multiline: (
        Annotated[
            bool,
            Meta(
                description="Enable multiline mode where . matches newlines and patterns can "
                "span lines (rg -U --multiline-dotall). Default: false."
            ),
        ]
        | UnsetType
    ) = UNSET


# ---------------------------------------------------------------------------------------
# Background shells (Claude Code 1.0.x-2.0.x: BashOutput, KillBash -> KillShell; 2.1.x:
# TaskOutput, TaskStop)


class BashOutputInput(Input):
    bash_id: Annotated[
        str, Meta(description="The ID of the background shell to retrieve output from")
    ]
    filter: (
        Annotated[
            str,
            Meta(
                description="Optional regular expression: only new lines that match it are "
                "returned; lines that do not match are passed over and cannot be read again."
            ),
        ]
        | UnsetType
    ) = UNSET


class TaskOutputInput(Input):
    task_id: Annotated[str, Meta(description="The ID of the task to get output from")]
    block: Annotated[
        bool, Meta(description="Whether to wait for the task to finish (default true)")
    ] = True
    timeout: Annotated[
        float,
        Meta(ge=0, le=600_000, description="How long to wait when blocking, in milliseconds"),
    ] = 30_000


class KillShellInput(Input):
    shell_id: Annotated[str, Meta(description="The ID of the background shell to kill")]


class TaskStopInput(Input):
    task_id: Annotated[str, Meta(description="The ID of the background task to stop")] | (
        UnsetType
    ) = UNSET
    shell_id: Annotated[str, Meta(description="Deprecated: use task_id instead")] | (
        UnsetType
    ) = UNSET


# ---------------------------------------------------------------------------------------
# Served by the host (they need a search service or a model): WebSearch, Task, Agent


class WebSearchInput(Input):
    query: Annotated[str, Meta(min_length=2, description="The search query to use")]
    allowed_domains: (
        Annotated[list[str], Meta(description="Only include results from these domains")]
        | UnsetType
    ) = UNSET
    blocked_domains: (
        Annotated[list[str], Meta(description="Never include results from these domains")]
        | UnsetType
    ) = UNSET


_AGENT_DESCRIPTION = "A short (3-5 word) description of the task"
_AGENT_PROMPT = "The task for the agent to perform"
_AGENT_TYPE = "The type of specialized agent to use for this task"
_AGENT_MODEL = "Optional model for this agent; it inherits the parent's when left out"
_AGENT_RESUME = "The id of an earlier agent to resume, continuing its transcript"
_AGENT_BACKGROUND = "Set to true to run the agent in the background"


class TaskInput(Input):
    """Claude Code's Task tool (1.0.x-2.x); ``Agent`` is its later name."""

    description: Annotated[str, Meta(description=_AGENT_DESCRIPTION)]
    prompt: Annotated[str, Meta(description=_AGENT_PROMPT)]
    subagent_type: Annotated[str, Meta(description=_AGENT_TYPE)]
    model: (
        Annotated[Literal["sonnet", "opus", "haiku"], Meta(description=_AGENT_MODEL)] | UnsetType
    ) = UNSET
    resume: Annotated[str, Meta(description=_AGENT_RESUME)] | UnsetType = UNSET
    run_in_background: Annotated[bool, Meta(description=_AGENT_BACKGROUND)] | UnsetType = UNSET


class AgentInput(Input):
    """Claude Code's Agent tool (the Task tool renamed, 2.1.x): ``subagent_type`` may be left
    out (a general-purpose agent), and it takes a turn limit and an isolation mode."""

    description: Annotated[str, Meta(description=_AGENT_DESCRIPTION)]
    prompt: Annotated[str, Meta(description=_AGENT_PROMPT)]
    subagent_type: Annotated[str, Meta(description=_AGENT_TYPE)] | UnsetType = UNSET
    model: (
        Annotated[Literal["sonnet", "opus", "haiku"], Meta(description=_AGENT_MODEL)] | UnsetType
    ) = UNSET
    resume: Annotated[str, Meta(description=_AGENT_RESUME)] | UnsetType = UNSET
    run_in_background: Annotated[bool, Meta(description=_AGENT_BACKGROUND)] | UnsetType = UNSET
    max_turns: (
        Annotated[int, Meta(ge=1, description="The most agentic turns the agent may take")]
        | UnsetType
    ) = UNSET
    isolation: (
        Annotated[
            Literal["worktree"],
            Meta(description='"worktree": the agent works in a temporary git worktree'),
        ]
        | UnsetType
    ) = UNSET


# ---------------------------------------------------------------------------------------
# MultiEdit, NotebookEdit, LS (docs/builtins.md)


class MultiEditEntry(Input):
    old_string: Annotated[str, Meta(description="The text to replace")]
    new_string: Annotated[str, Meta(description="The text to replace it with")]
    replace_all: Annotated[
        bool, Meta(description="Replace all occurrences of old_string (default false).")
    ] = False


class MultiEditInput(Input):
    file_path: Annotated[str, Meta(description="The absolute path to the file to modify")]
    edits: Annotated[
        list[MultiEditEntry],
        Meta(
            min_length=1,
            description="Array of edit operations to perform sequentially on the file",
        ),
    ]


class NotebookEditInput(Input, kw_only=True):
    notebook_path: Annotated[
        str,
        Meta(
            description="The absolute path to the Jupyter notebook file to edit (must be "
            "absolute, not relative)"
        ),
    ]
    cell_id: (
        Annotated[
            str,
            Meta(
                description="The ID of the cell to edit. When inserting a new cell, the new "
                "cell will be inserted after the cell with this ID, or at the beginning if not "
                "specified."
            ),
        ]
        | UnsetType
    ) = UNSET
    new_source: Annotated[str, Meta(description="The new source for the cell")]
    cell_type: (
        Annotated[
            Literal["code", "markdown"],
            Meta(
                description="The type of the cell (code or markdown). If not specified, it "
                "defaults to the current cell type. If using edit_mode=insert, this is required."
            ),
        ]
        | UnsetType
    ) = UNSET
    edit_mode: (
        Annotated[
            Literal["replace", "insert", "delete"],
            Meta(
                description="The type of edit to make (replace, insert, delete). Defaults to "
                "replace."
            ),
        ]
        | UnsetType
    ) = UNSET


class LSInput(Input):
    path: Annotated[
        str,
        Meta(
            description="The absolute path to the directory to list (must be absolute, not "
            "relative)"
        ),
    ]
    ignore: Annotated[list[str], Meta(description="List of glob patterns to ignore")] | (
        UnsetType
    ) = UNSET


# ---------------------------------------------------------------------------------------
# TodoWrite, WebFetch


class TodoItem(LenientInput):
    """A task: content and status, with activeForm (or, as older clients send, id and
    priority)."""

    # The docstring is the item schema's description, seen by the model. Claude Code sends
    # activeForm from 1.0.9x on and id/priority up to 1.0.8x; the tool requires one of them.

    content: Annotated[str, Meta(min_length=1, description="The task, in the imperative form")]
    status: Literal["pending", "in_progress", "completed"]
    activeForm: (
        Annotated[
            str,
            Meta(
                min_length=1,
                description="The task in the present continuous form (e.g. Running tests)",
            ),
        ]
        | UnsetType
    ) = UNSET
    id: Annotated[str, Meta(description="The item's id (older clients)")] | UnsetType = UNSET
    priority: (
        Annotated[
            Literal["high", "medium", "low"],
            Meta(description="The item's priority (older clients)"),
        ]
        | UnsetType
    ) = UNSET


class TodoWriteInput(Input):
    todos: Annotated[list[TodoItem], Meta(description="The updated todo list")]


class WebFetchInput(Input):
    url: Annotated[
        str,
        Meta(description="The URL to fetch content from", extra_json_schema={"format": "uri"}),
    ]
    prompt: Annotated[str, Meta(description="The prompt to run on the fetched content")]


INPUTS: dict[str, type[msgspec.Struct]] = {
    "Bash": BashInput,
    "Read": ReadInput,
    "Write": WriteInput,
    "Edit": EditInput,
    "Glob": GlobInput,
    "Grep": GrepInput,
    "BashOutput": BashOutputInput,
    "TaskOutput": TaskOutputInput,
    "KillShell": KillShellInput,
    "TaskStop": TaskStopInput,
    "WebSearch": WebSearchInput,
    "Task": TaskInput,
    "Agent": AgentInput,
    "MultiEdit": MultiEditInput,
    "NotebookEdit": NotebookEditInput,
    "LS": LSInput,
    "TodoWrite": TodoWriteInput,
    "WebFetch": WebFetchInput,
}
