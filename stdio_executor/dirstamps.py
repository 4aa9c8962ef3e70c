"""Whether a directory is unchanged since it was last looked at, from one ``stat``.

Owns: the rule two caches share (the sandbox's "which bind targets exist", the Glob tool's
directory listings): a directory's *stamp* (device, inode, mtime, ctime, size) changes
whenever an entry in it is created, removed, renamed, linked or replaced, because the kernel
sets the directory's mtime and ctime to "now" on each of those. Two things can hide a
change, and this module answers both:

- the clock's granularity: the kernel takes "now" from a coarse clock (one tick, a few
  milliseconds), so a change in the same tick as the one before it can leave the stamp as
  it was. What was seen is trusted only when the directory's ctime was already older than
  ``RACY_NS`` (2 s, far above any tick) when the stamp was taken: any later change then
  gets a ctime that differs. This is git's rule for "racily clean" index entries. ctime is
  the one to judge by: users can set mtime (``utime``), never ctime;
- file systems that do not keep a directory's times (``/proc``, ``/sys``, FUSE, network
  file systems whose attributes are cached or set by another machine's clock): only the
  local disk and memory file systems in ``_KEEPS_TIMES`` are trusted, looked up by device
  in ``/proc/self/mountinfo``. A change to the mount table (noticed by ``poll`` on that
  file, one system call) bumps ``mount_generation``, and the caches drop what they hold.

Must not: cache anything itself, or open anything but ``/proc/self/mountinfo``.
"""

from __future__ import annotations

import os
import select
import threading
import time

__all__ = ["RACY_NS", "mount_generation", "reliable", "settled", "stamp"]

# A change within this long of a look may not show in the directory's times. Far above the
# kernel's coarse clock (a tick: 1-10 ms); git uses the same idea at 1 s granularity.
RACY_NS = 2_000_000_000

# File systems that set a directory's mtime and ctime on every change of its entries, from
# this machine's clock. Anything else (proc, sysfs, fuse, nfs, cifs, 9p, ...) is never
# trusted. Devices not found in the mount table (a btrfs subvolume has its own) neither.
_KEEPS_TIMES = frozenset(
    {"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "f2fs", "overlay", "jfs", "bcachefs"}
)
_MOUNTINFO = "/proc/self/mountinfo"


def stamp(st: os.stat_result) -> tuple[int, int, int, int, int]:
    """What must be equal for a directory to be the same, unchanged, directory."""
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)


def settled(st: os.stat_result) -> bool:
    """Whether a look at the directory ``st`` was taken of (just now) may be trusted for as
    long as its stamp stays the same: its last change is older than ``RACY_NS``."""
    return time.time_ns() - st.st_ctime_ns > RACY_NS


class _Mounts:
    """Which devices carry a file system that keeps directory times, and a generation
    number that moves when the mount table changes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._poll: select.poll | None = None
        self._fd = -1  # /proc/self/mountinfo, open for poll; -2: there is none
        self._types: dict[int, str] = {}
        self.generation = 0

    def forget(self) -> None:
        # In a forked child: the descriptor is shared with the parent (one poll would hide a
        # change from the other), so the child opens its own.
        self.__init__()  # type: ignore[misc]

    def check(self) -> int:
        """Poll the mount table; on a change, reread it and move the generation."""
        poll = self._poll
        if poll is not None:
            # Without the lock (it costs as much as the poll): a poll object refuses a
            # second poll at once with RuntimeError, taken as "changed", to be safe.
            try:
                changed = bool(poll.poll(0))
            except RuntimeError:
                changed = True
            if not changed:
                return self.generation
        with self._lock:
            # Not read yet (-1), or changed: poll says "changed" once per change.
            if self._fd == -1 or poll is not None:
                self._load()
            return self.generation

    def keeps_times(self, dev: int) -> bool:
        with self._lock:
            if self._fd == -1:
                self._load()
            return self._types.get(dev) in _KEEPS_TIMES

    def _load(self) -> None:
        self.generation += 1
        self._types = {}
        if self._fd == -2:
            return
        try:
            if self._fd < 0:
                self._fd = os.open(_MOUNTINFO, os.O_RDONLY | os.O_CLOEXEC)
                self._poll = select.poll()
                self._poll.register(self._fd, select.POLLPRI | select.POLLERR)
            with open(_MOUNTINFO, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            self._fd = -2
            self._poll = None
            return
        for line in text.splitlines():
            # "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw": the device
            # is the third field, the file system type the first after the "-".
            fields = line.split()
            try:
                major, minor = fields[2].split(":")
                fstype = fields[fields.index("-", 6) + 1]
                dev = os.makedev(int(major), int(minor))
            except (ValueError, IndexError):
                continue
            # Several mounts of one device (bind mounts) share its type; an unknown type
            # anywhere for it wins, to be safe.
            old = self._types.get(dev)
            if old is None or old in _KEEPS_TIMES:
                self._types[dev] = fstype


_mounts = _Mounts()
os.register_at_fork(after_in_child=_mounts.forget)


def mount_generation() -> int:
    """A number that changes whenever the mount table has changed since the last call (one
    ``poll``): a cache compares it with the one it was filled under and drops everything on
    a difference (a device number can be reused by another file system)."""
    return _mounts.check()


def reliable(dev: int) -> bool:
    """Whether directories on device ``dev`` keep their times (see the module docstring)."""
    return _mounts.keeps_times(dev)
