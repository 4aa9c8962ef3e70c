"""The daemon's ends of the host's pipes.

Owns: claiming the protocol's file descriptors (SPEC section 2: the wire keeps private
duplicates of fds 0 and 1, then fd 1 points at stderr and fd 0 at /dev/null, so nothing a
library or child prints can corrupt the stream), reading input in large chunks without a
thread hop, and the single writer of the output stream.
Must not: parse or interpret messages.

Reading: the fd is made non-blocking; a pipe, a socket or a terminal is read by a reader
callback the event loop runs as soon as it is readable (``feed_chunks``: no task per
wake-up, no epoll registration per chunk); a regular file or /dev/null,
which epoll refuses, is read with plain reads and a checkpoint between chunks. Writing:
events are appended to one buffer and written with as few syscalls as possible; when the
host is slow to read, the rest waits for ``wait_writable`` and the reader pauses, so memory
stays bounded.
"""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

import anyio
import anyio.lowlevel

from .fds import StdioFds, _pollable, _set_nonblocking

if TYPE_CHECKING:
    from ..journal import Journal

__all__ = ["StdioFds", "WireWriter", "feed_chunks", "read_chunks"]

_CHUNK = 65536
# Stop reading commands while this much output waits for the host.
_BACKLOG_LIMIT = 8 * 1024 * 1024


async def read_chunks(
    fds: StdioFds, backlog: Callable[[], anyio.Event | None] | None = None
) -> AsyncIterator[bytes]:
    """Yield input as it arrives, in chunks of up to 64 KiB, until EOF."""
    fd = fds.input_fd
    pollable = _pollable(fd)
    if pollable:
        _set_nonblocking(fds, fd)
    while True:
        if backlog is not None:
            waiter = backlog()
            if waiter is not None:
                await waiter.wait()
        try:
            chunk = os.read(fd, _CHUNK)
        except BlockingIOError:
            await anyio.wait_readable(fd)
            continue
        except OSError as exc:
            if exc.errno in (errno.EIO, errno.EBADF):
                return  # a terminal that went away reads as EOF
            raise
        if not chunk:
            return
        yield chunk
        if not pollable:
            await anyio.lowlevel.checkpoint()


async def feed_chunks(
    fds: StdioFds,
    on_chunk: Callable[[bytes], None],
    backlog: Callable[[], anyio.Event | None] | None = None,
    on_read_all: Callable[[], None] | None = None,
) -> None:
    """Hand input to ``on_chunk`` as it arrives, in chunks of up to 64 KiB; return at EOF.
    ``on_read_all`` is called each time reading stops for now (nothing more to read, output
    backlog, end of input), after the chunks read until then.

    On a pipe, a socket or a terminal the chunk is read and handed over inside the loop's
    reader callback, which stays registered: a line reaches the inbox in the same loop
    iteration that saw it arrive. ``anyio.wait_readable`` per chunk (register the fd, wake a
    task, unregister) cost one more loop iteration and two ``epoll_ctl`` on every idle
    wake-up (bench/NOTES.md). Like ``read_chunks``, it reads all there is before
    ``on_read_all`` (a host that writes everything before it reads gets the same slack as
    before): until a read comes back short, which means the pipe was empty a moment ago (a
    further read would only fail with ``EAGAIN``; what arrives later makes the fd readable
    again). The reader is unregistered while output backlog pauses reading (a
    level-triggered reader left registered would spin).
    """
    fd = fds.input_fd
    if not _pollable(fd):
        async for chunk in read_chunks(fds, backlog):
            on_chunk(chunk)
            if on_read_all is not None:
                on_read_all()
        return
    _set_nonblocking(fds, fd)
    loop = asyncio.get_running_loop()
    while True:
        if backlog is not None:
            waiter = backlog()
            if waiter is not None:
                await waiter.wait()
        stop: asyncio.Future[bool] = loop.create_future()  # True: end of input

        def read_all(stop: asyncio.Future[bool]) -> None:
            while True:  # as read_chunks does: all there is, unless output backs up
                if backlog is not None and backlog() is not None:
                    loop.remove_reader(fd)
                    stop.set_result(False)  # paused until the host reads our output
                    return
                try:
                    chunk = os.read(fd, _CHUNK)
                except BlockingIOError:
                    return
                except OSError as exc:
                    if exc.errno not in (errno.EIO, errno.EBADF):
                        raise
                    chunk = b""  # a terminal that went away reads as EOF
                if not chunk:
                    loop.remove_reader(fd)
                    stop.set_result(True)
                    return
                on_chunk(chunk)
                if len(chunk) < _CHUNK:
                    return  # drained: one system call (EAGAIN) fewer per command

        def readable(stop: asyncio.Future[bool] = stop) -> None:
            if stop.done():
                return
            try:
                read_all(stop)
                if on_read_all is not None:
                    on_read_all()
            except BaseException as exc:  # the awaiting task raises it
                loop.remove_reader(fd)
                if stop.done():
                    raise
                stop.set_exception(exc)

        loop.add_reader(fd, readable)
        # What is there already is read now, not one loop iteration later: at start the
        # loop counts the host's first lines as work before it does start-up chores.
        readable()
        try:
            at_eof = await stop
        finally:
            loop.remove_reader(fd)
        if at_eof:
            return


