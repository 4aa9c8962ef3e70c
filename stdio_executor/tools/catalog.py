"""The built-in tools as the daemon announces them, and the registry that finds a tool.

Owns: each built-in's name, description, aliases, safety class, interrupt behaviour and size
limit; and ``ToolRegistry``, which resolves a name or alias to a spec and loads the
implementation on first use.
Must not: import an implementation at start-up: the ``ready`` line is built from
this module and ``schemas.json`` alone.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable

import msgspec

from .base import FileAccess, Tool, ToolSpec
from .schemas import load as load_schemas

__all__ = ["HOST_SERVED", "ToolRegistry", "builtin_specs", "delegable_spec", "implementation_of"]

_BUILTINS: tuple[tuple[str, str, str, str, int, tuple[str, ...], str], ...] = (
    (
        "Bash",
        "Runs a bash command in the session's working directory and returns its combined "
        "stdout and stderr. `cd` persists into later calls. Commands that only read (ls, cat, "
        "grep, git status, ...) run in parallel with other reads; anything else runs alone. "
        "A non-zero exit is an error, except exit 1 of grep/rg/diff/cmp/test (nothing found). "
        "Default timeout 2 minutes, at most 10. Large output is saved to a file and previewed.",
        "per_input",
        "cancel",
        30_000,
        (),
        "stdio_executor.tools.bash:BashTool",
    ),
    (
        "Read",
        "Reads a file. Returns numbered lines (like `cat -n`), the first 2000 lines unless "
        "offset/limit say otherwise; lines longer than 2000 characters are cut. Images (png, "
        "jpeg, gif, webp) come back as images. Read a file before you Write or Edit it.",
        "always",
        "block",
        100_000,
        ("FileRead",),
        "stdio_executor.tools.files:ReadTool",
    ),
    (
        "Write",
        "Writes a file, creating parent directories. An existing file must have been Read in "
        "this session first and must not have changed since.",
        "never",
        "block",
        100_000,
        ("FileWrite",),
        "stdio_executor.tools.files:WriteTool",
    ),
    (
        "Edit",
        "Replaces text in a file. old_string must occur exactly once unless replace_all is "
        "true. The file must have been Read in this session first and must not have changed "
        "since. Line endings and encoding are preserved.",
        "never",
        "block",
        100_000,
        ("FileEdit",),
        "stdio_executor.tools.files:EditTool",
    ),
    (
        "Glob",
        "Finds files by glob pattern (e.g. `**/*.py`), newest first by modification time.",
        "always",
        "block",
        100_000,
        (),
        "stdio_executor.tools.files:GlobTool",
    ),
    (
        "Grep",
        "Searches file contents with ripgrep. output_mode: files_with_matches (default), "
        "content (with -A/-B/-C/-n), or count. Filter with glob or type; -i for case "
        "insensitive; multiline for patterns spanning lines; head_limit caps the output.",
        "always",
        "block",
        20_000,
        (),
        "stdio_executor.tools.files:GrepTool",
    ),
    (
        "MultiEdit",
        "Makes several replacements in one file in one call. Each entry of `edits` (old_string, "
        "new_string, replace_all, as for Edit) applies to the text the entries before it left; "
        "if any entry fails, nothing is written. The file must have been Read in this session "
        "first and must not have changed since. An empty old_string in the first entry creates "
        "a new file.",
        "never",
        "block",
        100_000,
        (),
        "stdio_executor.tools.files:MultiEditTool",
    ),
    (
        "NotebookEdit",
        "Changes one cell of a Jupyter notebook (.ipynb): replaces its source (edit_mode "
        "replace, the default), inserts a new cell after the cell cell_id names (at the top "
        "without cell_id; cell_type is then required), or deletes it. cell_id is a cell's id, "
        "or cell-N for the cell at 0-based index N. Replacing a code cell clears its outputs. "
        "Read the notebook first.",
        "never",
        "block",
        100_000,
        (),
        "stdio_executor.tools.files:NotebookEditTool",
    ),
    (
        "LS",
        "Lists the files and directories under an absolute path as an indented tree "
        "(directories end in /), leaving out hidden entries and those matching the glob "
        "patterns in `ignore`. Prefer Glob and Grep when you know what you are looking for.",
        "always",
        "block",
        100_000,
        (),
        "stdio_executor.tools.files:LSTool",
    ),
    (
        "TodoWrite",
        "Replaces the session's task list with `todos`, to plan multi-step work and show "
        "progress. Each item has content, a status (pending, in_progress or completed) and "
        "activeForm, the task in the present continuous (older clients sent id and priority "
        "instead). Keep exactly one task in_progress while you work; mark tasks completed as "
        "soon as they are done.",
        "never",
        "block",
        10_000,
        (),
        "stdio_executor.tools.todo:TodoWriteTool",
    ),
    (
        "WebFetch",
        "Fetches a URL and returns its content as Markdown (HTML converted, other text as it "
        "is), with your prompt restated above it: answer the prompt from that content. http:// "
        "is upgraded to https://. A redirect to another host is not followed; the result names "
        "the URL to fetch instead. Large pages are saved to a file and previewed. Each domain "
        "needs permission.",
        "always",
        "block",
        100_000,
        (),
        "stdio_executor.tools.web:WebFetchTool",
    ),
    (
        "BashOutput",
        "Returns what a background shell (Bash with run_in_background) printed since the "
        "last time its output was read, with its status (running, completed, failed, "
        "killed) and, once it has ended, its exit code. filter: a regular expression; only "
        "matching lines are returned, and the others are passed over for good.",
        "always",
        "block",
        30_000,
        (),
        "stdio_executor.tools.shells:BashOutputTool",
    ),
    (
        "TaskOutput",
        "Returns the new output of a background task (a Bash command started with "
        "run_in_background), its status and exit code. With block (the default) it first "
        "waits for the task to finish, up to timeout milliseconds (default 30000, at most "
        "600000); retrieval_status says whether it finished (success), is still running "
        "after the wait (timeout) or was not waited for (not_ready).",
        "always",
        "cancel",
        30_000,
        (),
        "stdio_executor.tools.shells:TaskOutputTool",
    ),
    (
        "KillShell",
        "Stops a background shell by its id, with every process it started. Fails for an "
        "unknown id or a shell that is no longer running.",
        "always",
        "block",
        30_000,
        ("KillBash",),
        "stdio_executor.tools.shells:KillShellTool",
    ),
    (
        "TaskStop",
        "Stops a background task by its task_id (shell_id is the older name), with every "
        "process it started. Fails for an unknown id or a task that is no longer running.",
        "always",
        "block",
        30_000,
        (),
        "stdio_executor.tools.shells:TaskStopTool",
    ),
)

# Facts the permission layer reads (tools/base.py ``ToolSpec``): the kind of file access and
# the input key naming the path, or how modes treat a tool that touches no file.
_FILE_ACCESS: dict[str, tuple[FileAccess, str]] = {
    "Read": ("read", "file_path"),
    "Glob": ("read", "path"),
    "Grep": ("read", "path"),
    "LS": ("read", "path"),
    "Write": ("edit", "file_path"),
    "Edit": ("edit", "file_path"),
    "MultiEdit": ("edit", "file_path"),
    "NotebookEdit": ("edit", "notebook_path"),
}
_PERMISSION_READ_ONLY = {"TodoWrite": True, "WebFetch": False}


def builtin_specs(enabled: Iterable[str] | None = None) -> list[ToolSpec]:
    schemas = load_schemas()
    wanted = set(enabled) if enabled is not None else None
    return [
        ToolSpec(
            name=name,
            description=description,
            input_schema=schemas[name],
            read_only=read_only,  # type: ignore[arg-type]
            interrupt_behavior=interrupt,  # type: ignore[arg-type]
            max_result_bytes=limit,
            aliases=aliases,
            cancels_siblings=name == "Bash",
            file_access=_FILE_ACCESS[name][0] if name in _FILE_ACCESS else None,
            path_field=_FILE_ACCESS[name][1] if name in _FILE_ACCESS else None,
            permission_read_only=_PERMISSION_READ_ONLY.get(name),
        )
        for name, description, read_only, interrupt, limit, aliases, _ in _BUILTINS
        if wanted is None or name in wanted
    ]


_IMPLEMENTATIONS = {name: impl for name, *_, impl in _BUILTINS}


def implementation_of(name: str) -> str:
    """Where a built-in's implementation lives (``module:Class``), to load it again after
    a host gave back a built-in it had taken over."""
    return _IMPLEMENTATIONS[name]


# Claude Code's tools that need a model or a search service, which only a host has. The
# daemon knows their inputs and scheduling facts; they are enabled only when a host says it
# serves them (--host-builtins, or a register_tool naming only the tool), and are then
# validated, permission-checked and scheduled like built-ins and run as host tools.
_HOST_SERVED: tuple[tuple[str, str, str, str, int], ...] = (
    (
        "WebSearch",
        "Searches the web and returns the results (titles, links and what the pages say) "
        "for a query; allowed_domains / blocked_domains narrow them to, or keep them from, "
        "some sites. For information newer than the model's training.",
        "always",
        "cancel",
        100_000,
    ),
    (
        "Task",
        "Hands a self-contained task to a sub-agent of the given subagent_type, which works "
        "on it with its own tools and context and answers once with a report. Several can "
        "run at once. description: 3-5 words; prompt: everything the agent needs to know.",
        "always",
        "cancel",
        100_000,
    ),
    (
        "Agent",
        "Starts a sub-agent (general-purpose unless subagent_type says otherwise) on a "
        "self-contained task; it works with its own tools and context and answers once with "
        "a report. Several can run at once; run_in_background returns at once instead.",
        "always",
        "cancel",
        100_000,
    ),
)
HOST_SERVED = frozenset(name for name, *_ in _HOST_SERVED)


def delegable_spec(name: str) -> ToolSpec | None:
    """The spec a host serves a built-in under: a host-served tool, or any built-in (by
    name or alias) that a host takes over; None for a name Claude Code has no tool for."""
    for entry in _HOST_SERVED:
        if entry[0] == name:
            served, description, read_only, interrupt, limit = entry
            return ToolSpec(
                name=served,
                description=description,
                input_schema=load_schemas()[served],
                read_only=read_only,  # type: ignore[arg-type]
                interrupt_behavior=interrupt,  # type: ignore[arg-type]
                max_result_bytes=limit,
                source="host",
            )
    for spec in builtin_specs():
        if name == spec.name or name in spec.aliases:
            return msgspec.structs.replace(spec, source="host")
    return None


class _Entry(msgspec.Struct):
    spec: ToolSpec
    impl: str | Tool


class ToolRegistry:
    """Name (or alias) -> tool, loading an implementation the first time it is needed."""

    def __init__(self, specs: Iterable[ToolSpec] = ()) -> None:
        self._entries: dict[str, _Entry] = {}
        self._names: dict[str, str] = {}
        for spec in specs:
            self.add(spec, _IMPLEMENTATIONS[spec.name])

    def add(self, spec: ToolSpec, impl: str | Tool) -> None:
        self._entries[spec.name] = _Entry(spec, impl)
        self._names[spec.name] = spec.name
        for alias in spec.aliases:
            self._names[alias] = spec.name

    def remove(self, name: str) -> ToolSpec | None:
        """Drop a tool (host unregister, an MCP tool gone); calls already added keep it."""
        entry = self._entries.pop(name, None)
        if entry is None:
            return None
        for alias in (entry.spec.name, *entry.spec.aliases):
            if self._names.get(alias) == name:
                del self._names[alias]
        return entry.spec

    def spec_of(self, name: str) -> ToolSpec | None:
        """The spec a name or alias resolves to, without loading the implementation."""
        canonical = self._names.get(name)
        return self._entries[canonical].spec if canonical is not None else None

    @property
    def specs(self) -> list[ToolSpec]:
        return [entry.spec for entry in self._entries.values()]

    def get(self, name: str) -> Tool | None:
        canonical = self._names.get(name)
        if canonical is None:
            return None
        entry = self._entries[canonical]
        impl = entry.impl
        # Not ``isinstance(impl, Tool)``: an ABC's check is a Python-level call, per call.
        if not isinstance(impl, str):
            return impl
        module, _, attr = impl.partition(":")
        tool: Tool = getattr(importlib.import_module(module), attr)(entry.spec)
        entry.impl = tool
        return tool

    def warm(self) -> None:
        """Load every implementation ahead of the first call."""
        for name in list(self._entries):
            self.get(name)
