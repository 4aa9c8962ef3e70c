"""The Glob tool: files whose path matches a glob pattern, newest first.

Owns: the walk that finds a pattern's matches (``.git`` skipped, symlinked directories not
followed, so a link loop cannot trap it; directories opened by descriptor, each relative to
its parent, so one swapped for a symlink mid-walk is not followed either; what a directory
holds comes from ``dircache`` while it is unchanged, what each match is now from a ``stat``
on every call; the pattern language is ``globs``, shared with file permission rules, plus
``{a,b}`` alternatives, Glob's alone), and the answer: absolute paths, newest first by
modification time, at most 100.
Files deny rules hide (``session.hidden``) are never listed, by name or identity.
Must not: hold the event loop for long: a small tree (up to ``INLINE_MAX_ENTRIES`` entries)
is walked inline, anything larger in a worker thread that checks for cancellation as it goes.

Patterns are relative to ``path`` (default: the working directory) and match files only;
``*.py`` matches at the top level, ``**/*.py`` at any depth. Hidden files match like any
other. The walk starts below the pattern's literal prefix (``src/**/*.py`` walks ``src``)
and goes no deeper than the pattern can reach.
"""

from __future__ import annotations

import functools
import heapq
import operator
import os
import re
import stat
from collections.abc import Mapping
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import msgspec

from ...confine import Confinement
from ...globs import expand_braces, path_regex
from ..base import Tool, ToolContext, ToolOutcome, normalized
from ..inputs import GlobInput, parse
from .dircache import CHECK_EVERY, LISTINGS, Listing
from .results import Check, finish, input_error, outside_now, tool_error

__all__ = ["INLINE_MAX_ENTRIES", "GlobTool", "glob_regex"]

MAX_RESULTS = 100
_CHECK_EVERY_ENTRIES = CHECK_EVERY
# Entries an inline walk may see (a few hundred microseconds) before it hands over to a
# worker thread.
INLINE_MAX_ENTRIES = _CHECK_EVERY_ENTRIES
_SPECIAL = frozenset("*?[{")
# Readable, not O_PATH (0.2 us cheaper to open): a directory whose listing is not kept is
# read from this descriptor, and reopening it for that costs more than O_PATH saves.
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
# Directories a walk holds open at once (one per level it is inside); deeper, it goes by path.
_MAX_OPEN_DIRS = 64
_MTIME = operator.itemgetter(0)
_PATH = operator.itemgetter(1)


class _GlobCall(msgspec.Struct):  # one per call
    pattern: str
    path: str | None


class GlobTool(Tool):
    # ``ctx.confine`` is checked on the directory the walk starts in, once it is open.
    confines = True

    def validate(self, raw: Mapping[str, Any]) -> _GlobCall:
        value = parse(self.spec.name, GlobInput, raw)
        if not value.pattern.strip():
            raise input_error(self.spec.name, "pattern", "must not be empty")
        return _GlobCall(value.pattern, value.path or None if isinstance(value.path, str) else None)

    def describe(self, value: Any) -> str:
        call: _GlobCall = value
        return call.pattern

    def run_inline(self, value: Any, ctx: ToolContext) -> ToolOutcome | None:
        """A small tree is walked right here: a worker thread costs more than the walk.
        Past ``INLINE_MAX_ENTRIES`` entries the walk gives up and ``run`` starts over in a
        thread, so the event loop is never held for long."""
        call: _GlobCall = value
        base = ctx.resolve(call.path) if call.path else ctx.cwd
        try:
            outcome = glob_files(
                base, call.pattern, _give_up, _hidden(ctx, self.spec.name), ctx.confine
            )
        except (_TooLarge, _Outside, _Unopened):
            # Outside, or no directory to check: judged in full in the call's task (a
            # path outside asks or is denied), and any error is worded there.
            return None
        return finish(outcome, self.spec, ctx)

    async def run(self, value: Any, ctx: ToolContext) -> ToolOutcome:
        call: _GlobCall = value
        base = ctx.resolve(call.path) if call.path else ctx.cwd
        outcome = await anyio.to_thread.run_sync(
            _glob_confined,
            base,
            call.pattern,
            anyio.from_thread.check_cancelled,
            _hidden(ctx, self.spec.name),
            ctx.confine,
            self.spec.name,
        )
        return finish(outcome, self.spec, ctx)


