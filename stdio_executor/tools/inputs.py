"""Input models of the built-in tools, with Claude Code's field names and types.

Owns: one pydantic model per built-in tool. They validate a ``tool_use`` block's ``input``
once, and they are the source of the published ``input_schema`` (pre-generated into
``schemas.json`` so the ``ready`` line never waits for pydantic; a test keeps them in step).
Must not: be imported before the first tool call (pydantic costs ~100 ms of start-up).

Unknown fields are ignored, not refused: recorded sessions from other Claude Code versions
carry fields this version does not know (``dangerouslyDisableSandbox``, ``pages``...).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "MODELS",
    "BashInput",
    "EditInput",
    "GlobInput",
    "GrepInput",
    "LSInput",
    "MultiEditInput",
    "NotebookEditInput",
    "ReadInput",
    "TodoWriteInput",
    "WebFetchInput",
    "WriteInput",
]


class _Input(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True, frozen=True)


class BashInput(_Input):
    command: str = Field(min_length=1, description="The command to execute")
    timeout: float | None = Field(
        default=None, description="Optional timeout in milliseconds (max 600000)"
    )
    description: str | None = Field(
        default=None,
        description=(
            "Clear, concise description of what this command does in 5-10 words, in active voice."
        ),
    )
    run_in_background: bool | None = Field(
        default=None,
        description=(
            "Set to true to run this command in the background. Its output goes to a file "
            "whose path the result gives; read it later with the Read tool."
        ),
    )


class ReadInput(_Input):
    file_path: str = Field(description="The absolute path to the file to read")
    offset: int | None = Field(
        default=None,
        description=(
            "The line number to start reading from. "
            "Only provide if the file is too large to read at once"
        ),
    )
    limit: int | None = Field(
        default=None,
        description=(
            "The number of lines to read. Only provide if the file is too large to read at once."
        ),
    )


class WriteInput(_Input):
    file_path: str = Field(
        description="The absolute path to the file to write (must be absolute, not relative)"
    )
    content: str = Field(description="The content to write to the file")


class EditInput(_Input):
    file_path: str = Field(description="The absolute path to the file to modify")
    old_string: str = Field(description="The text to replace")
    new_string: str = Field(
        description="The text to replace it with (must be different from old_string)"
    )
    replace_all: bool = Field(
        default=False, description="Replace all occurrences of old_string (default false)"
    )


class GlobInput(_Input):
    pattern: str = Field(description="The glob pattern to match files against")
    path: str | None = Field(
        default=None,
        description=(
            "The directory to search in. If not specified, the current working directory "
            "will be used. Omit this field to use the default directory; do not pass "
            '"undefined" or "null". Must be a valid directory path if provided.'
        ),
    )


class GrepInput(_Input):
    pattern: str = Field(
        description="The regular expression pattern to search for in file contents"
    )
    path: str | None = Field(
        default=None,
        description=(
            "File or directory to search in (rg PATH). Defaults to current working directory."
        ),
    )
    glob: str | None = Field(
        default=None,
        description=(
            'Glob pattern to filter files (e.g. "*.js", "*.{ts,tsx}") - maps to rg --glob'
        ),
    )
    output_mode: Literal["content", "files_with_matches", "count"] | None = Field(
        default=None,
        description=(
            'Output mode: "content" shows matching lines (supports -A/-B/-C context, -n line '
            'numbers, head_limit), "files_with_matches" shows file paths (supports head_limit), '
            '"count" shows match counts (supports head_limit). Defaults to "files_with_matches".'
        ),
    )
    before: int | None = Field(
        default=None,
        alias="-B",
        description=(
            'Number of lines to show before each match (rg -B). Requires output_mode: "content".'
        ),
    )
    after: int | None = Field(
        default=None,
        alias="-A",
        description=(
            'Number of lines to show after each match (rg -A). Requires output_mode: "content".'
        ),
    )
    context: int | None = Field(
        default=None,
        alias="-C",
        description=(
            "Number of lines to show before and after each match (rg -C). "
            'Requires output_mode: "content".'
        ),
    )
    line_numbers: bool | None = Field(
        default=None,
        alias="-n",
        description='Show line numbers in output (rg -n). Requires output_mode: "content".',
    )
    case_insensitive: bool | None = Field(
        default=None, alias="-i", description="Case insensitive search (rg -i)"
    )
    type: str | None = Field(
        default=None,
        description=(
            "File type to search (rg --type). Common types: js, py, rust, go, java, etc. "
            "More efficient than include for standard file types."
        ),
    )
    head_limit: int | None = Field(
        default=None,
        description=(
            'Limit output to first N lines/entries, equivalent to "| head -N". Works across all '
            "output modes."
        ),
    )
    multiline: bool | None = Field(
        default=None,
        description=(
            "Enable multiline mode where . matches newlines and patterns can span lines "
            "(rg -U --multiline-dotall). Default: false."
        ),
    )


class MultiEditEntry(_Input):
    old_string: str = Field(description="The text to replace")
    new_string: str = Field(description="The text to replace it with")
    replace_all: bool = Field(
        default=False, description="Replace all occurrences of old_string (default false)."
    )


class MultiEditInput(_Input):
    file_path: str = Field(description="The absolute path to the file to modify")
    edits: list[MultiEditEntry] = Field(
        min_length=1,
        description="Array of edit operations to perform sequentially on the file",
    )


class NotebookEditInput(_Input):
    notebook_path: str = Field(
        description=(
            "The absolute path to the Jupyter notebook file to edit (must be absolute, not "
            "relative)"
        )
    )
    cell_id: str | None = Field(
        default=None,
        description=(
            "The ID of the cell to edit. When inserting a new cell, the new cell will be "
            "inserted after the cell with this ID, or at the beginning if not specified."
        ),
    )
    new_source: str = Field(description="The new source for the cell")
    cell_type: Literal["code", "markdown"] | None = Field(
        default=None,
        description=(
            "The type of the cell (code or markdown). If not specified, it defaults to the "
            "current cell type. If using edit_mode=insert, this is required."
        ),
    )
    edit_mode: Literal["replace", "insert", "delete"] | None = Field(
        default=None,
        description="The type of edit to make (replace, insert, delete). Defaults to replace.",
    )


class LSInput(_Input):
    path: str = Field(
        description="The absolute path to the directory to list (must be absolute, not relative)"
    )
    ignore: list[str] | None = Field(default=None, description="List of glob patterns to ignore")


class TodoItem(_Input):
    content: str = Field(min_length=1, description="The task, in the imperative form")
    status: Literal["pending", "in_progress", "completed"]
    activeForm: str | None = Field(
        default=None,
        min_length=1,
        description="The task in the present continuous form (e.g. Running tests)",
    )
    # The item shape of Claude Code up to 1.0.8x: an id and a priority, no activeForm.
    id: str | None = Field(default=None, description="The item's id (older clients)")
    priority: Literal["high", "medium", "low"] | None = Field(
        default=None, description="The item's priority (older clients)"
    )


class TodoWriteInput(_Input):
    todos: list[TodoItem] = Field(description="The updated todo list")


class WebFetchInput(_Input):
    url: str = Field(
        json_schema_extra={"format": "uri"}, description="The URL to fetch content from"
    )
    prompt: str = Field(description="The prompt to run on the fetched content")


MODELS: dict[str, type[_Input]] = {
    "Bash": BashInput,
    "Read": ReadInput,
    "Write": WriteInput,
    "Edit": EditInput,
    "Glob": GlobInput,
    "Grep": GrepInput,
    "MultiEdit": MultiEditInput,
    "NotebookEdit": NotebookEditInput,
    "LS": LSInput,
    "TodoWrite": TodoWriteInput,
    "WebFetch": WebFetchInput,
}
