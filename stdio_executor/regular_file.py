"""Reading a small file that someone else may have planted: a repository's
``.claude/settings.json``, ``.mcp.json``, ``.git`` file or git index.

Owns: ``read_regular``, which opens without blocking and without becoming the file's
controlling terminal, refuses anything but a regular file (a FIFO would block a plain
``open`` forever, in start-up or in the event loop; a device could be read without end),
and refuses a file past a size limit instead of loading it.
Must not: follow policy (callers decide what an unreadable file means) or be used for
the files tools read for the model (those have their own confinement and limits).
"""

from __future__ import annotations

import errno
import os
import stat

__all__ = ["read_regular"]

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY


def read_regular(path: str, limit: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them; ``OSError`` for
    anything else (``FileNotFoundError`` when it is absent)."""
    fd = os.open(path, _FLAGS)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        if st.st_size > limit:
            raise OSError(errno.EFBIG, f"larger than {limit} bytes", path)
        chunks = []
        while data := os.read(fd, 1 << 20):
            chunks.append(data)
            limit -= len(data)
            if limit < 0:
                raise OSError(errno.EFBIG, "grew past its size limit", path)
        return b"".join(chunks)
    finally:
        os.close(fd)