class _TooLarge(Exception):
    """The tree is too large to walk inline."""


class _Unopened(Exception):
    """The directory the walk would start in could not be opened to check where it is."""


class _Outside(Exception):
    """The directory the walk would start in is not inside the confinement's roots."""

    def __init__(self, path: str, where: str | None) -> None:
        super().__init__(path)
        self.path = path
        self.where = where


def _give_up() -> None:
    # ``_walk`` checks every ``_CHECK_EVERY_ENTRIES`` entries: the first check means the
    # inline walk has seen that many, its budget.
    raise _TooLarge


def _hidden(ctx: ToolContext, name: str) -> Any:
    """The deny rules' filter for this call (permissions.hidden), or None."""
    hidden = ctx.session.hidden.get(name)
    return hidden.fresh() if hidden is not None else None


def _glob_confined(
    base: str, pattern: str, check: Check, hidden: Any, confine: Confinement | None, name: str
) -> ToolOutcome:
    """``glob_files`` for a call already judged: a start directory now outside is refused;
    one that cannot be opened gets ``glob_files``'s own wording (it does not exist...)."""
    try:
        return glob_files(base, pattern, check, hidden, confine)
    except _Outside as exc:
        return outside_now(name, exc.path, exc.where)
    except _Unopened:
        return glob_files(base, pattern, check, hidden)


def glob_files(
    base: str, pattern: str, check: Check, hidden: Any = None, confine: Confinement | None = None
) -> ToolOutcome:
    """``hidden``: files deny rules hide; never listed, by name or under another name.
    ``confine``: the roots the walk's first directory must lie in, checked on it once open,
    before anything about the file system is answered: ``_Outside`` if it does not,
    ``_Unopened`` if it cannot be opened to tell. The walk then goes on from that very
    descriptor."""
    if pattern[:1] == "/":
        # An absolute pattern names its own directory: its literal part is the base.
        base, pattern = _split_literal(pattern)
    pattern, prefix, rest, depth = _plan(pattern)
    start = normalized(os.path.join(base, *prefix)) if prefix else normalized(base)
    opened: int | None = None
    is_base = False
    if confine is not None:
        opened = _confined(start, rest, confine)
        is_base = not prefix  # then base is a directory: it was just opened as one
    try:
        if not is_base:
            try:
                st = os.stat(base)
            except OSError:
                return tool_error(f"Directory does not exist: {base}")
            if not stat.S_ISDIR(st.st_mode):
                return tool_error(f"Path is not a directory: {base}")
        if not pattern:
            return ToolOutcome("No files found")
        try:
            regex = glob_regex(rest) if rest else None
        except re.error as exc:
            return tool_error(f"Invalid glob pattern {pattern!r}: {exc}")
        if regex is None:  # no wildcard at all: the pattern names one file
            found = _single(start)
            if found and hidden is not None and hidden.hides(found):
                found = None
            return ToolOutcome(found if found else "No files found")
        start_fd, opened = opened, None  # the walk closes it
        newest, total = _walk(start, regex, depth, check, hidden, start_fd)
    finally:
        if opened is not None:
            os.close(opened)
    if not newest:
        return ToolOutcome("No files found")
    # Newest first, ties by path: sort by path, then (stably, reversed) by time.
    newest.sort(key=_PATH)
    newest.sort(key=_MTIME, reverse=True)
    paths = [path for _, path in newest]
    text = "\n".join(paths)
    if total > len(paths):
        text += (
            f"\n(Results are truncated: the {len(paths)} newest of {total} matches. "
            "Use a more specific path or pattern.)"
        )
    return ToolOutcome(text)


