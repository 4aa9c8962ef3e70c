"""Directory listings the Glob tool reuses while a directory is unchanged.

Owns: ``LISTINGS``, a bounded cache (least recently used out) of what a directory held:
its subdirectories (not symlinks) and the names that may be files (regular files and
symlinks), keyed by the directory's identity and trusted only while its stamp is the same
(``dirstamps``: mtime and ctime move on every create, remove, rename or replace of an entry;
a listing is kept only when the directory's last change was already 2 s old as it was
taken, on a file system that keeps directory times); and, per listing, which of its names a
pattern selects at a relative path (the regex runs once per listing, not once per call).
A hit costs one ``fstat`` of a directory already open instead of reading it (on Linux, a
``dup``, two ``getdents64``, an ``lseek`` and a ``close`` through ``scandir``).
Must not: open, follow or resolve anything. It is handed a descriptor the caller opened
(and checked, or opened relative to a checked one with ``O_NOFOLLOW``), and only says what
names that directory held: where the walk goes from there, and whether what a name is now
is still a file, the walk finds out on descriptors (``globbing``).
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from ... import dirstamps

__all__ = ["CHECK_EVERY", "LISTINGS", "Listing", "ListingCache", "read_listing"]

# Entries read between two calls of a reader's ``check``.
CHECK_EVERY = 512
# Selections a listing remembers (pattern, relative path, whether to descend): a few
# patterns are used over and over; more than this and the memo starts again.
_MEMO = 8


class Listing:
    """What one directory held when it was read. Never changed after it is built."""

    __slots__ = ("_memo", "dirs", "files", "size")

    def __init__(self, dirs: tuple[str, ...], files: tuple[str, ...], size: int) -> None:
        self.dirs = dirs  # subdirectories, symlinks excluded
        self.files = files  # regular files and symlinks: what may be a file
        self.size = size  # every entry read (sockets, devices, FIFOs included)
        self._memo: dict[tuple[re.Pattern[str], str, bool], tuple[tuple[str, ...], ...]] = {}

    def select(
        self, regex: re.Pattern[str], rel: str, descend: bool
    ) -> tuple[tuple[str, ...], ...]:
        """(names whose ``rel + name`` the pattern matches, subdirectories to walk: none
        unless ``descend``, never ``.git``)."""
        key = (regex, rel, descend)
        chosen = self._memo.get(key)
        if chosen is None:
            match = regex.fullmatch
            files = tuple(name for name in self.files if match(rel + name))
            dirs = tuple(name for name in self.dirs if name != ".git") if descend else ()
            chosen = (files, dirs)
            if len(self._memo) >= _MEMO:
                self._memo.clear()  # from two threads at once: both recompute, no harm
            self._memo[key] = chosen
        return chosen


def read_listing(
    where: int | str, check: Callable[[], None] | None = None, seen: int = 0
) -> Listing:
    """Read a directory (a descriptor, or a path) to its end. Raises OSError. ``check`` is
    called every ``CHECK_EVERY`` entries (counted from ``seen``, what the caller saw before):
    it may raise to stop a long read (cancelled, or too large to read inline)."""
    dirs: list[str] = []
    files: list[str] = []
    size = 0
    with os.scandir(where) as entries:
        for entry in entries:
            size += 1
            if check is not None and (seen + size) % CHECK_EVERY == 0:
                check()
            try:
                if entry.is_dir(follow_symlinks=False):
                    dirs.append(entry.name)
                elif entry.is_file(follow_symlinks=False) or entry.is_symlink():
                    files.append(entry.name)
            except OSError:
                continue  # vanished while read (a file system without d_type lstat()s it)
    return Listing(tuple(dirs), tuple(files), size)


class ListingCache:
    """Listings by directory identity, each with the stamp it was read under."""

    def __init__(self, max_dirs: int = 4096, max_names: int = 100_000) -> None:
        self.max_dirs = max_dirs
        self.max_names = max_names  # names held in all listings together (memory bound)
        self.hits = 0  # for tests: the cache must be seen to work where it claims to
        self._lock = threading.Lock()
        self._items: OrderedDict[tuple[int, int], tuple[tuple[int, ...], Listing]] = OrderedDict()
        self._names = 0
        self._mounts = -1
        # Directories (by path) whose listing cannot be kept yet, and until when: a walk
        # reads them without the ``fstat`` that would only say so again. A hint to read,
        # never to trust: a path that names another directory by now is just read.
        self._young: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._items)

    def begin(self) -> None:
        """Once per walk, before the first ``held``: a change of the mount table empties the
        cache (a device number freed by an unmount can come back as another file system)."""
        mounts = dirstamps.mount_generation()
        if mounts != self._mounts:
            with self._lock:
                self._items.clear()
                self._names = 0
                self._mounts = mounts

    def held(self, st: os.stat_result) -> Listing | None:
        """The listing kept for the directory ``st`` is a fresh ``fstat`` of, if its stamp
        is the one it was read under."""
        # No lock: each dict operation is atomic under the GIL; an entry evicted by another
        # thread between them is simply not found.
        ident = (st.st_dev, st.st_ino)
        held = self._items.get(ident)
        if held is None or held[0] != dirstamps.stamp(st):
            return None
        try:
            self._items.move_to_end(ident)
        except KeyError:
            return None
        self.hits += 1
        return held[1]

    def may_keep(self, st: os.stat_result, path: str) -> bool:
        """Whether a listing read now of the directory ``st`` was just taken of (at
        ``path``) could be kept: its last change is old enough, on a file system that keeps
        directory times. If not, ``young(path)`` says so for the next 2 s."""
        if dirstamps.settled(st) and dirstamps.reliable(st.st_dev):
            return True
        if len(self._young) >= self.max_dirs:
            self._young.clear()
        self._young[path] = time.time_ns() + dirstamps.RACY_NS
        return False

    def young(self, path: str) -> bool:
        """Whether the directory at ``path`` was found not keepable within the last 2 s
        (then it is simply read)."""
        until = self._young.get(path)
        return until is not None and time.time_ns() < until

    def read(
        self, fd: int, st: os.stat_result, check: Callable[[], None] | None = None, seen: int = 0
    ) -> Listing:
        """Read the directory open on ``fd`` (``st``: its ``fstat``, taken before) and keep
        the listing under ``st``'s stamp. Raises OSError when it cannot be read; ``check``
        and ``seen`` as ``read_listing``'s. Read after the stamp was taken: a change made
        while reading moves the stamp, so the listing is used this once and read again next
        time."""
        found = read_listing(fd, check, seen)
        names = len(found.dirs) + len(found.files)
        if names <= self.max_names // 16:  # one huge directory must not empty the cache
            ident = (st.st_dev, st.st_ino)
            with self._lock:
                old = self._items.pop(ident, None)
                if old is not None:
                    self._names -= len(old[1].dirs) + len(old[1].files)
                self._items[ident] = (dirstamps.stamp(st), found)
                self._names += names
                while len(self._items) > self.max_dirs or self._names > self.max_names:
                    _, (_, gone) = self._items.popitem(last=False)
                    self._names -= len(gone.dirs) + len(gone.files)
        return found

    def listing(self, fd: int, check: Callable[[], None] | None = None, seen: int = 0) -> Listing:
        """What the directory open (for reading) on ``fd`` holds, kept or read (and kept if
        it may be), for callers that want a ``Listing`` either way (``begin`` first)."""
        st = os.fstat(fd)
        found = self.held(st)
        if found is not None:
            return found
        if self.may_keep(st, ""):
            return self.read(fd, st, check, seen)
        return read_listing(fd, check, seen)

    def clear(self) -> None:
        """Forget every listing (and the hit count)."""
        with self._lock:
            self._items.clear()
            self._names = 0
            self.hits = 0
            self._young.clear()


LISTINGS = ListingCache()
