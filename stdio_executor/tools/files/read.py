"""The Read tool: a text file as numbered lines, or an image as an image block.

Owns: Claude Code's Read output (``cat -n`` style numbering, the first 2000 lines unless
offset/limit say otherwise, lines cut at 2000 characters), its errors (missing, directory,
not a regular file, binary, offset past the end) and its note for an empty file; and the
stamp that lets Write and Edit proceed afterwards (``Session.remember_read``).
Must not: hold a file in memory. Lines are streamed, reading stops after offset+limit, a
long line is skipped in chunks, and numbered output past the size limit streams into an
``OutputSink``, so memory stays flat whatever the file or the request.

A small regular file (the common case, and the hot path of the benchmark) is read inline,
with no task and no thread; anything else is read in a worker thread that checks for
cancellation between chunks, so the event loop keeps serving other tools and an abort
stops a read of a huge file promptly.
"""

from __future__ import annotations

import base64
import io
import os
import stat
from collections.abc import Callable, Mapping
from typing import IO, Any

import anyio
import anyio.from_thread
import anyio.to_thread
import msgspec

from ..base import Tool, ToolContext, ToolOutcome, ToolSpec
from ..inputs import ReadInput, parse
from ..output import OutputSink
from .results import (
    Check,
    finish,
    input_error,
    missing_path,
    no_check,
    outside_now,
    tool_error,
)
from .text import IMAGE_EXTENSIONS, SNIFF_BYTES, UTF_8, TextCodec, image_type, looks_binary

__all__ = ["INLINE_MAX_BYTES", "ReadTool"]

# Files up to this size are read inline, in the loop's thread (a few tens of microseconds).
INLINE_MAX_BYTES = 256 * 1024
DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000
# 5 MB once base64-encoded: the Messages API's limit for one image.
MAX_IMAGE_BYTES = 3_750_000
EMPTY_NOTE = (
    "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>"
)
_CHECK_EVERY_LINES = 1024
# O_NONBLOCK: opening a FIFO must not hang; it is refused like any other non-file.
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
_SKIP_CHUNK_CHARS = 64 * 1024
# "\n     n\t", the separator before line n and its number, for the default window, made
# once: formatting numbers was a third of a small Read's time.
_PREFIXES = tuple(f"\n{n:>6}\t" for n in range(DEFAULT_LIMIT + 1))


class _ReadCall(msgspec.Struct):  # one per call
    file_path: str
    offset: int  # 1-based number of the first line shown
    limit: int


class ReadTool(Tool):
    confines = True  # ``ctx.confine`` is checked on the opened descriptor, before reading

    def validate(self, raw: Mapping[str, Any]) -> _ReadCall:
        value = parse(self.spec.name, ReadInput, raw)
        if not value.file_path:
            raise input_error(self.spec.name, "file_path", "must not be empty")
        limit = value.limit if isinstance(value.limit, int) else DEFAULT_LIMIT
        if limit < 1:
            raise input_error(self.spec.name, "limit", f"must be at least 1 (provided {limit})")
        # offset 0 reads from the start, as Claude Code does; a negative one counts from the
        # end, resolved once the file's length is known.
        offset = value.offset if isinstance(value.offset, int) else 1
        return _ReadCall(value.file_path, offset or 1, limit)

    def describe(self, value: Any) -> str:
        call: _ReadCall = value
        return call.file_path

    def run_inline(self, value: Any, ctx: ToolContext) -> ToolOutcome | None:
        call: _ReadCall = value
        path = ctx.resolve(call.file_path)
        # Raw system calls: a buffered file object would cost more than the whole read.
        confine = ctx.confine
        if confine is not None and not confine.contains(path):
            # Outside as written: judged in full (no descriptor needed to know that), and
            # nothing outside is opened on the way.
            return None
        try:
            fd = os.open(path, _OPEN_FLAGS)
        except OSError:
            return None  # the error (and its near-name hint) is worked out in a thread
        try:
            if confine is not None and not confine.holds(fd, path):
                return None  # a symlink leads outside: the policy decides (ask or deny)
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size > INLINE_MAX_BYTES:
                return None
            data = os.read(fd, st.st_size + 1)
        except OSError:
            return None
        finally:
            os.close(fd)
        if len(data) != st.st_size:
            return None  # changing while we read: take the careful path
        outcome = _render(path, data, None, call, self.spec, ctx, no_check)
        if not outcome.is_error:
            ctx.session.remember_read(path, st)
        return outcome

    async def run(self, value: Any, ctx: ToolContext) -> ToolOutcome:
        call: _ReadCall = value
        path = ctx.resolve(call.file_path)
        return await anyio.to_thread.run_sync(
            read_file, path, call, self.spec, ctx, anyio.from_thread.check_cancelled
        )