def _walk(
    start: str,
    regex: re.Pattern[str],
    depth: int | None,
    check: Check,
    hidden: Any = None,
    start_fd: int | None = None,
) -> tuple[list[tuple[int, str]], int]:
    """(mtime_ns, path) of the newest matching files under ``start``, and how many matched.

    Directories are walked by descriptor: each below ``start`` (or ``start_fd``, which the
    walk takes over and closes) is opened relative to its parent with ``O_NOFOLLOW``, so a
    directory swapped for a symlink during the walk is skipped, never followed, and a file's
    ``stat`` looks up one name. A directory's names come from ``LISTINGS`` (kept while the
    directory is unchanged); every match is ``stat``ed on every call, for its time and to
    drop a name that is no longer a file. A directory's descriptor stays open while its
    subdirectories are walked (depth first): past ``_MAX_OPEN_DIRS`` levels the walk goes on
    by path, reading each directory (nothing kept: no descriptor to stamp).
    A bounded heap keeps memory flat however many files match.
    """
    heap: list[tuple[int, str]] = []
    total = 0
    seen = 0
    listings = LISTINGS
    mounts_checked = False

    def found(mtime: int, full: str) -> None:
        nonlocal total
        total += 1
        item = (mtime, full)
        if len(heap) < MAX_RESULTS:
            heapq.heappush(heap, item)
        elif item > heap[0]:
            heapq.heapreplace(heap, item)

    def scan(fd: int, path: str, rel: str, level: int) -> tuple[str, ...] | list[str]:
        """Match one directory's files; return the subdirectories to walk."""
        nonlocal seen, mounts_checked
        descend = depth is None or level < depth
        joined = path if path.endswith("/") else path + "/"
        kept: Listing | None = None
        if fd >= 0 and not listings.young(joined):
            try:
                st = os.fstat(fd)
                if not mounts_checked and listings:
                    listings.begin()  # before trusting anything kept (one poll per walk)
                    mounts_checked = True
                kept = listings.held(st)
                if kept is None and listings.may_keep(st, joined):
                    kept = listings.read(fd, st, check, seen)
            except OSError:
                return ()  # unreadable or vanished: skip it, as find and rg do
        if kept is None:
            return scan_plain(fd if fd >= 0 else path, joined, rel, descend)
        before = seen
        seen += kept.size
        if before // _CHECK_EVERY_ENTRIES != seen // _CHECK_EVERY_ENTRIES:
            check()  # (a listing read just now was checked as it was read, too)
        names, subdirs = kept.select(regex, rel, descend)
        add = found
        for name in names:
            try:
                # Followed, as a plain walk's is_file() follows: a symlink to a file is
                # listed. Relative to the directory's descriptor: one name looked up.
                st = os.stat(name, dir_fd=fd)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):
                continue  # a directory, FIFO or device now, or a link to one
            full = joined + name
            if hidden is not None and hidden.hides(full, st):
                continue
            add(st.st_mtime_ns, full)
        return subdirs

    def scan_plain(where: int | str, joined: str, rel: str, descend: bool) -> list[str]:
        """A directory whose listing is not kept (changed in the last 2 s, on a file system
        that does not keep directory times, or past ``_MAX_OPEN_DIRS`` levels): read and
        matched in one pass."""
        nonlocal seen
        subdirs: list[str] = []
        try:
            entries = os.scandir(where)
        except OSError:
            return subdirs
        with entries:
            for entry in entries:
                seen += 1
                if seen % _CHECK_EVERY_ENTRIES == 0:
                    check()
                name = entry.name
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if descend and name != ".git":
                            subdirs.append(name)
                        continue
                    if not regex.fullmatch(rel + name) or not entry.is_file():
                        continue
                    st = entry.stat()
                    full = joined + name
                    if hidden is not None and hidden.hides(full, st):
                        continue
                except OSError:
                    continue
                found(st.st_mtime_ns, full)
        return subdirs

    if start_fd is None:
        try:
            start_fd = os.open(start, _DIR_FLAGS)
        except OSError:
            return heap, total
    # Frames: [descriptor (-1: by path), path, relative path, level, subdirectories, next].
    stack: list[list[Any]] = [[start_fd, start, "", 0, (), 0]]
    try:
        stack[0][4] = scan(start_fd, start, "", 0)
        while stack:
            frame = stack[-1]
            fd, path, rel, level, subdirs, i = frame
            if i == len(subdirs):
                stack.pop()
                if fd >= 0:
                    os.close(fd)
                continue
            frame[5] = i + 1
            name = subdirs[i]
            child = f"{path}{name}" if path.endswith("/") else f"{path}/{name}"
            child_fd = -1
            if fd >= 0 and len(stack) < _MAX_OPEN_DIRS:
                try:
                    child_fd = os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
                except OSError:
                    continue  # vanished, or no longer a directory (a symlink now)
            stack.append([child_fd, child, f"{rel}{name}/", level + 1, (), 0])
            stack[-1][4] = scan(child_fd, child, f"{rel}{name}/", level + 1)
    finally:
        for frame in stack:
            if frame[0] >= 0:
                os.close(frame[0])
    return heap, total


