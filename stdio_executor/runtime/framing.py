"""Splitting the input byte stream into numbered lines, within a size bound.

Owns: line numbering, ``\\r\\n`` and blank-line handling, and the ``--max-line-bytes`` rule:
an over-long line is skipped as it streams past and reported once its end arrives.
Must not: decode JSON or talk to the daemon; it is fed chunks and returns lines.

Memory: a line is complete only at its ``\\n``, so until then nobody knows whether it will be
a 60 MiB ``Write`` (kept) or a 200 MiB accident (skipped). The part of an unfinished line
beyond ``spool_bytes`` (1 MiB) goes to an anonymous temporary file, not to memory, so an
over-long line costs the daemon about ``spool_bytes`` of memory however long it is, and its
bytes past the limit are never kept anywhere: once the limit is crossed the spool is dropped
and the rest of the line is only counted. A line that ends within the limit is read back in
one piece (its command needs it in memory anyway).
"""

from __future__ import annotations

from typing import IO

import msgspec

__all__ = ["SPOOL_BYTES", "LineFramer", "TooLong"]

# An unfinished line is held in memory up to this size, then spooled to a temporary file.
SPOOL_BYTES = 1 << 20


class TooLong(msgspec.Struct, frozen=True):
    lineno: int
    size: int


class LineFramer:
    def __init__(
        self, max_line_bytes: int, *, spool_bytes: int = SPOOL_BYTES, spool_dir: str | None = None
    ) -> None:
        self.max_line_bytes = max_line_bytes
        self.lineno = 0
        self._buf = bytearray()
        self._spool: IO[bytes] | None = None  # the unfinished line past spool_bytes
        self._spool_bytes = spool_bytes
        self._spool_dir = spool_dir
        self._pending = 0  # bytes of the unfinished line so far (buffer + spool)
        self._skipping = False
        self._skipped = 0

    @property
    def held_bytes(self) -> int:
        """Bytes of the unfinished line kept in memory (for tests and the bench)."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[tuple[int, bytes] | TooLong]:
        out: list[tuple[int, bytes] | TooLong] = []
        start = 0
        while True:
            nl = data.find(b"\n", start)
            if nl < 0:
                break
            self.lineno += 1
            if self._skipping:
                out.append(TooLong(self.lineno, self._skipped + nl - start))
                self._skipping = False
                self._skipped = 0
            elif self._pending:
                piece = data[start:nl]
                if self._pending + len(piece) > self.max_line_bytes:
                    out.append(TooLong(self.lineno, self._pending + len(piece)))
                    self._drop()
                else:
                    self._keep(piece)
                    self._emit(self._take(), out)
            else:
                self._emit(data[start:nl], out)
            start = nl + 1
        if start < len(data):
            rest = memoryview(data)[start:]
            if self._skipping:
                self._skipped += len(rest)
            elif self._pending + len(rest) > self.max_line_bytes:
                self._skipping = True
                self._skipped = self._pending + len(rest)
                self._drop()
            else:
                self._keep(rest)
        return out

    def eof(self) -> list[tuple[int, bytes] | TooLong]:
        """A last line without its ``\\n`` still counts."""
        out: list[tuple[int, bytes] | TooLong] = []
        if self._skipping:
            self.lineno += 1
            out.append(TooLong(self.lineno, self._skipped))
        elif self._pending:
            self.lineno += 1
            self._emit(self._take(), out)
        self._skipping = False
        return out

    def _keep(self, piece: bytes | memoryview) -> None:
        self._pending += len(piece)
        if self._spool is not None:
            self._spool.write(piece)
        elif len(self._buf) + len(piece) > self._spool_bytes:
            import tempfile  # ~4-7 ms with shutil and random: only for a line this long

            self._spool = tempfile.TemporaryFile(dir=self._spool_dir)  # noqa: SIM115
            self._spool.write(self._buf)
            self._spool.write(piece)
            self._buf = bytearray()  # give the memory back, not just the length
        else:
            self._buf += piece

    def _take(self) -> bytes:
        """The unfinished line, complete now; the framer forgets it."""
        if self._spool is not None:
            self._spool.seek(0)
            line = self._spool.read()
            self._spool.close()
            self._spool = None
        else:
            line = bytes(self._buf)
            self._buf.clear()
        self._pending = 0
        return line

    def _drop(self) -> None:
        if self._spool is not None:
            self._spool.close()
            self._spool = None
        self._buf = bytearray()
        self._pending = 0

    def _emit(self, line: bytes, out: list[tuple[int, bytes] | TooLong]) -> None:
        if len(line) > self.max_line_bytes:
            out.append(TooLong(self.lineno, len(line)))
            return
        if line.endswith(b"\r"):
            line = line[:-1]
        if line and not line.isspace():
            out.append((self.lineno, line))