def read_file(
    path: str, call: _ReadCall, spec: ToolSpec, ctx: ToolContext, check: Check
) -> ToolOutcome:
    """Read any file, streaming it; for a worker thread (``check`` stops it when cancelled)."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except (FileNotFoundError, NotADirectoryError):
        return missing_path(path)
    except PermissionError:
        return tool_error(f"Permission denied: {path}")
    except OSError as exc:
        return tool_error(f"Cannot read {path}: {exc.strerror or exc}")
    if ctx.confine is not None and not ctx.confine.holds(fd, path):
        where = ctx.confine.where(fd, path)
        os.close(fd)
        return outside_now(spec.name, path, where)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        if stat.S_ISDIR(st.st_mode):
            return tool_error(f"{path} is a directory, not a file. List it with Glob or Bash `ls`.")
        return tool_error(f"{path} is not a regular file (a device, FIFO or socket).")
    with open(fd, "rb") as f:
        try:
            head = f.read(SNIFF_BYTES)
            rest = f if len(head) == SNIFF_BYTES else None
            outcome = _render(path, head, rest, call, spec, ctx, check)
        except OSError as exc:
            return tool_error(f"Cannot read {path}: {exc.strerror or exc}")
    if not outcome.is_error:
        # The stamp is the file as it was when opened, before any byte was read.
        ctx.session.remember_read(path, st)
    return outcome


def _render(
    path: str,
    head: bytes,
    rest: io.BufferedReader | None,
    call: _ReadCall,
    spec: ToolSpec,
    ctx: ToolContext,
    check: Check,
) -> ToolOutcome:
    """The outcome for a file whose first bytes are ``head``; ``rest`` reads on from there
    (``None``: ``head`` is the whole file)."""
    if not head:
        return ToolOutcome(EMPTY_NOTE)
    extension = _extension(path)
    media_type = image_type(head)
    if media_type is not None:
        return _image(path, head, rest, media_type, check)
    if extension in IMAGE_EXTENSIONS:
        return tool_error(
            f"{path} has a {extension} extension but is not a png, jpeg, gif or webp image."
        )
    # ASCII (most source files) is UTF-8 with no BOM: no trial decode needed.
    codec = UTF_8 if head.isascii() else TextCodec.detect(head, complete=rest is None)
    if looks_binary(head, codec, extension):
        return tool_error(
            f"{path} appears to be a binary file. Read shows text files and png, jpeg, gif "
            "and webp images; inspect other files with Bash (e.g. `file`, `xxd | head`)."
        )
    if rest is None:
        text = head[len(codec.bom) :].decode(codec.name, "replace")
        if call.offset < 0:
            call = _from_end(call, text.count("\n") + (not text.endswith("\n")))
        total, numbered = _number_text(text, call)
        more = total > call.offset + call.limit - 1
        out = None
    else:
        if call.offset < 0:
            rest.seek(len(codec.bom))
            call = _from_end(call, _count_lines(rest, codec.name, check))
        rest.seek(len(codec.bom))
        out = _Numbered(spec.max_result_bytes, lambda: ctx.session.spill_path(ctx.tool_use_id))
        # newline="\n": split on \n only and translate nothing (\r is stripped per line).
        # Closing the wrapper closes ``rest`` too; the caller's close is then a no-op.
        with io.TextIOWrapper(rest, encoding=codec.name, errors="replace", newline="\n") as text_io:
            total, more = _number_lines(text_io, call, out, check)
    if total == 0:  # only a byte-order mark
        return ToolOutcome(EMPTY_NOTE)
    if call.offset > total:
        lines = "line" if total == 1 else "lines"
        return tool_error(
            f"The file {path} has only {total} {lines}, fewer than the offset {call.offset}. "
            "Use a smaller offset."
        )
    last = call.offset + call.limit - 1
    note = f"(The file has more lines after line {last}. Use offset={last + 1} to read on.)"
    if out is not None:
        if more:
            out.add("")
            out.add(note)
        return out.result(spec, ctx)
    return finish(ToolOutcome(f"{numbered}\n\n{note}" if more else numbered), spec, ctx)


def _from_end(call: _ReadCall, total: int) -> _ReadCall:
    """A negative offset counts from the end: -1 is the last line (Claude Code's reading)."""
    return _ReadCall(call.file_path, max(total + call.offset + 1, 1), call.limit)


def _count_lines(stream: io.BufferedReader, encoding: str, check: Check) -> int:
    """The number of lines from the stream's position on, counted as ``_number_lines``
    counts them; the stream is left open (for a second pass) at an unspecified position."""
    text_io = io.TextIOWrapper(stream, encoding=encoding, errors="replace", newline="\n")
    count, last = 0, ""
    try:
        while chunk := text_io.read(_SKIP_CHUNK_CHARS):
            check()
            count += chunk.count("\n")
            last = chunk[-1]
    finally:
        text_io.detach()
    return count + (bool(last) and last != "\n")


def _number_text(text: str, call: _ReadCall) -> tuple[int, str]:
    """A whole (small) file's line count and its lines offset..offset+limit-1, numbered.

    The same output as ``_number_lines``, built with list operations: this is the hot path.
    """
    lines = text.split("\n")
    if not lines[-1]:
        lines.pop()  # a final newline ends the last line; it does not start another
    window = lines[call.offset - 1 : call.offset - 1 + call.limit]
    if "\r" in text:
        window = [line.removesuffix("\r") for line in window]
    if len(text) > MAX_LINE_CHARS and window and max(map(len, window)) > MAX_LINE_CHARS:
        window = [_cut(line, len(line)) for line in window]
    return len(lines), _numbered(window, call.offset)


def _numbered(window: list[str], first: int) -> str:
    """The lines numbered from ``first``, as ``cat -n`` does, one per line.

    Built as one ``join`` of prefixes and lines laid out by two slice assignments: joining
    ``prefix + line`` for each line made a string per line and cost 3-4x as much
    (bench/NOTES.md section 18).
    """
    if not window:
        return ""
    end = first + len(window)
    parts: list[str] = [""] * (2 * len(window))
    if end <= len(_PREFIXES):
        parts[0::2] = _PREFIXES[first:end]
    else:
        parts[0::2] = [f"\n{n:>6}\t" for n in range(first, end)]
    parts[1::2] = window
    parts[0] = parts[0][1:]  # no line before the first
    return "".join(parts)


def _extension(path: str) -> str:
    """``os.path.splitext(path)[1].lower()`` for a POSIX path, in a third of its time: the
    text from the last dot of the last component, unless only dots come before that dot."""
    sep = path.rfind("/")
    dot = path.rfind(".")
    if dot > sep and path[sep + 1 : dot].strip("."):
        return path[dot:].lower()
    return ""


def _cut(line: str, length: int) -> str:
    if length <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]}… [line cut: {length:,} characters]"