def _confined(start: str, rest: str, confine: Confinement) -> int | None:
    """Check the directory the call reaches (``start``, where the walk starts; for a
    pattern without wildcards, the named file's directory) on its descriptor. Raises
    ``_Outside`` if it is outside, ``_Unopened`` if it cannot be opened. Returns the open
    descriptor of the walk's start, or None for a pattern without wildcards (nothing is
    walked)."""
    reached = start if rest else os.path.dirname(start)
    try:
        # O_DIRECTORY: nothing but a directory is opened (no device's open runs).
        fd = os.open(reached, _DIR_FLAGS)
    except OSError:
        raise _Unopened from None
    keep = False
    try:
        if not confine.holds(fd, reached):
            raise _Outside(reached, confine.where(fd, reached))
        keep = bool(rest)
    finally:
        if not keep:
            os.close(fd)
    return fd if keep else None


@functools.lru_cache(maxsize=256)
def _plan(pattern: str) -> tuple[str, tuple[str, ...], str, int | None]:
    """A relative pattern, taken apart once: (normalized, its literal leading directories,
    the rest, how deep the rest can reach below them: None for any depth)."""
    pattern = _normalize(pattern)
    prefix, rest = _literal_prefix(pattern) if pattern else ([], "")
    depth = None if "**" in rest else rest.count("/")
    return pattern, tuple(prefix), rest, depth


def _single(path: str) -> str | None:
    try:
        return path if stat.S_ISREG(os.stat(path).st_mode) else None
    except OSError:
        return None


def _normalize(pattern: str) -> str:
    parts = [p for p in pattern.split("/") if p not in ("", ".")]
    return "/".join(parts)


def _literal_prefix(pattern: str) -> tuple[list[str], str]:
    """Leading segments without wildcards, and the rest of the pattern."""
    parts = pattern.split("/")
    prefix: list[str] = []
    while len(parts) > 1 and not _SPECIAL.intersection(parts[0]):
        prefix.append(parts.pop(0))
    if not _SPECIAL.intersection(parts[0]):
        return prefix + parts, ""
    return prefix, "/".join(parts)


def _split_literal(pattern: str) -> tuple[str, str]:
    parts = pattern.split("/")
    for i, part in enumerate(parts):
        if _SPECIAL.intersection(part):
            return "/".join(parts[:i]) or "/", "/".join(parts[i:])
    return os.path.dirname(pattern) or "/", os.path.basename(pattern)


# ------------------------------------------------------------------------ the language


@functools.lru_cache(maxsize=256)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """A regex that fully matches the relative paths ``pattern`` selects (``globs`` owns the
    language, shared with file permission rules; braces are Glob's alone)."""
    alternatives = expand_braces(pattern)
    return re.compile("|".join(f"(?:{path_regex(p)})" for p in alternatives), re.DOTALL)
