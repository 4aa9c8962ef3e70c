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
import stat

__all__ = ["private_dir"]


def private_dir(path: str) -> None:
    """``path`` made (mode 0700) if missing; ``OSError`` unless it is a directory, not a
    symlink, owned by this process's user."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        raise OSError(
            errno.EPERM,
            f"{path} is not a directory of this user's (a symlink, or made by another user): "
            "nothing is written there",
            path,
        )
