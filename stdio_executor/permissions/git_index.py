"""The paths a git repository's index lists (what ``git ls-files`` prints), read from the
index file itself.

Owns: finding a repository's index (a ``.git`` directory, or the ``gitdir:`` file of a
worktree or submodule) and decoding the entry names of index versions 2, 3 and 4.
Must not: run git (a repository's own config can make git run programs, and a process
started here would live outside ``processes.py``'s one lifetime and stall the event loop
the permission check runs in) or guess: an index it cannot read fully (a split index, an
unknown version, a truncated file) is reported as unreadable, and the caller asks.
"""

from __future__ import annotations

import os
import struct

from ..regular_file import read_regular

__all__ = ["UnreadableIndex", "repository_top", "tracked_paths"]

_MAX_INDEX = 64 * 1024 * 1024  # a 100,000-file repository's index is ~10 MB
_MAX_GITFILE = 4096
_ENTRY_FIXED = 62  # ctime..sha1 (60 bytes) and the 16-bit flags


class UnreadableIndex(Exception):
    pass


def repository_top(directory: str) -> str | None:
    """The work tree holding ``directory`` (the nearest directory with a ``.git``)."""
    top = directory
    while not os.path.lexists(os.path.join(top, ".git")):
        parent = os.path.dirname(top)
        if parent == top:
            return None
        top = parent
    return top


def _index_file(top: str) -> str:
    dot_git = os.path.join(top, ".git")
    if os.path.isdir(dot_git):
        return os.path.join(dot_git, "index")
    try:
        line = _read_regular(dot_git, _MAX_GITFILE).decode("utf-8").partition("\n")[0].strip()
    except UnicodeDecodeError as e:
        raise UnreadableIndex(str(e)) from e
    if not line.startswith("gitdir:"):
        raise UnreadableIndex(".git is neither a directory nor a gitdir file")
    gitdir = line[len("gitdir:") :].strip()
    return os.path.join(os.path.normpath(os.path.join(top, gitdir)), "index")


def tracked_paths(top: str) -> list[str]:
    """The index's paths, relative to ``top``; [] when the repository has no index yet."""
    path = _index_file(top)
    try:
        data = _read_regular(path, _MAX_INDEX)
    except FileNotFoundError:
        return []
    if len(data) < 12 or data[:4] != b"DIRC":
        raise UnreadableIndex("not an index file")
    version, count = struct.unpack(">II", data[4:12])
    if version not in (2, 3, 4):
        raise UnreadableIndex(f"index version {version}")
    names: list[str] = []
    at = 12
    previous = b""
    try:
        for _ in range(count):
            flags = struct.unpack(">H", data[at + 60 : at + 62])[0]
            at += _ENTRY_FIXED
            if flags & 0x4000:  # extended flags (version 3 and up): 16 more bits
                at += 2
            if version == 4:
                strip, at = _varint(data, at)
                end = data.index(b"\0", at)
                if strip > len(previous):
                    raise UnreadableIndex("bad prefix")
                name = previous[: len(previous) - strip] + data[at:end]
                at = end + 1
            else:
                end = data.index(b"\0", at)
                name = data[at:end]
                start = at - _ENTRY_FIXED - (2 if flags & 0x4000 else 0)
                # Entries are padded with 1-8 NULs to a multiple of 8 bytes.
                at = start + ((end - start + 8) & ~7)
            previous = name
            names.append(os.fsdecode(name))
    except (struct.error, ValueError, IndexError) as e:
        raise UnreadableIndex("truncated index") from e
    if _has_extension(data, at, b"link"):
        raise UnreadableIndex("a split index: entries live in a shared index")
    return names


def _read_regular(path: str, limit: int) -> bytes:
    try:
        return read_regular(path, limit)
    except FileNotFoundError:
        raise
    except OSError as e:
        raise UnreadableIndex(str(e)) from e


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """git's offset varint (index version 4's prefix length)."""
    byte = data[at]
    at += 1
    value = byte & 0x7F
    while byte & 0x80:
        byte = data[at]
        at += 1
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, at


def _has_extension(data: bytes, at: int, name: bytes) -> bool:
    end = len(data) - 20  # the trailing checksum
    while at + 8 <= end:
        signature = data[at : at + 4]
        size = struct.unpack(">I", data[at + 4 : at + 8])[0]
        if signature == name:
            return True
        at += 8 + size
    return False
