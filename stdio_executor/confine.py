"""Workspace confinement: whether a path, or a file already opened, lies inside given roots.

Owns: the one "inside the roots" test the permission policy and the file tools share (the
workspace, ``additionalDirectories``, and for reading tools the spill directory), compared as
canonical paths, case-folded on a case-insensitive file system; and ``Confinement.holds``,
the same test applied to an open file descriptor: the kernel's name for what was opened
(``/proc/self/fd/N``), so no symlink swapped between a check and the open can lead a tool
outside. A tool opens first, then asks; nothing is read before the answer.
Must not: decide permissions (``permissions.policy`` does: which roots apply, what happens to
a call outside them), open or read files itself, or import beyond the standard library.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

__all__ = ["Confinement", "fd_path", "inside", "realpath"]

_O_PATH = getattr(os, "O_PATH", None)
_DELETED = " (deleted)"
# This process's /proc/self/fd, opened once: readlink relative to it costs 5.7 us against
# 9.7 us for "/proc/self/fd/N", whose lookup walks /proc and the "self" link every time.
# None: not opened yet; -1: there is no /proc. Forgotten in a forked child, where it would
# name the parent's descriptors.
_proc_fds: int | None = None


def _forget_proc_fds() -> None:
    global _proc_fds
    _proc_fds = None


os.register_at_fork(after_in_child=_forget_proc_fds)


def _kernel_name(fd: int) -> str:
    """What readlink says of ``fd`` in /proc ("" when it cannot say)."""
    global _proc_fds
    proc = _proc_fds
    if proc is None:
        try:
            proc = os.open("/proc/self/fd", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            proc = -1
        _proc_fds = proc
    if proc < 0:
        return ""
    try:
        return os.readlink(str(fd), dir_fd=proc)
    except OSError:
        return ""


def inside(path: str | None, roots: Sequence[str | None], ignore_case: bool = False) -> bool:
    """Whether the canonical ``path`` is one of ``roots`` or below one (None: unknown, no)."""
    if path is None:
        return False
    p = path.casefold() if ignore_case else path
    for root in roots:
        if root is None:
            continue
        r = root.casefold() if ignore_case else root
        if p == r or p.startswith(r.rstrip("/") + "/"):
            return True
    return False


def fd_path(fd: int) -> str | None:
    """The canonical path of what ``fd`` has open, or None when the kernel cannot say
    (no ``/proc``, a file deleted since, an anonymous pipe)."""
    resolved = _kernel_name(fd)
    if not resolved.startswith("/") or resolved.endswith(_DELETED):
        return None
    return resolved


def realpath(path: str) -> str:
    """``os.path.realpath(path)``, in three system calls when the path exists.

    realpath lstat()s every component from Python: 15.5 us for a 4-component path here,
    18% of a small Read's time end to end (bench/NOTES.md). Opening the path with O_PATH
    (no access to the contents, no side effect on a FIFO or a device) and asking the kernel
    for the name of what it opened gives the same canonical path in half the time; a missing
    path, a dangling link or a system without /proc takes realpath's own route.
    """
    if _O_PATH is None:
        return os.path.realpath(path)
    try:
        fd = os.open(path, _O_PATH | os.O_CLOEXEC)
    except (OSError, ValueError):
        return os.path.realpath(path)
    try:
        resolved = fd_path(fd)
    finally:
        os.close(fd)
    return resolved if resolved is not None else os.path.realpath(path)


def _under(roots: Sequence[str], ignore_case: bool) -> tuple[tuple[str, str], ...]:
    """Each root as ``inside`` compares it: folded if asked, and with "/" appended."""
    folded = [r.casefold() if ignore_case else r for r in roots]
    return tuple((r, r.rstrip("/") + "/") for r in folded)


class Confinement:
    """Roots an opened file must lie in: what the permission gate hands a file tool when
    the call was allowed because its path lay inside them (no rule or answer granted an
    outside path). Shared by every call it is handed to; never mutated."""

    __slots__ = ("_given_under", "_roots_under", "given", "ignore_case", "one_name", "roots")

    def __init__(
        self,
        roots: Sequence[str | None],
        ignore_case: bool = False,
        given: Sequence[str] = (),
        *,
        one_name: bool = False,
    ) -> None:
        self.roots = tuple(r for r in roots if r is not None)
        self.ignore_case = ignore_case
        # For writes: the file opened must have no other name (hard link). Its other names
        # may lie anywhere, a control file (.git/config, ~/.bashrc) among them, and the
        # policy asks before an edit of such a file; one linked after the check is refused.
        self.one_name = one_name
        # The roots as configured (normalized, symlinks not resolved): a path written
        # under one of those may be inside even though, as text, it is not under ``roots``.
        self.given = tuple(os.path.normpath(g) for g in given)
        # ``inside``'s test with each root's folded form and "root/" made once: every small
        # Read asks twice (bench/NOTES.md section 18).
        self._roots_under = _under(self.roots, ignore_case)
        self._given_under = _under(self.given, ignore_case)

    def _inside(self, path: str | None, under: tuple[tuple[str, str], ...]) -> bool:
        """``inside(path, roots, self.ignore_case)`` for roots prepared by ``_under``."""
        if path is None:
            return False
        p = path.casefold() if self.ignore_case else path
        for root, prefix in under:  # noqa: SIM110 (any() over a generator costs more)
            if p == root or p.startswith(prefix):
                return True
        return False

    def contains(self, path: str) -> bool:
        """Whether ``path``, absolute and normalized but not resolved, is under a root as
        text: a cheap filter before opening (the descriptor's check is the one that holds)."""
        return self._inside(path, self._roots_under) or self._inside(path, self._given_under)

    def where(self, fd: int, path: str) -> str | None:
        """The canonical path of the file ``fd`` has open (``path`` is how it was opened);
        where the kernel cannot name the descriptor, ``realpath(path)`` (a check that can
        race with a rename, the best left without ``/proc``)."""
        name = _kernel_name(fd)
        if name.startswith("/"):
            if not name.endswith(_DELETED):
                return name
            try:
                if os.fstat(fd).st_nlink == 0:  # unlinked since it was opened
                    return name.removesuffix(_DELETED)
            except OSError:
                return None
            return name  # a file whose name really ends so
        try:
            return os.path.realpath(path)
        except (OSError, ValueError):
            return None

    def holds(self, fd: int, path: str) -> bool:
        """Whether the file ``fd`` has open lies inside the roots."""
        return self._inside(self.where(fd, path), self._roots_under)

    def __repr__(self) -> str:
        return f"Confinement({self.roots!r}, ignore_case={self.ignore_case})"
