"""State that outlives one tool call and belongs to the daemon's session.

Owns: the workspace root, where oversized results are spilled, the daemon's child
processes (``processes.ProcessRegistry``), the background jobs (``background.JobRegistry``),
the OS sandbox Bash runs in, what Read has seen (Write and Edit refuse to clobber a file the
model has not read, or that changed on disk since), and the model's task list (TodoWrite).
Must not: hold per-turn scheduling state (that is the core's).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import msgspec

from ..private_dir import private_dir
from ..processes import ProcessRegistry
from .background import JobRegistry
from .output import pin_directory

if TYPE_CHECKING:
    from ..sandbox.plan import Sandbox

__all__ = ["FileStamp", "Session"]


class FileStamp(msgspec.Struct, frozen=True):
    mtime_ns: int
    size: int

    @classmethod
    def of(cls, st: os.stat_result) -> FileStamp:
        return cls(st.st_mtime_ns, st.st_size)


class Session:
    """One per daemon. A plain class: defining a dataclass costs ~0.5 ms at import, on the
    way to the first call (bench/NOTES.md, start-up)."""

    __slots__ = (
        "_spill_count",
        "_spill_ready",
        "hidden",
        "jobs",
        "processes",
        "read_files",
        "sandbox",
        "session_id",
        "spill_dir",
        "todos",
        "workspace",
    )

    def __init__(
        self,
        workspace: str,
        spill_dir: str,
        processes: ProcessRegistry,
        session_id: str = "",
        sandbox: Sandbox | None = None,
    ) -> None:
        self.workspace = workspace
        self.spill_dir = spill_dir
        self.processes = processes
        self.session_id = session_id
        self.read_files: dict[str, FileStamp] = {}
        # Per searching tool (Grep, Glob), the files deny rules hide from its results, by
        # path and identity (permissions.hidden.HiddenFiles); absent when no deny rule names
        # a path.
        self.hidden: dict[str, Any] = {}
        # Commands started with run_in_background (BashOutput, KillShell... find them here).
        self.jobs = JobRegistry(processes)
        # The OS sandbox Bash runs in (None: not on this system or not wanted).
        self.sandbox = sandbox
        # The task list of the last TodoWrite (its items as sent), replaced whole by each call.
        self.todos: list[dict[str, Any]] = []
        self._spill_ready = False
        self._spill_count = 0

    def spill_path(self, tool_use_id: str, suffix: str = ".txt", directory: str = "") -> str:
        """A fresh file name for this call's output (in ``directory`` instead of the spill
        directory, if given): unique even when ids repeat or collide after sanitising, so
        an earlier result's ``output_path`` is never overwritten. The file is made with
        ``output.create_new``, which never opens a name that exists."""
        if not self._spill_ready:
            parent = os.path.dirname(self.spill_dir.rstrip("/"))
            if os.path.basename(parent) == f"stdio-executor-{os.geteuid()}":
                os.close(private_dir(parent))  # the default place, one per user
            # Kept open: files are made in this directory even if its path is later made to
            # lead elsewhere (a --spill-dir inside the workspace can be renamed and replaced
            # by a symlink by any command).
            pin_directory(self.spill_dir, private_dir(self.spill_dir))
            self._spill_ready = True
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in tool_use_id)[:80]
        where = directory or self.spill_dir
        for _ in range(1000):
            self._spill_count += 1
            path = os.path.join(where, f"{self._spill_count:06d}-{safe or 'tool'}{suffix}")
            # A name taken already (a daemon that had this pid before left its files in the
            # default directory, which is never cleaned up; a host reusing --spill-dir;
            # something planted) is skipped; one taken after this look is still never
            # opened (create_new), and the result then says the output was not saved.
            if not os.path.lexists(path):
                break
        return path

    def remember_read(self, path: str, st: os.stat_result) -> None:
        self.read_files[path] = FileStamp.of(st)
