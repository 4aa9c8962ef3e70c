"""Directories the daemon writes into under a shared temporary directory.

Owns: making a directory (with its missing parents) and checking that what is there is a
directory of this user's own, not a symlink: ``/tmp`` is writable by everyone, and a
directory another user made first at a predictable name (``session-PID``) would hold the
session's results, or a symlink that leads its writes elsewhere.
Must not: import beyond the standard library (start-up path).
"""

from __future__ import annotations

import errno
import os

__all__ = ["private_dir"]


def private_dir(path: str) -> int:
    """``path`` made (mode 0700) if missing, and opened: a descriptor of the directory
    (close it, or keep it to make files in that very directory however ``path`` changes
    later); ``OSError`` unless it is a directory, not a symlink, owned by this user."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise _not_ours(path) from exc
    if os.fstat(fd).st_uid != os.geteuid():
        os.close(fd)
        raise _not_ours(path)
    return fd


def _not_ours(path: str) -> OSError:
    return OSError(
        errno.EPERM,
        f"{path} is not a directory of this user's (a symlink, or made by another user): "
        "nothing is written there",
        path,
    )