class WireWriter:
    """Owns the output fd. ``send`` never blocks; ``kick`` writes what it can now."""

    def __init__(
        self, fds: StdioFds, on_closed: Callable[[], None], journal: Journal | None = None
    ) -> None:
        self._fds = fds
        # Every event is journaled when queued, and the journal is written before stdout.
        self.journal = journal
        self._fd = fds.output_fd
        self._buf = bytearray()
        self._wake = anyio.Event()
        self._drained: anyio.Event | None = None
        self._empty: anyio.Event | None = None  # set when the buffer empties (flush)
        self._on_closed = on_closed
        self.closed = False
        self._pollable = _pollable(self._fd)
        if self._pollable:
            _set_nonblocking(fds, self._fd)

    @property
    def pending(self) -> int:
        return len(self._buf)

    def send(self, data: bytes) -> None:
        if not self.closed:
            self._buf += data
            if self.journal is not None:
                self.journal.record_out(data)

    def kick(self) -> None:
        """Write as much as the fd takes without blocking; the writer task does the rest."""
        if not self._buf or self.closed:
            return
        self._write_some()
        if self._buf and not self._wake.is_set():
            self._wake.set()

    def backlog_waiter(self) -> anyio.Event | None:
        """An event to wait on while too much output is queued, else None."""
        if len(self._buf) < _BACKLOG_LIMIT:
            return None
        if self._drained is None:
            self._drained = anyio.Event()
        return self._drained

    async def run(self) -> None:
        """The writer task: waits for the host to take more whenever the pipe is full."""
        while not self.closed:
            await self._wake.wait()
            self._wake = anyio.Event()
            while self._buf and not self.closed:
                self._write_some()
                if self._buf and not self.closed:
                    await anyio.wait_writable(self._fd)

    async def flush(self) -> None:
        """Write everything queued (callers bound the wait for a slow host).

        Only the writer task ever waits on the fd: anyio refuses a second waiter with
        ``BusyResourceError``, which a slow host at exit used to turn into exit code 1 and
        lost results. So this wakes the writer and waits for the buffer to empty.
        """
        self.kick()
        while self._buf and not self.closed:
            if self._empty is None:
                self._empty = anyio.Event()
            await self._empty.wait()

    def _write_some(self) -> None:
        if self.journal is not None:
            self.journal.flush()
        try:
            written = os.write(self._fd, self._buf)
        except BlockingIOError:
            return
        except OSError as exc:
            if exc.errno in (errno.EPIPE, errno.EBADF, errno.ECONNRESET):
                self._close()
                return
            raise
        del self._buf[:written]
        if not self._buf and self._empty is not None:
            self._empty.set()
            self._empty = None
        if self._drained is not None and len(self._buf) < _BACKLOG_LIMIT // 2:
            self._drained.set()
            self._drained = None

    def _close(self) -> None:
        self.closed = True
        self._buf.clear()
        self._wake.set()
        if self._drained is not None:
            self._drained.set()
        if self._empty is not None:
            self._empty.set()
        self._on_closed()
