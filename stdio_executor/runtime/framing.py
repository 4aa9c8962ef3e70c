"""Splitting the input byte stream into numbered lines, within a size bound.

Owns: line numbering, ``\\r\\n`` and blank-line handling, and the ``--max-line-bytes`` rule:
an over-long line is skipped as it streams past (its bytes are never kept), and reported
once its end arrives. Sans-I/O: fed chunks, returns lines.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LineFramer", "TooLong"]


@dataclass(frozen=True, slots=True)
class TooLong:
    lineno: int
    size: int


class LineFramer:
    def __init__(self, max_line_bytes: int) -> None:
        self.max_line_bytes = max_line_bytes
        self.lineno = 0
        self._buf = bytearray()
        self._skipping = False
        self._skipped = 0

    def feed(self, data: bytes) -> list[tuple[int, bytes] | TooLong]:
        out: list[tuple[int, bytes] | TooLong] = []
        start = 0
        limit = self.max_line_bytes
        while True:
            nl = data.find(b"\n", start)
            if nl < 0:
                break
            self.lineno += 1
            if self._skipping:
                out.append(TooLong(self.lineno, self._skipped + nl - start))
                self._skipping = False
                self._skipped = 0
            else:
                if self._buf:
                    self._buf += data[start:nl]
                    line = bytes(self._buf)
                    self._buf.clear()
                else:
                    line = data[start:nl]
                self._emit(line, out)
            start = nl + 1
        rest = len(data) - start
        if rest:
            if self._skipping:
                self._skipped += rest
            elif len(self._buf) + rest > limit:
                self._skipping = True
                self._skipped = len(self._buf) + rest
                self._buf.clear()
            else:
                self._buf += data[start:]
        return out

    def eof(self) -> list[tuple[int, bytes] | TooLong]:
        """A last line without its ``\\n`` still counts."""
        out: list[tuple[int, bytes] | TooLong] = []
        if self._skipping:
            self.lineno += 1
            out.append(TooLong(self.lineno, self._skipped))
        elif self._buf:
            self.lineno += 1
            line = bytes(self._buf)
            self._buf.clear()
            self._emit(line, out)
        self._skipping = False
        return out

    def _emit(self, line: bytes, out: list[tuple[int, bytes] | TooLong]) -> None:
        if len(line) > self.max_line_bytes:
            out.append(TooLong(self.lineno, len(line)))
            return
        if line.endswith(b"\r"):
            line = line[:-1]
        if line and not line.isspace():
            out.append((self.lineno, line))
