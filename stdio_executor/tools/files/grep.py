"""The Grep tool: ripgrep over the workspace, in Claude Code's three output modes.

Owns: turning Grep's inputs into one ``rg`` command line (always ``--no-config``,
``--hidden`` with ``.git`` excluded, ``--max-columns 500``), running it in its own process
group (registered with the session's ``ProcessRegistry``, stopped as a group on cancel
with ``processes.supervised``), and shaping its output: matching lines (line numbers on by
default), files newest first, or per-file counts; ``head_limit`` cuts lines or entries.
Confinement: the searched path is opened first and, when the call was allowed because it
lay inside the workspace (``ToolContext.confine``), checked on that descriptor (a symlink
swapped in after the permission check leads to a denial). ripgrep never gets the path: a
directory is searched as ``.`` by a ripgrep started in it through the descriptor
(``/proc/PID/fd/N`` as its working directory), under the Landlock domain of
``rg_sandbox`` where the kernel has one (no read outside that directory, even through a
subdirectory swapped mid-walk); a regular file is ripgrep's standard input, the checked
inode reopened for reading (a FIFO or device is given as ``/proc/PID/fd/N``). The paths
ripgrep prints (``./x``, ``<stdin>``) are mapped back to the absolute paths the model sees
(``_renamer``): the output is what it was.
Deny rules (``session.hidden``, built by the permission gate): ripgrep is told to skip the
names it can match itself, and every result line is checked by path and file identity, so
no line or name of a denied file comes back, even through a hard link or symlink.
Must not: hold unbounded output: content streams into an ``OutputSink`` (which spills past
the size limit) and ripgrep is stopped as soon as ``head_limit`` lines have arrived.

Exit 1 from ripgrep means "no match" and is not an error; exit 2 is, unless ripgrep still
found something (it also exits 2 when one unreadable file was skipped).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar

import anyio
import anyio.abc
import anyio.to_thread
import msgspec

from ...confine import fd_path
from ...processes import spawn_group, stop_group, supervised
from ..base import Tool, ToolContext, ToolOutcome
from ..inputs import GrepInput, UnsetType, parse
from ..output import OutputSink
from . import rg_sandbox
from .confined_io import Outside, open_path
from .results import finish, outside_now, tool_error

__all__ = ["GrepTool", "ripgrep_path"]

Mode = Literal["content", "files_with_matches", "count"]
T = TypeVar("T")
E = TypeVar("E")

_STDERR_KEEP = 4_096
_CONTEXT_LINE = re.compile(rb"\d+-")
# Sorting this many paths by mtime is quick enough for the event loop's thread.
_INLINE_SORT_MAX = 64


class _GrepCall(msgspec.Struct, frozen=True):
    pattern: str
    path: str | None
    glob: str | None
    type: str | None
    mode: Mode
    before: int | None
    after: int | None
    line_numbers: bool
    case_insensitive: bool
    multiline: bool
    head_limit: int | None
    offset: int = 0


@functools.cache
def ripgrep_path() -> str | None:
    """The ``rg`` binary: on PATH, else next to the interpreter (where the ``ripgrep`` wheel
    installs it in a virtualenv whose ``bin`` is not on PATH)."""
    found = shutil.which("rg")
    if found:
        return found
    beside = os.path.join(os.path.dirname(sys.executable), "rg")
    return beside if os.access(beside, os.X_OK) else None


class GrepTool(Tool):
    def validate(self, raw: Mapping[str, Any]) -> _GrepCall:
        value = parse(self.spec.name, GrepInput, raw)  # negative numbers are refused there
        # Claude Code's precedence: `context`, then -C, then -A/-B on their own.
        around = _given(value.context)
        if around is None:
            around = _given(value.around)
        return _GrepCall(
            pattern=value.pattern,
            path=_given(value.path) or None,
            glob=_given(value.glob) or None,
            type=_given(value.type) or None,
            mode=_given(value.output_mode) or "files_with_matches",
            before=around if around is not None else _given(value.before),
            after=around if around is not None else _given(value.after),
            line_numbers=value.line_numbers is not False,
            case_insensitive=value.case_insensitive is True,
            multiline=value.multiline is True,
            head_limit=_given(value.head_limit) or None,  # 0 means no limit
            offset=_given(value.offset) or 0,
        )

    def describe(self, value: Any) -> str:
        call: _GrepCall = value
        return call.pattern

    async def run(self, value: Any, ctx: ToolContext) -> ToolOutcome:
        call: _GrepCall = value
        rg = ripgrep_path()
        if rg is None:
            return tool_error("ripgrep (rg) is not installed; Grep cannot run.")
        target = ctx.resolve(call.path) if call.path else ctx.cwd
        try:
            fd = open_path(target, ctx.confine)
        except Outside as outside:
            return outside_now(self.spec.name, target, outside.where)
        except FileNotFoundError:
            return tool_error(f"Path does not exist: {target}")
        except OSError as exc:
            return tool_error(f"ripgrep failed: {target}: {exc.strerror or exc}")
        # Kept open until ripgrep is gone: the child reaches what was checked through it.
        try:
            return await self._search(rg, call, target, fd, ctx)
        finally:
            os.close(fd)

    async def _search(
        self, rg: str, call: _GrepCall, target: str, fd: int, ctx: ToolContext
    ) -> ToolOutcome:
        hidden = ctx.session.hidden.get(self.spec.name)
        if hidden is not None:
            hidden = hidden.fresh()  # identities looked up again for this call
        collector = _Collector(call, self.spec.max_result_bytes, ctx, hidden)
        registry = ctx.session.processes
        through = _through(fd)  # the descriptor as a path the child can use, if any
        cwd: str | None = None
        setup = None
        searched = target
        stdin = subprocess.DEVNULL
        printed = b""  # the name ripgrep prints for a single file searched
        if through is None:
            pass  # no /proc: the path as checked, the best left
        elif stat.S_ISDIR(os.fstat(fd).st_mode):
            # ripgrep starts in the checked directory and searches ".": it never walks
            # the path again, and Landlock keeps its reads beneath it.
            cwd, searched = through, "."
            collector.rename = _renamer(b"./", target.rstrip("/") + "/")
            real = fd_path(fd)
            if real is not None:
                setup = await rg_sandbox.setup(registry, rg, real)
        elif stat.S_ISREG(os.fstat(fd).st_mode):
            # A file: ripgrep's standard input, our descriptor reopened for reading through
            # our own /proc (the very inode that was checked, no path walked again).
            stdin = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC | os.O_NOCTTY)
            searched, printed = "-", b"<stdin>"
        else:
            # A FIFO or a device: opened by ripgrep itself (a FIFO blocks until written),
            # through our descriptor's /proc name. A child in a user namespace of its own
            # may not follow it: then ripgrep fails to open it (docs/permissions.md).
            searched, printed = through, os.fsencode(through)
        if printed and call.mode != "content":  # content from one file names no file
            collector.rename = _renamer(printed, target)
        try:
            process = await spawn_group(
                registry,
                _command(rg, call, searched, hidden),
                stdin=stdin,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                setup=setup,
            )
        except OSError as exc:
            return tool_error(f"Could not start ripgrep: {exc}")
        finally:
            if stdin != subprocess.DEVNULL:
                os.close(stdin)  # the child has its own copy
        errors = bytearray()
        stopped = False
        async with supervised(process, registry), anyio.create_task_group() as tg:
            assert process.stdout is not None and process.stderr is not None
            tg.start_soon(_keep_head, process.stderr, errors)
            stopped = await _read_lines(process.stdout, collector.take)
            if stopped:  # head_limit reached: the rest is not wanted
                await stop_group(process)
            await process.wait()
        code = process.returncode
        if not stopped and code not in (0, 1) and not collector.found:
            if not await anyio.Path(target).exists():
                return tool_error(f"Path does not exist: {target}")
            message = errors.decode("utf-8", "replace").strip() or f"exit status {code}"
            return tool_error(f"ripgrep failed: {message}")
        outcome = await collector.result(stopped)
        return finish(outcome, self.spec, ctx)


def _through(fd: int) -> str | None:
    """``/proc/PID/fd/N``: our descriptor as a path another process (the spawner, ripgrep)
    can open, which leads to what it has open without walking any path again; None where
    there is no such ``/proc``."""
    pid = os.getpid()
    try:
        if os.readlink("/proc/self") != str(pid):  # a /proc of another PID namespace
            return None
    except OSError:
        return None
    return f"/proc/{pid}/fd/{fd}"


def _renamer(printed: bytes, target: str) -> Callable[[bytes], bytes]:
    """A line whose path starts with ``printed`` (what ripgrep was given) with ``target``
    there instead: the path the model asked about. Every line that names a file starts with
    its path; the others (``--`` between context groups) are kept as they are."""
    shown = os.fsencode(target)
    cut = len(printed)
    return lambda line: shown + line[cut:] if line.startswith(printed) else line


def _given(value: T | UnsetType) -> T | None:
    return None if isinstance(value, UnsetType) else value


def _command(rg: str, call: _GrepCall, target: str, hidden: Any = None) -> list[str]:
    args = [rg, "--no-config", "--hidden", "--glob", "!.git", "--max-columns", "500"]
    if hidden is not None:
        # Deny rules: ripgrep skips what it can itself; every result is checked again by
        # path and identity (_Collector). --null makes the path of a content line certain.
        args += hidden.rg_excludes()
        if call.mode == "content":
            args.append("--null")
    if call.mode == "files_with_matches":
        args.append("--files-with-matches")
    elif call.mode == "count":
        args += ["--count", "--with-filename"]
    else:
        if call.line_numbers:
            args.append("--line-number")
        if call.before:
            args += ["--before-context", str(call.before)]
        if call.after:
            args += ["--after-context", str(call.after)]
    if call.case_insensitive:
        args.append("--ignore-case")
    if call.multiline:
        args += ["--multiline", "--multiline-dotall"]
    if call.type:
        args += ["--type", call.type]
    if call.glob:
        # Several globs may be given separated by spaces: "*.ts *.tsx".
        for glob in call.glob.split():
            args += ["--glob", glob]
    # -e: a pattern starting with "-" is still a pattern; "--": so is a path.
    args += ["--regexp", call.pattern, "--", target]
    return args


async def _read_lines(stream: anyio.abc.ByteReceiveStream, take: Callable[[bytes], bool]) -> bool:
    """Feed each output line to ``take`` until EOF or until it returns True (enough)."""
    pending = b""
    while True:
        try:
            chunk = await stream.receive(65536)
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            break
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            if take(line):
                return True
    return bool(pending) and take(pending)


async def _keep_head(stream: anyio.abc.ByteReceiveStream, into: bytearray) -> None:
    """Read a stream to its end, keeping its first bytes (ripgrep's error messages)."""
    while True:
        try:
            chunk = await stream.receive(65536)
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            return
        if len(into) < _STDERR_KEEP:
            into += chunk[: _STDERR_KEEP - len(into)]


class _Collector:
    """What one mode keeps of ripgrep's output, and the text it becomes."""

    def __init__(self, call: _GrepCall, limit: int, ctx: ToolContext, hidden: Any = None) -> None:
        self.call = call
        # How ripgrep's paths become the ones the model sees (``_renamer``).
        self.rename: Callable[[bytes], bytes] | None = None
        # Files deny rules hide (permissions.hidden.HiddenFiles), and the verdict per path.
        self.hidden = hidden
        self.verdicts: dict[bytes, bool] = {}
        self.found = False
        self.lines = 0
        self.skipped = 0  # content lines passed over for `offset`
        self.entries: list[bytes] = []
        self.sink: OutputSink | None = None
        if call.mode == "content":
            self.sink = OutputSink(limit, ctx.session.spill_path(ctx.tool_use_id))
            ctx.sink = self.sink  # partial output if the call is cancelled

    def take(self, line: bytes) -> bool:
        if self.rename is not None:
            line = self.rename(line)
        if self.hidden is not None:
            kept = self._unhidden(line)
            if kept is None:
                return False
            line = kept
        self.found = True
        if self.sink is None:
            self.entries.append(line)
            return False
        if self.skipped < self.call.offset:
            self.skipped += 1
            return False
        # ripgrep prints a CRLF file's lines with their \r: the model needs only the text.
        self.sink.write(line.removesuffix(b"\r") + b"\n")
        self.lines += 1
        return self.call.head_limit is not None and self.lines >= self.call.head_limit

    def _unhidden(self, line: bytes) -> bytes | None:
        """The line as ripgrep prints it without --null, or None if it comes from a file
        a deny rule hides."""
        mode = self.call.mode
        if mode == "content":
            if b"\0" not in line:
                return line  # a single file searched (checked before the call) or `--`
            path, _, rest = line.partition(b"\0")
            separator = b"-" if _CONTEXT_LINE.match(rest) else b":"
            return None if self._hides(path) else path + separator + rest
        path = line.rpartition(b":")[0] if mode == "count" else line
        return None if self._hides(path) else line

    def _hides(self, path: bytes) -> bool:
        verdict = self.verdicts.get(path)
        if verdict is None:
            verdict = self.hidden.hides(os.fsdecode(path))
            self.verdicts[path] = verdict
        return verdict

    async def result(self, stopped: bool) -> ToolOutcome:
        if self.sink is not None:
            return self._content(stopped)
        if self.call.mode == "count":
            return self._count()
        return await self._files()

    def _content(self, stopped: bool) -> ToolOutcome:
        assert self.sink is not None
        out = self.sink.collect()  # before close: collect flushes the spill file
        self.sink.close()
        text = out.text.rstrip("\n")
        offset = self.call.offset
        if not text:
            if offset and self.skipped:
                return ToolOutcome(f"No matches found after the first {self.skipped} lines.")
            return ToolOutcome("No matches found")
        if stopped or offset:
            first = offset + 1
            shown = (
                f"lines {first}-{offset + self.lines}"
                if offset
                else f"the first {self.lines} lines"
            )
            paging = [f"head_limit={self.call.head_limit}"] if stopped else []
            paging += [f"offset={offset}"] if offset else []
            text += f"\n\n(Showing {shown}: {', '.join(paging)}.)"
        return ToolOutcome(
            text, truncated=out.truncated, output_path=out.path, output_bytes=out.total_bytes
        )

    async def _files(self) -> ToolOutcome:
        paths = self.entries
        if not paths:
            return ToolOutcome("No files found")
        if len(paths) <= _INLINE_SORT_MAX:
            paths = _newest_first(paths)
        else:
            paths = await anyio.to_thread.run_sync(_newest_first, paths)
        total = len(paths)
        shown = self._page(paths)
        header = f"Found {total} file{'s' if total != 1 else ''}"
        if len(shown) < total:
            header += f" (showing {len(shown)}, newest first: {self._paging()})"
        return ToolOutcome("\n".join([header, *(_text(p) for p in shown)]))

    def _page(self, entries: list[E]) -> list[E]:
        """``offset`` entries skipped, then at most ``head_limit`` kept."""
        start = self.call.offset
        limit = self.call.head_limit
        return entries[start : start + limit] if limit else entries[start:]

    def _paging(self) -> str:
        parts = [f"head_limit={self.call.head_limit}"] if self.call.head_limit else []
        return ", ".join([*parts, f"offset={self.call.offset}"] if self.call.offset else parts)

    def _count(self) -> ToolOutcome:
        if not self.entries:
            return ToolOutcome("No matches found")
        rows: list[tuple[bytes, int]] = []
        for line in self.entries:
            path, _, number = line.rpartition(b":")
            rows.append((path, int(number) if number.isdigit() else 0))
        rows.sort()
        occurrences = sum(n for _, n in rows)
        shown = self._page(rows)
        lines = [f"{_text(path)}:{n}" for path, n in shown]
        if len(shown) < len(rows):
            lines.append(f"(showing {len(shown)} of {len(rows)} files: {self._paging()})")
        what = "matching line" if occurrences == 1 else "matching lines"
        files = "file" if len(rows) == 1 else "files"
        lines += ["", f"Found {occurrences} {what} across {len(rows)} {files}."]
        return ToolOutcome("\n".join(lines))


def _newest_first(paths: list[bytes]) -> list[bytes]:
    def mtime(path: bytes) -> int:
        try:
            return os.stat(path).st_mtime_ns
        except OSError:
            return 0

    stamped = [(mtime(p), p) for p in paths]
    stamped.sort(key=lambda e: (-e[0], e[1]))
    return [p for _, p in stamped]


def _text(path: bytes) -> str:
    return path.decode("utf-8", "replace")