def _number_lines(
    stream: IO[str], call: _ReadCall, out: _Numbered, check: Check
) -> tuple[int, bool]:
    """Add lines offset..offset+limit-1; return how many lines were seen and whether more
    follow. Stops reading right after the last line asked for."""
    readline = stream.readline
    last = call.offset + call.limit - 1
    n = 0
    # One character over the limit tells a cut line from a full one; one more makes room
    # for the \r of a CRLF line.
    window = MAX_LINE_CHARS + 2
    while True:
        piece = readline(window)
        if not piece:
            return n, False
        n += 1
        if n % _CHECK_EVERY_LINES == 0:
            check()
        if piece[-1] == "\n":
            line = piece[:-1].removesuffix("\r")
            length = len(line)
        elif len(piece) < window:  # the last line, with no newline
            line = piece.removesuffix("\r")
            length = len(line)
        else:
            line = piece
            length = len(piece) + _skip_rest_of_line(readline, check, piece[-1] == "\r")
        if n < call.offset:
            continue
        if n > last:
            return n, True
        out.add(f"{n:>6}\t{_cut(line, length)}")


def _skip_rest_of_line(readline: Callable[[int], str], check: Check, cr: bool) -> int:
    """Read past the rest of an over-long line in chunks; return how many characters it
    adds to the line, a final \r not counted. ``cr``: the part already read ends in \r."""
    count = 0
    while True:
        check()
        chunk = readline(_SKIP_CHUNK_CHARS)
        if not chunk:
            return count - cr
        if chunk[-1] == "\n":
            if len(chunk) > 1:
                cr = chunk[-2] == "\r"
            return count + len(chunk) - 1 - cr
        count += len(chunk)
        cr = chunk[-1] == "\r"


