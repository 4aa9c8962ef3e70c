"""The Write and Edit tools, and the read-before-write rule they share.

Owns: writing a file (parents created; every descriptor checked against the workspace before
a byte changes, ``confined_io``), replacing text in one, the rule that an existing
file must have been Read in this session and be unchanged on disk since (the stamp Read
left in ``Session.read_files``; both tools renew it after writing so they can follow each
other), and keeping a file's encoding and line endings across an Edit.
Must not: decide scheduling; both tools are unsafe (``read_only="never"``), so the core
runs them alone.

Small jobs run inline, like a small Read; larger ones in a worker thread. Once a worker
thread has started writing it finishes (anyio waits for it), so a file is never left
half-written by a cancellation.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from ...confine import Confinement
from ..base import InputError, Tool, ToolContext, ToolOutcome
from ..inputs import EditInput, WriteInput, parse
from ..session import FileStamp, Session
from .confined_io import Linked, Outside, read_bytes, run_edit, write_in_place
from .read import INLINE_MAX_BYTES, MAX_LINE_CHARS
from .results import Check, input_error, missing_path, no_check, tool_error
from .text import SNIFF_BYTES, UTF_8, TextCodec, looks_binary, match_line_endings

__all__ = ["EditTool", "WriteTool", "replace_text"]

# Model-supplied text up to this many characters is written inline.
INLINE_MAX_CHARS = 64 * 1024
_SNIPPET_CONTEXT = 4
_SNIPPET_MAX_LINES = 40

NOT_READ = "File has not been read yet. Read it first before writing to it."
CHANGED = (
    "File has been modified since it was read, either by the user or by another tool "
    "(a formatter, a linter, a Bash command). Read it again before writing to it."
)


class _WriteCall(msgspec.Struct, frozen=True):
    file_path: str
    content: str


class _EditCall(msgspec.Struct, frozen=True):
    file_path: str
    old_string: str
    new_string: str
    replace_all: bool


class WriteTool(Tool):
    confines = True  # ``ctx.confine`` is checked on every descriptor before a byte changes

    def validate(self, raw: Mapping[str, Any]) -> _WriteCall:
        value = parse(self.spec.name, WriteInput, raw)
        if not value.file_path:
            raise input_error(self.spec.name, "file_path", "must not be empty")
        return _WriteCall(value.file_path, value.content)

    def describe(self, value: Any) -> str:
        call: _WriteCall = value
        return call.file_path

    def run_inline(self, value: Any, ctx: ToolContext) -> ToolOutcome | None:
        call: _WriteCall = value
        path = ctx.resolve(call.file_path)
        if len(call.content) > INLINE_MAX_CHARS or not _inside_as_written(path, ctx):
            return None
        try:
            return write_file(path, call, ctx.session, no_check, ctx.confine)
        except Outside:
            return None  # the path led outside: judged again in full, in the call's task

    async def run(self, value: Any, ctx: ToolContext) -> ToolOutcome:
        call: _WriteCall = value
        return await run_edit(self.spec.name, write_file, ctx.resolve(call.file_path), call, ctx)


class EditTool(Tool):
    confines = True  # ``ctx.confine`` is checked on every descriptor before a byte changes

    def validate(self, raw: Mapping[str, Any]) -> _EditCall:
        value = parse(self.spec.name, EditInput, raw)
        if not value.file_path:
            raise input_error(self.spec.name, "file_path", "must not be empty")
        if value.old_string == value.new_string:
            raise InputError(
                "<tool_use_error>No changes to make: old_string and new_string are exactly "
                "the same.</tool_use_error>"
            )
        return _EditCall(value.file_path, value.old_string, value.new_string, value.replace_all)

    def describe(self, value: Any) -> str:
        call: _EditCall = value
        return call.file_path

    def run_inline(self, value: Any, ctx: ToolContext) -> ToolOutcome | None:
        call: _EditCall = value
        path = ctx.resolve(call.file_path)
        return edit_inline(edit_file, path, call, ctx, len(call.new_string))

    async def run(self, value: Any, ctx: ToolContext) -> ToolOutcome:
        call: _EditCall = value
        return await run_edit(self.spec.name, edit_file, ctx.resolve(call.file_path), call, ctx)


# ------------------------------------------------------------------------------ Write


def write_file(
    path: str,
    call: _WriteCall,
    session: Session,
    check: Check,
    confine: Confinement | None = None,
) -> ToolOutcome:
    """Raises ``Outside`` when ``confine`` is given and the path leads outside it."""
    check()
    existing = _existing(path)
    if isinstance(existing, ToolOutcome):
        return existing
    codec = UTF_8
    if existing is not None:
        refusal = _unread_or_changed(session, path, existing)
        if refusal is not None:
            return refusal
        codec = _codec_of(path, confine)
    content = call.content
    if codec.bom:
        content = content.removeprefix("\ufeff")  # the model copied the mark it was shown
    try:
        data = codec.encode(content)
    except UnicodeEncodeError:
        # A Latin-1 file rewritten with text Latin-1 lacks (or a lone surrogate: "?").
        data = content.encode("utf-8", "replace")
    failure = _put(path, data, session, confine)
    if failure is not None:
        return failure
    if existing is None:
        return ToolOutcome(f"File created successfully at: {path}")
    return ToolOutcome(f"The file {path} has been updated.")


def _codec_of(path: str, confine: Confinement | None) -> TextCodec:
    try:
        head = read_bytes(path, confine, SNIFF_BYTES)
    except OSError:
        return UTF_8
    return TextCodec.detect(head, complete=len(head) < SNIFF_BYTES)


# ------------------------------------------------------------------------------- Edit


def edit_file(
    path: str,
    call: _EditCall,
    session: Session,
    check: Check,
    confine: Confinement | None = None,
) -> ToolOutcome:
    """Raises ``Outside`` when ``confine`` is given and the path leads outside it."""
    check()
    existing = _existing(path)
    if isinstance(existing, ToolOutcome):
        return existing
    if existing is None:
        if call.old_string:
            return missing_path(path)
        # An empty old_string creates the file, as in Claude Code.
        failure = _put(path, call.new_string.encode("utf-8", "replace"), session, confine)
        return failure or ToolOutcome(f"File created successfully at: {path}")
    refusal = _unread_or_changed(session, path, existing)
    if refusal is not None:
        return refusal
    try:
        data = read_bytes(path, confine)
    except OSError as exc:
        return tool_error(f"Cannot read {path}: {exc.strerror or exc}")
    codec = TextCodec.detect(data, complete=True)
    if looks_binary(data, codec, os.path.splitext(path)[1].lower()):
        return tool_error(f"{path} appears to be a binary file; Edit changes text files only.")
    try:
        text = codec.decode(data)
    except UnicodeDecodeError:
        return tool_error(f"{path} is not valid {codec.label}; it was left as it is.")
    check()

    replaced = replace_text(text, call.old_string, call.new_string, call.replace_all)
    if isinstance(replaced, str):
        return tool_error(replaced)
    new_text, index, new, count = replaced
    try:
        out = codec.encode(new_text)
    except UnicodeEncodeError:
        return tool_error(
            f"new_string has characters that {path}'s encoding ({codec.label}) cannot hold; "
            "the file was left as it is. Use only characters of that encoding, or rewrite "
            "the file with Write (which stores it as UTF-8)."
        )
    failure = _put(path, out, session, confine)
    if failure is not None:
        return failure
    snippet = _snippet(new_text, index, new)
    if call.replace_all and count > 1:
        head = (
            f"The file {path} has been updated: all {count} occurrences were replaced. "
            "Here's the result of running `cat -n` on a snippet around the first:"
        )
    else:
        head = (
            f"The file {path} has been updated. Here's the result of running `cat -n` on a "
            "snippet of the edited file:"
        )
    return ToolOutcome(f"{head}\n{snippet}")


def replace_text(
    text: str, old_string: str, new_string: str, replace_all: bool
) -> tuple[str, int, str, int] | str:
    """One Edit applied to ``text``: (the new text, where the first replacement starts, the
    replacement as inserted, how many were made), or the model-facing reason it fails.

    An empty ``old_string`` stands for the whole of an empty (or blank) file."""
    if not old_string:
        if text.strip():
            return "Cannot create new file - file already exists."
        return new_string, 0, new_string, 1
    old, new = match_line_endings(text, old_string, new_string)
    count = text.count(old)
    if count == 0:
        return f"String to replace not found in file.\nString: {old_string}"
    if count > 1 and not replace_all:
        return (
            f"Found {count} matches of the string to replace, but replace_all is false. "
            "To replace all occurrences, set replace_all to true. To replace only one "
            "occurrence, please provide more context to uniquely identify the instance.\n"
            f"String: {old_string}"
        )
    index = text.find(old)
    if replace_all:
        return text.replace(old, new), index, new, count
    return text[:index] + new + text[index + len(old) :], index, new, count


def _snippet(text: str, index: int, new: str) -> str:
    """Numbered lines around the replacement at ``index`` (bounded, whatever the file)."""
    start = text.rfind("\n", 0, index) + 1
    for _ in range(_SNIPPET_CONTEXT):
        if start == 0:
            break
        start = text.rfind("\n", 0, start - 1) + 1
    number = text.count("\n", 0, start) + 1
    last = index + len(new) - 1 if new else index  # the replacement's last character
    wanted = text.count("\n", start, last) + 1 + _SNIPPET_CONTEXT
    lines: list[str] = []
    pos = start
    while len(lines) < min(wanted, _SNIPPET_MAX_LINES) and pos < len(text):
        end = text.find("\n", pos)
        if end == -1:
            end = len(text)
        line = text[pos:end].removesuffix("\r")[:MAX_LINE_CHARS]
        lines.append(f"{number:>6}\t{line}")
        number += 1
        pos = end + 1
    if wanted > _SNIPPET_MAX_LINES:
        lines.append("   ...")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- shared


def edit_inline(
    edit: Callable[..., ToolOutcome], path: str, call: Any, ctx: ToolContext, new_chars: int
) -> ToolOutcome | None:
    """A small edit of a small existing file, run right here; None: run it in a thread, or
    (a path that leads outside) judge the call again in full first."""
    if new_chars > INLINE_MAX_CHARS or not _inside_as_written(path, ctx):
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_size > INLINE_MAX_BYTES:
        return None
    try:
        return edit(path, call, ctx.session, no_check, ctx.confine)
    except (Outside, Linked):
        return None


def _inside_as_written(path: str, ctx: ToolContext) -> bool:
    """Whether an inline run may open ``path`` at all: one outside the roots as written is
    judged in full first (it asks or is denied), and nothing outside is opened on the way."""
    return ctx.confine is None or ctx.confine.contains(path)


def _existing(path: str) -> os.stat_result | ToolOutcome | None:
    """The file's stat, ``None`` if there is no file yet, or the error to report."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        return tool_error(f"Cannot access {path}: {exc.strerror or exc}")
    if stat.S_ISDIR(st.st_mode):
        return tool_error(f"{path} is a directory, not a file.")
    if not stat.S_ISREG(st.st_mode):
        return tool_error(f"{path} is not a regular file (a device, FIFO or socket).")
    return st


def _unread_or_changed(session: Session, path: str, st: os.stat_result) -> ToolOutcome | None:
    stamp = session.read_files.get(path)
    if stamp is None:
        return tool_error(NOT_READ)
    if stamp != FileStamp.of(st):
        return tool_error(CHANGED)
    return None


def _put(
    path: str, data: bytes, session: Session, confine: Confinement | None
) -> ToolOutcome | None:
    """Write the bytes in place (mode, owner and links kept; parents created) and renew the
    stamp. Raises ``Outside`` (nothing written) when the path leads outside ``confine``."""
    try:
        session.remember_read(path, write_in_place(path, data, confine))
    except OSError as exc:
        return tool_error(f"Cannot write {path}: {exc.strerror or exc}")
    return None
