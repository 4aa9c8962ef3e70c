"""State that outlives one tool call and belongs to the daemon's session.

Owns: the workspace root, where oversized results are spilled, the daemon's child
processes (``processes.ProcessRegistry``), the background jobs (``background.JobRegistry``),
the OS sandbox Bash runs in, what Read has seen (Write and Edit refuse to clobber a file the
model has not read, or that changed on disk since), and the model's task list (TodoWrite).
Must not: hold per-turn scheduling state (that is the core's).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..processes import ProcessRegistry
from .background import JobRegistry

if TYPE_CHECKING:
    from ..sandbox.plan import Sandbox

__all__ = ["FileStamp", "Session"]


@dataclass(frozen=True, slots=True)
class FileStamp:
    mtime_ns: int
    size: int

    @classmethod
    def of(cls, st: os.stat_result) -> FileStamp:
        return cls(st.st_mtime_ns, st.st_size)


@dataclass(slots=True)
class Session:
    workspace: str
    spill_dir: str
    processes: ProcessRegistry
    session_id: str = ""
    read_files: dict[str, FileStamp] = field(default_factory=dict)
    # Per searching tool (Grep, Glob), the files deny rules hide from its results, by path
    # and identity (permissions.hidden.HiddenFiles); absent when no deny rule names a path.
    hidden: dict[str, Any] = field(default_factory=dict)
    # Commands started with run_in_background (BashOutput, KillShell... find them here).
    jobs: JobRegistry = field(init=False)
    # The OS sandbox Bash runs in (None: not on this system or not wanted).
    sandbox: Sandbox | None = None
    # The task list of the last TodoWrite (its items as sent), replaced whole by each call.
    todos: list[dict[str, Any]] = field(default_factory=list)
    _spill_ready: bool = False
    _spill_count: int = 0

    def __post_init__(self) -> None:
        self.jobs = JobRegistry(self.processes)

    def spill_path(self, tool_use_id: str, suffix: str = ".txt") -> str:
        """A fresh file name for this call's output: unique even when ids repeat or collide
        after sanitising, so an earlier result's ``output_path`` is never overwritten."""
        if not self._spill_ready:
            os.makedirs(self.spill_dir, mode=0o700, exist_ok=True)
            self._spill_ready = True
        self._spill_count += 1
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in tool_use_id)[:80]
        return os.path.join(self.spill_dir, f"{self._spill_count:06d}-{safe or 'tool'}{suffix}")

    def remember_read(self, path: str, st: os.stat_result) -> None:
        self.read_files[path] = FileStamp.of(st)
