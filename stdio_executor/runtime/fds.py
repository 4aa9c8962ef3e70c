"""The protocol's file descriptors, claimed before anything can print.

Owns: ``claim_stdio`` (SPEC section 2: private duplicates of fds 0 and 1 for the wire, then
fd 1 points at stderr and fd 0 at /dev/null) and the O_NONBLOCK bookkeeping. Kept apart from
``stdio`` because it runs before the ``ready`` line, when importing anyio would cost ~20 ms.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat

import msgspec

__all__ = ["StdioFds", "claim_stdio"]


class StdioFds(msgspec.Struct):
    input_fd: int
    output_fd: int
    _saved_flags: dict[int, int]

    def restore(self) -> None:
        """Undo O_NONBLOCK: a terminal shares its file description with the shell."""
        for fd, flags in self._saved_flags.items():
            with contextlib.suppress(OSError):
                fcntl.fcntl(fd, fcntl.F_SETFL, flags)


def claim_stdio() -> StdioFds:
    input_fd = os.dup(0)
    output_fd = os.dup(1)
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    return StdioFds(input_fd, output_fd, {})


def _pollable(fd: int) -> bool:
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


def _set_nonblocking(fds: StdioFds, fd: int) -> None:
    flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    fds._saved_flags.setdefault(fd, flags)
    fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)
