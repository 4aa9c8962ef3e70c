"""Reading and writing a file so that the file changed is the file that was checked.

Owns: the system calls of the edit tools (Write, Edit, MultiEdit, NotebookEdit) when the
call was allowed because its path lay inside the workspace (``ToolContext.confine``): every
file and directory is opened first and checked on its descriptor (``Confinement.holds``),
and nothing is created, truncated or written before that check passed. New directories and
files are made relative to a directory descriptor that passed it, with ``O_EXCL`` and
``O_NOFOLLOW``, so a symlink planted or swapped between the permission check and the write
(by a background job, an MCP server, another program) cannot lead a write outside. With no
confinement (an allow rule or the host granted the path as given) the same calls run
without the check. Also the primitives of LS and Grep: ``open_checked_dir`` and ``open_path`` (a
directory, or any path, opened and then checked on its descriptor) and ``open_subdir`` (a
child entered relative to its parent's descriptor, never through a symlink).
Must not: decide permissions (the gate does) or word results (the tools do; ``Outside``
says where the path led, and ``run_edit`` turns it into ``results.outside_now``).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Callable
from typing import Any

import anyio.from_thread
import anyio.to_thread

from ...confine import Confinement
from ..base import ToolContext, ToolOutcome
from .results import linked_now, outside_now

__all__ = [
    "Linked",
    "Outside",
    "open_checked_dir",
    "open_dir",
    "open_path",
    "open_subdir",
    "read_bytes",
    "replace_atomically",
    "run_edit",
    "write_in_place",
]

_READ = os.O_RDONLY | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK
# Without O_TRUNC: the file is emptied only once the descriptor passed the check. O_NONBLOCK:
# a FIFO swapped in refuses at once (ENXIO) instead of blocking the daemon.
_WRITE = os.O_WRONLY | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK
_WRITES = os.O_WRONLY | os.O_RDWR
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_PATH = getattr(os, "O_PATH", 0)


class Linked(Exception):
    """The file opened for writing has other names (hard links) under a confinement that
    requires one name (``Confinement.one_name``): linked after the call was allowed."""

    def __init__(self, links: int) -> None:
        super().__init__(links)
        self.links = links


class Outside(Exception):
    """The opened file or directory lies outside the roots; ``where`` is the kernel's
    name for it (None when it cannot say)."""

    def __init__(self, where: str | None) -> None:
        super().__init__(where)
        self.where = where


def _check(fd: int, path: str, confine: Confinement | None) -> None:
    """Raise ``Outside`` (closing ``fd``) unless what ``fd`` has open lies in the roots."""
    if confine is not None and not confine.holds(fd, path):
        where = confine.where(fd, path)
        os.close(fd)
        raise Outside(where)


def _open_file(path: str, flags: int, confine: Confinement | None) -> int:
    """``path`` opened with ``flags``, a regular file inside the roots.

    With a confinement, the path is first opened with ``O_PATH``, which touches nothing (a
    device's driver is not called, a FIFO does not block), checked, and only then reopened
    for reading or writing through ``/proc/self/fd``, which names that same inode without
    walking the path again. Without ``/proc`` the file is opened directly and then checked."""
    if _O_PATH and confine is not None:
        handle = os.open(path, _O_PATH | os.O_CLOEXEC)
        _check(handle, path, confine)
        try:
            st = os.fstat(handle)
            if not stat.S_ISREG(st.st_mode):
                raise OSError(f"{path} is not a regular file (a device, FIFO or socket)")
            if flags & _WRITES and confine.one_name and st.st_nlink > 1:
                raise Linked(st.st_nlink)
            try:
                return os.open(f"/proc/self/fd/{handle}", flags)
            except FileNotFoundError:
                if os.path.isdir("/proc/self/fd"):
                    raise
        finally:
            os.close(handle)
    fd = os.open(path, flags)
    _check(fd, path, confine)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise OSError(f"{path} is not a regular file (a device, FIFO or socket)")
    if confine is not None and flags & _WRITES and confine.one_name and st.st_nlink > 1:
        os.close(fd)  # written already if O_TRUNC was given: only reached without /proc
        raise Linked(st.st_nlink)
    return fd


def read_bytes(path: str, confine: Confinement | None, limit: int = -1) -> bytes:
    """The file's bytes (``limit``: at most that many), opened and checked first."""
    with open(_open_file(path, _READ, confine), "rb") as f:
        return f.read(limit)


def open_checked_dir(path: str, confine: Confinement | None) -> int:
    """A descriptor of the existing directory ``path``, checked: a symlink on the way is
    followed (what it led to when opened is what is checked), and ``Outside`` is raised
    if that lies outside the roots. ``OSError`` if it cannot be opened as a directory."""
    fd = os.open(path, _DIR)
    _check(fd, path, confine)
    return fd


def open_path(path: str, confine: Confinement | None) -> int:
    """An ``O_PATH`` descriptor of whatever ``path`` leads to (nothing of it is opened: no
    device's driver runs, no FIFO blocks), checked like ``open_checked_dir``. Where there is
    no ``O_PATH``, a descriptor opened for reading."""
    fd = os.open(path, (_O_PATH or os.O_RDONLY | os.O_NONBLOCK) | os.O_CLOEXEC)
    _check(fd, path, confine)
    return fd


def open_subdir(dir_fd: int, name: str) -> int:
    """The subdirectory ``name`` of the directory ``dir_fd`` has open, looked up in that
    very directory and never through a symlink (``OSError`` if ``name`` is not, or no
    longer, a directory): how a walk below a checked descriptor stays below it."""
    return os.open(name, _DIR | _NOFOLLOW, dir_fd=dir_fd)


def open_dir(path: str, confine: Confinement | None) -> int:
    """A descriptor of directory ``path``, made (with its missing parents) if needed: the
    nearest existing ancestor is opened and checked, and each missing level is created
    below the checked descriptor and opened without following a symlink."""
    missing: list[str] = []
    at = path or "."
    while True:
        try:
            fd = os.open(at, _DIR)
            break
        except FileNotFoundError:
            head, tail = os.path.split(at)
            if not tail or head == at:
                raise
            missing.append(tail)
            at = head or "."
    _check(fd, at, confine)
    try:
        for name in reversed(missing):
            with contextlib.suppress(FileExistsError):  # made meanwhile: opened below
                os.mkdir(name, 0o777, dir_fd=fd)
            below = open_subdir(fd, name)
            os.close(fd)
            fd = below
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_in_place(path: str, data: bytes, confine: Confinement | None) -> os.stat_result:
    """Replace the contents of ``path`` (mode, owner and hard links kept), or create it;
    returns its status after writing."""
    try:
        fd = _open_file(path, _WRITE, confine)
    except FileNotFoundError:
        fd = -1
    if fd < 0:
        parent, name = os.path.split(path)
        dir_fd = open_dir(parent, confine)
        try:
            # O_EXCL: a name that appeared meanwhile (a symlink included) is not followed.
            fd = os.open(name, _WRITE | os.O_CREAT | os.O_EXCL, 0o666, dir_fd=dir_fd)
        finally:
            os.close(dir_fd)
    with open(fd, "wb") as f:
        f.truncate(0)
        f.write(data)
        f.flush()
        return os.fstat(f.fileno())


def replace_atomically(path: str, data: bytes, confine: Confinement | None) -> os.stat_result:
    """Put ``data`` in a temporary file beside ``path`` and rename it over ``path`` (the
    target of a symlink is replaced, not the link), all relative to the checked directory;
    a hard-linked file, one owned by someone else or a new one is written in place instead
    (a rename would split the link or change the owner). Returns the new file's status."""
    real = os.path.realpath(path)
    parent, name = os.path.split(real)
    dir_fd = open_dir(parent, confine)
    try:
        try:
            st: os.stat_result | None = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is None or not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
            return write_in_place(os.path.join(parent, name), data, confine)
        if st.st_uid != os.geteuid():
            return write_in_place(os.path.join(parent, name), data, confine)
        tmp = f".{name}.{secrets.token_hex(4)}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
        try:
            with open(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
                os.fchmod(f.fileno(), stat.S_IMODE(st.st_mode))
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    finally:
        os.close(dir_fd)


async def run_edit(
    tool: str, edit: Callable[..., ToolOutcome], path: str, call: Any, ctx: ToolContext
) -> ToolOutcome:
    """``edit(path, call, session, check, confine)`` in a worker thread (which finishes a
    write once started); a path that led outside since the call was judged is a denial."""
    try:
        return await anyio.to_thread.run_sync(
            edit, path, call, ctx.session, anyio.from_thread.check_cancelled, ctx.confine
        )
    except Outside as outside:
        return outside_now(tool, path, outside.where)
    except Linked as linked:
        return linked_now(tool, path, linked.links)
