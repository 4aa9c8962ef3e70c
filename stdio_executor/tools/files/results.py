"""How the file tools word their outcomes.

Owns: the ``<tool_use_error>`` wrapping Claude Code uses for a failed call, the wording of
input checks a Struct cannot express, the "did you mean" hint for a path that does not
exist, and handing oversized text to ``spill_text`` (SPEC section 5).
Must not: decide whether something is an error; the tools do.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import msgspec

from ..base import InputError, ToolContext, ToolOutcome, ToolSpec
from ..output import spill_text
from ..validation import Problems

__all__ = [
    "Check",
    "finish",
    "input_error",
    "linked_now",
    "missing_path",
    "no_check",
    "outside_now",
    "tool_error",
]

# Raises anyio's cancel exception when the call was cancelled: a worker thread checks it
# between chunks of work; the inline fast path passes ``no_check``.
Check = Callable[[], None]

# Directories larger than this are not scanned for a near name (the hint is a nicety).
_HINT_SCAN_LIMIT = 5_000


def no_check() -> None:
    return None


def tool_error(message: str) -> ToolOutcome:
    return ToolOutcome(f"<tool_use_error>{message}</tool_use_error>", is_error=True)


def outside_now(tool: str, path: str, where: str | None) -> ToolOutcome:
    """The file opened is outside the roots, though the path was inside when the call was
    allowed: a symlink on the way changed in between. Refused, as a denial."""
    shown = f"{path} (now = {where})" if where and where != path else path
    return ToolOutcome(
        f"<tool_use_error>Permission to use {tool} on {shown} has been denied: the path "
        "led outside the workspace and its additional directories when it was opened, "
        "though it was inside when the call was allowed.</tool_use_error>",
        is_error=True,
        status="denied",
    )


def linked_now(tool: str, path: str, links: int) -> ToolOutcome:
    """The file had one name when the call was allowed and has ``links`` now: an edit
    would change it under names nobody checked. Refused, as a denial."""
    return ToolOutcome(
        f"<tool_use_error>Permission to use {tool} on {path} has been denied: the file "
        f"has {links} names (hard links) now, though it had one when the call was allowed; "
        "an edit would change it under every name.</tool_use_error>",
        is_error=True,
        status="denied",
    )


def input_error(tool: str, field: str, problem: str) -> InputError:
    """A problem found after parsing, worded as ``validation`` words the others."""
    return InputError(Problems(other=[(field, problem)]).message(tool))


def missing_path(path: str, what: str = "File") -> ToolOutcome:
    message = f"{what} does not exist: {path}"
    near = _near_name(path)
    if near is not None:
        message += f". Did you mean {near}?"
    elif not os.path.isdir(os.path.dirname(path)):
        message += f" (its directory {os.path.dirname(path)} does not exist either)"
    return tool_error(message)


def _near_name(path: str) -> str | None:
    parent, name = os.path.split(path)
    names: list[str] = []
    try:
        with os.scandir(parent) as entries:
            for entry in entries:
                names.append(entry.name)
                if len(names) >= _HINT_SCAN_LIMIT:
                    break
    except OSError:
        return None
    lowered = {n.lower(): n for n in names}
    if name.lower() in lowered:  # README.md for readme.md
        return os.path.join(parent, lowered[name.lower()])
    import difflib  # only for a path that does not exist

    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    return os.path.join(parent, close[0]) if close else None


def finish(outcome: ToolOutcome, spec: ToolSpec, ctx: ToolContext) -> ToolOutcome:
    """The outcome with text over the tool's size limit replaced by a preview and a file."""
    content = outcome.content
    # Cheap test first: a character is at most 4 bytes of UTF-8. An outcome already cut
    # (an OutputSink's preview) must not overwrite its own spill file.
    if (
        outcome.truncated
        or not isinstance(content, str)
        or len(content) * 4 <= spec.max_result_bytes
    ):
        return outcome
    try:
        out = spill_text(content, spec.max_result_bytes, ctx.session.spill_path(ctx.tool_use_id))
    except OSError as exc:
        # No spill file (a full disk, an unwritable spill directory): cut, and say so.
        # This may run inline in the event loop, where an exception would lose the result.
        cut = content[: spec.max_result_bytes // 4]
        return msgspec.structs.replace(
            outcome,
            content=f"{cut}\n\n... [output truncated; the rest could not be saved: {exc}]",
            truncated=True,
        )
    if not out.truncated:
        return outcome
    return msgspec.structs.replace(
        outcome,
        content=out.text,
        truncated=True,
        output_path=out.path,
        output_bytes=out.total_bytes,
    )
