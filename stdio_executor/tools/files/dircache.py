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
from collections import OrderedDict
from collections.abc import Callable

from ... import dirstamps

__all__ = ["CHECK_EVERY", "LISTINGS", "Listing", "ListingCache", "read_listing"]

# Entries read between two calls of a reader's ``check``.
CHECK_EVERY = 512
_READ_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
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

    def __init__(self, max_dirs: int = 4096, max_names: int = 200_000) -> None:
        self.max_dirs = max_dirs
        self.max_names = max_names  # names held in all listings together (memory bound)
        self.hits = 0  # for tests: the cache must be seen to work where it claims to
        self._lock = threading.Lock()
        self._items: OrderedDict[tuple[int, int], tuple[tuple[int, ...], Listing]] = OrderedDict()
        self._names = 0
        self._mounts = -1

    def begin(self) -> None:
        """Once per walk, before any ``listing``: a change of the mount table empties the
        cache (a device number freed by an unmount can come back as another file system)."""
        mounts = dirstamps.mount_generation()
        if mounts != self._mounts:
            with self._lock:
                self._items.clear()
                self._names = 0
                self._mounts = mounts

    def listing(self, fd: int, check: Callable[[], None] | None = None, seen: int = 0) -> Listing:
        """What the directory open on ``fd`` holds (``O_PATH`` is enough). Raises OSError
        when it cannot be read; ``check`` and ``seen`` as ``read_listing``'s, when it is
        read."""
        st = os.fstat(fd)
        ident = (st.st_dev, st.st_ino)
        stamp = dirstamps.stamp(st)
        with self._lock:
            held = self._items.get(ident)
            if held is not None and held[0] == stamp:
                self._items.move_to_end(ident)
                self.hits += 1
                return held[1]
        # Read after the stamp was taken: a change made while reading moves the stamp, so
        # the listing is used this once and read again next time.
        # The caller's descriptor is O_PATH (it cannot be read): "." relative to it is the
        # same directory, opened for reading.
        readable = os.open(".", _READ_FLAGS, dir_fd=fd)
        try:
            found = read_listing(readable, check, seen)
        finally:
            os.close(readable)
        names = len(found.dirs) + len(found.files)
        if (
            dirstamps.settled(st)
            and names <= self.max_names // 16
            and dirstamps.reliable(st.st_dev)
        ):
            with self._lock:
                old = self._items.pop(ident, None)
                if old is not None:
                    self._names -= len(old[1].dirs) + len(old[1].files)
                self._items[ident] = (stamp, found)
                self._names += names
                while len(self._items) > self.max_dirs or self._names > self.max_names:
                    _, (_, gone) = self._items.popitem(last=False)
                    self._names -= len(gone.dirs) + len(gone.files)
        return found

    def clear(self) -> None:
        """Forget every listing (and the hit count)."""
        with self._lock:
            self._items.clear()
            self._names = 0
            self.hits = 0


LISTINGS = ListingCache()
