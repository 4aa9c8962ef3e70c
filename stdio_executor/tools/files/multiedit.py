"""The MultiEdit tool: several Edit replacements in one file, all of them or none.

Owns: applying a list of edits in order, each to the text the ones before it left (with
Edit's own matching, ``write.replace_text``), Claude Code's refusal of an edit whose
old_string lies inside an earlier edit's new_string, and writing the result once: to a
temporary file beside the original, renamed over it, so a crash or a full disk leaves either
the old file or the new one, never a mix. A file that the rename would change in another way
(a hard-linked file, one owned by someone else) is rewritten in place, as Edit does.
Must not: relax Edit's rules: the read-before-edit stamp, the staleness check, encodings and
line endings are Edit's (``write``), and the stamp is renewed after writing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import msgspec

from ...confine import Confinement
from ..base import InputError, Tool, ToolContext, ToolOutcome
from ..inputs import MultiEditInput, parse
from ..session import Session
from .confined_io import read_bytes, replace_atomically, run_edit
from .results import Check, input_error, missing_path, tool_error
from .text import UTF_8, TextCodec, looks_binary
from .write import (
    _existing,
    _unread_or_changed,
    edit_inline,
    replace_text,
)

__all__ = ["MultiEditTool", "atomic_write"]

_SHOWN_CHARS = 60


class _Entry(msgspec.Struct, frozen=True):
    old_string: str
    new_string: str
    replace_all: bool


class _MultiEditCall(msgspec.Struct, frozen=True):
    file_path: str
    edits: tuple[_Entry, ...]

    @property
    def chars(self) -> int:
        return sum(len(e.new_string) for e in self.edits)


class MultiEditTool(Tool):
    confines = True  # ``ctx.confine`` is checked on every descriptor before a byte changes

    def validate(self, raw: Mapping[str, Any]) -> _MultiEditCall:
        value = parse(self.spec.name, MultiEditInput, raw)
        if not value.file_path:
            raise input_error(self.spec.name, "file_path", "must not be empty")
        for i, edit in enumerate(value.edits):
            if edit.old_string == edit.new_string:
                raise InputError(
                    "<tool_use_error>No changes to make: old_string and new_string are exactly "
                    f"the same (edits[{i}]).</tool_use_error>"
                )
        entries = tuple(_Entry(e.old_string, e.new_string, e.replace_all) for e in value.edits)
        return _MultiEditCall(value.file_path, entries)

    def describe(self, value: Any) -> str:
        call: _MultiEditCall = value
        return call.file_path

    def run_inline(self, value: Any, ctx: ToolContext) -> ToolOutcome | None:
        call: _MultiEditCall = value
        return edit_inline(multi_edit, ctx.resolve(call.file_path), call, ctx, call.chars)

    async def run(self, value: Any, ctx: ToolContext) -> ToolOutcome:
        call: _MultiEditCall = value
        return await run_edit(self.spec.name, multi_edit, ctx.resolve(call.file_path), call, ctx)


def multi_edit(
    path: str,
    call: _MultiEditCall,
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
    if existing is None:
        if call.edits[0].old_string:
            return missing_path(path)
        text = ""  # an empty old_string in the first edit creates the file, as Edit does
    else:
        refusal = _unread_or_changed(session, path, existing)
        if refusal is not None:
            return refusal
        try:
            data = read_bytes(path, confine)
        except OSError as exc:
            return tool_error(f"Cannot read {path}: {exc.strerror or exc}")
        codec = TextCodec.detect(data, complete=True)
        if looks_binary(data, codec, os.path.splitext(path)[1].lower()):
            return tool_error(
                f"{path} appears to be a binary file; MultiEdit changes text files only."
            )
        try:
            text = codec.decode(data)
        except UnicodeDecodeError:
            return tool_error(f"{path} is not valid {codec.label}; it was left as it is.")
    check()

    original = text
    lines: list[str] = []
    earlier_new: list[str] = []
    total = len(call.edits)
    for number, edit in enumerate(call.edits, 1):
        if edit.old_string and any(edit.old_string in new for new in earlier_new):
            return _failed(
                number,
                total,
                "Cannot edit file: old_string is a substring of a new_string from a previous "
                f"edit.\nString: {edit.old_string}",
            )
        replaced = replace_text(text, edit.old_string, edit.new_string, edit.replace_all)
        if isinstance(replaced, str):
            return _failed(number, total, replaced)
        text, _index, _new, count = replaced
        earlier_new.append(edit.new_string)
        lines.append(_summary(number, edit, count))
    if existing is not None and text == original:
        return tool_error("Original and edited file match exactly. Failed to apply edit.")
    try:
        out = codec.encode(text)
    except UnicodeEncodeError:
        return tool_error(
            f"The edits add characters that {path}'s encoding ({codec.label}) cannot hold; the "
            "file was left as it is. Use only characters of that encoding, or rewrite the file "
            "with Write (which stores it as UTF-8)."
        )
    failure = atomic_write(path, out, session, confine)
    if failure is not None:
        return failure
    edits = "edit" if total == 1 else "edits"
    return ToolOutcome(f"Applied {total} {edits} to {path}:\n" + "\n".join(lines))


def _failed(number: int, total: int, reason: str) -> ToolOutcome:
    where = "" if total == 1 else f"\n(edit {number} of {total}; none of the edits was applied)"
    return tool_error(reason + where)


def _summary(number: int, edit: _Entry, count: int) -> str:
    if not edit.old_string:
        return f'{number}. Created the file with "{_shown(edit.new_string)}"'
    times = f" ({count} occurrences)" if count > 1 else ""
    return f'{number}. Replaced "{_shown(edit.old_string)}" with "{_shown(edit.new_string)}"{times}'


def _shown(s: str) -> str:
    s = s.replace("\r", "").replace("\n", "\\n")
    return s if len(s) <= _SHOWN_CHARS else s[:_SHOWN_CHARS] + "…"


def atomic_write(
    path: str, data: bytes, session: Session, confine: Confinement | None = None
) -> ToolOutcome | None:
    """Replace the file's contents with ``data`` all at once and renew the read stamp.

    The bytes go to a temporary file in the same directory, which then takes the file's
    place (``rename`` is atomic on one file system). The target of a symbolic link is
    replaced, not the link. A hard-linked file or one owned by another user is rewritten in
    place instead: a rename would split the link or change the owner. Raises ``Outside``
    (nothing written) when the path leads outside ``confine`` (``confined_io``).
    """
    try:
        session.remember_read(path, replace_atomically(path, data, confine))
    except OSError as exc:
        return tool_error(f"Cannot write {path}: {exc.strerror or exc}")
    return None
