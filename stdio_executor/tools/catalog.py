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
from dataclasses import dataclass

from .base import Tool, ToolSpec
from .schemas import load as load_schemas

__all__ = ["ToolRegistry", "builtin_specs"]

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


# The input field naming the file each editing built-in changes (ToolSpec.edits_path):
# permissions apply Edit rules, acceptEdits and control-file protection by this fact. A new
# tool that edits a file adds its field here (NotebookEdit: "notebook_path").
_EDITS_PATH = {"Write": "file_path", "Edit": "file_path"}


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
            edits_path=_EDITS_PATH.get(name),
        )
        for name, description, read_only, interrupt, limit, aliases, _ in _BUILTINS
        if wanted is None or name in wanted
    ]


_IMPLEMENTATIONS = {name: impl for name, *_, impl in _BUILTINS}


@dataclass(slots=True)
class _Entry:
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
        if isinstance(entry.impl, Tool):
            return entry.impl
        module, _, attr = entry.impl.partition(":")
        tool: Tool = getattr(importlib.import_module(module), attr)(entry.spec)
        entry.impl = tool
        return tool

    def warm(self) -> None:
        """Load every implementation ahead of the first call."""
        for name in list(self._entries):
            self.get(name)