class _Numbered:
    """The numbered lines of one Read. Past the size limit they stream into an
    ``OutputSink`` and its spill file, so memory stays flat however many lines are asked
    for; below it they are joined once at the end."""

    __slots__ = ("_chars", "_limit", "_parts", "_sink", "_spill_path")

    def __init__(self, limit: int, spill_path: Callable[[], str]) -> None:
        self._parts: list[str] = []
        self._chars = 0
        self._limit = limit
        self._spill_path = spill_path
        self._sink: OutputSink | None = None

    def add(self, line: str) -> None:
        self._parts.append(line)
        self._chars += len(line) + 1
        if self._chars > self._limit:
            self._flush()

    def _flush(self) -> None:
        if not self._parts:
            return
        text = "\n".join(self._parts)
        if self._sink is None:
            # More characters than the limit is more bytes than it: this output spills.
            self._sink = OutputSink(self._limit, self._spill_path())
        else:
            text = "\n" + text
        self._sink.write(text.encode("utf-8", "replace"))
        self._parts.clear()
        self._chars = 0

    def result(self, spec: ToolSpec, ctx: ToolContext) -> ToolOutcome:
        if self._sink is None:
            return finish(ToolOutcome("\n".join(self._parts)), spec, ctx)
        self._flush()
        out = self._sink.collect()  # before close: collect flushes the spill file
        self._sink.close()
        return ToolOutcome(
            out.text, truncated=out.truncated, output_path=out.path, output_bytes=out.total_bytes
        )


def _image(
    path: str, head: bytes, rest: io.BufferedReader | None, media_type: str, check: Check
) -> ToolOutcome:
    check()
    data = head if rest is None else head + rest.read(MAX_IMAGE_BYTES + 1 - len(head))
    if len(data) > MAX_IMAGE_BYTES:
        return tool_error(
            f"The image {path} is over {MAX_IMAGE_BYTES / 1e6:.2f} MB, the most that can be "
            "returned. Make a smaller copy (e.g. with ImageMagick via Bash) and read that."
        )
    block = {
        "type": "image",
        "source": {
            "type": "base64",
            "media_type": media_type,
            "data": base64.b64encode(data).decode("ascii"),
        },
    }
    return ToolOutcome([block])
