"""Bounded collection of tool output, spilling to a file past the tool's size limit.

Owns: the single mechanism every tool uses for large results (SPEC section 5): below the
limit the output is kept in memory; past it, everything is streamed to a file in the spill
directory and the result becomes a preview (head and tail), the path and the full size.
Memory stays flat however large the output: at most ``limit + tail`` bytes are held.
Must not: know which tool produced the bytes, or open a spill file any other way than
``create_new``.

Every file in the spill directory is created new (``create_new``): ``O_CREAT | O_EXCL |
O_NOFOLLOW``, mode 0600. A name that already exists, a symlink planted there included, is
never opened: before, a symlink to ``~/.bashrc`` planted under the next output's name
(the names are predictable) made the daemon write the next large output through it.
"""

from __future__ import annotations

import codecs
import os
from typing import BinaryIO

import msgspec

__all__ = [
    "CollectedOutput",
    "OutputSink",
    "complete_utf8",
    "create_new",
    "decode_prefix",
    "decode_suffix",
    "pin_directory",
    "spill_text",
]

_HEAD = 2_000
_TAIL = 2_000


_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)


# Directories whose files ``create_new`` makes through a descriptor opened when the
# directory was checked (``pin_directory``), not through the path.
_PINNED: dict[str, int] = {}


def pin_directory(path: str, fd: int) -> None:
    """Make files in ``path`` through ``fd`` from now on (the descriptor is kept)."""
    path = os.path.normpath(path)
    old = _PINNED.pop(path, None)
    if old is not None:
        os.close(old)
    _PINNED[path] = fd


def create_new(path: str) -> BinaryIO:
    """``path`` created for writing, owner-only; ``FileExistsError`` if anything (a file,
    a symlink) is there already. In a pinned directory, in the directory pinned."""
    parent, name = os.path.split(path)
    at = _PINNED.get(os.path.normpath(parent)) if parent else None
    return open(os.open(name if at is not None else path, _NEW, 0o600, dir_fd=at), "wb")


class CollectedOutput(msgspec.Struct, frozen=True):
    text: str
    truncated: bool
    path: str | None
    total_bytes: int


class OutputSink:
    """Accepts bytes as they come; ``collect()`` gives the model-facing text."""

    def __init__(self, limit: int, spill_path: str) -> None:
        self.limit = limit
        self.spill_path = spill_path
        self.total = 0
        self._buf = bytearray()
        self._tail = bytearray()
        self._file: BinaryIO | None = None
        self._lost = ""

    @property
    def spilled(self) -> bool:
        return self._file is not None

    def write(self, data: bytes) -> None:
        self.total += len(data)
        if self._file is None:
            self._buf += data
            if len(self._buf) > self.limit:
                self._spill()
            return
        self._file.write(data)
        if len(data) > 2 * _TAIL:  # a large chunk: copy its end, not all of it
            self._tail = bytearray(data[-_TAIL:])
            return
        self._tail += data
        if len(self._tail) > 2 * _TAIL:
            del self._tail[:-_TAIL]

    def _spill(self) -> None:
        try:
            self._file = create_new(self.spill_path)
        except OSError as exc:
            # Not saved (the name was taken, the directory is not ours): the preview
            # stays, the rest is dropped, and the result says so.
            self._lost = f"the full output could not be saved ({exc.strerror or exc})"
            self._file = open(os.devnull, "wb")  # noqa: SIM115 - closed in close()
        self._file.write(self._buf)
        self._tail = bytearray(self._buf[-_TAIL:])
        del self._buf[_HEAD:]  # keep only the head for the preview

    def collect(self) -> CollectedOutput:
        """The output so far; safe to call more than once (partial output on cancel)."""
        if self._file is None:
            return CollectedOutput(_decode(bytes(self._buf)), False, None, self.total)
        if not self._file.closed:
            self._file.flush()
        head = decode_prefix(bytes(self._buf[:_HEAD]))
        tail = decode_suffix(bytes(self._tail[-_TAIL:]))
        where = self._lost or f"the full output is in {self.spill_path}"
        note = f"\n\n... [output truncated: {self.total:,} bytes in all; {where}] ...\n\n"
        path = None if self._lost else self.spill_path
        return CollectedOutput(head + note + tail, True, path, self.total)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def spill_text(text: str, limit: int, spill_path: str) -> CollectedOutput:
    """Apply the same limit to a result a tool built in memory (file tools)."""
    data = text.encode("utf-8", "surrogateescape")
    if len(data) <= limit:
        return CollectedOutput(text, False, None, len(data))
    sink = OutputSink(limit, spill_path)
    sink.write(data)
    out = sink.collect()
    sink.close()
    return out


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def decode_prefix(data: bytes) -> str:
    # A cut may split a multi-byte character: drop the broken end instead of a U+FFFD.
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    return decoder.decode(data, final=False)


def decode_suffix(data: bytes) -> str:
    for skip in range(4):  # skip continuation bytes of a character cut at the start
        if skip < len(data) and (data[skip] & 0xC0) != 0x80:
            return _decode(data[skip:])
    return _decode(data)


def complete_utf8(data: bytes) -> int:
    """Length of the longest prefix that does not end inside a UTF-8 sequence."""
    end = len(data)
    for back in range(1, min(4, end) + 1):
        byte = data[end - back]
        if byte & 0xC0 == 0x80:
            continue  # a continuation byte: look further back for the lead byte
        if byte >= 0xC0:
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return end - back if back < need else end
        return end
    return end
