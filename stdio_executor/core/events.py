"""What goes into the executor core and what comes out of it.

Owns: the events the runtime feeds the core (``ToolAdded``, ``ToolFinished``, the host's
``interrupt`` / ``discard`` / ``drain``, end of input, shutdown), the actions the core answers
with (start, cancel, write a result or an acknowledgement), ``Outcome`` (how a call ended, with
typed result facts) and the closed sets ``Status`` and ``CancelReason``.
Must not: hold rules (``executor`` does), import anything beyond the standard library, or be
frozen: these are built on every call, and a frozen ``__init__`` costs several times a
plain one (bench/NOTES.md). Treat instances as immutable all the same.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Literal

__all__ = [
    "Action",
    "CancelReason",
    "CancelTool",
    "Content",
    "DiscardRequested",
    "DrainRequested",
    "EmitDiscarded",
    "EmitDrained",
    "EmitDuplicate",
    "EmitInterrupted",
    "EmitResult",
    "Event",
    "InputClosed",
    "InterruptBehavior",
    "InterruptRequested",
    "Outcome",
    "ResultOrder",
    "ShutdownRequested",
    "StartTool",
    "Status",
    "ToolAdded",
    "ToolFinished",
]

ResultOrder = Literal["strict", "barrier"]
InterruptBehavior = Literal["cancel", "block"]
Content = str | list[dict[str, Any]]

# The model-facing outcome of a call (SPEC section 3); the wire's ``ResultMeta.status`` is the
# same set (tests/core check they agree; ``protocol`` may not import the core).
Status = Literal[
    "success",
    "error",
    "invalid_input",
    "unknown_tool",
    "denied",
    "timed_out",
    "interrupted",
    "rejected",
    "sibling_cancelled",
]


class CancelReason(enum.Enum):
    """Why a tool is being stopped; a closed set, so every message is known in advance."""

    SIBLING_ERROR = "sibling_error"
    INTERRUPT = "interrupt"
    ABORT = "abort"
    DISCARD = "discard"
    SHUTDOWN = "shutdown"

    __hash__ = object.__hash__  # identity hash: Enum's own is a Python-level call


class _Record:
    """Equality and repr for the records below, from their ``__slots__``.

    Written out rather than dataclasses: defining a dataclass costs ~0.5 ms (its methods are
    generated and compiled at import), and these 17 were a sixth of the time to ``ready``
    (bench/NOTES.md, start-up). Each ``__init__`` is what a dataclass would generate.
    """

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        names: tuple[str, ...] = self.__slots__
        return all(getattr(self, name) == getattr(other, name) for name in names)

    def __repr__(self) -> str:
        names: tuple[str, ...] = self.__slots__
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{type(self).__name__}({fields})"


class Outcome(_Record):
    """How a tool call ended, as far as the core and the result's ``meta`` need to know.

    ``cancelled`` is set by the runtime when the tool stopped because it was asked to;
    ``content`` is then whatever partial output the tool had produced. ``context_update`` is
    applied to the session context only if the tool was unsafe. The facts after it (timing,
    exit code, spill file) are opaque to the core and travel to the result unchanged, also
    when the core replaces a cancelled tool's content by its cancellation message.
    """

    __slots__ = (
        "cancelled",
        "content",
        "context_update",
        "duration_ms",
        "exit_code",
        "is_error",
        "output_bytes",
        "output_path",
        "status",
        "truncated",
    )

    def __init__(
        self,
        content: Content,
        is_error: bool,
        status: Status,
        *,
        cancelled: bool = False,
        context_update: Mapping[str, str] | None = None,
        duration_ms: float | None = None,
        exit_code: int | None = None,
        truncated: bool = False,
        output_path: str | None = None,
        output_bytes: int | None = None,
    ) -> None:
        self.content = content
        self.is_error = is_error
        self.status = status
        self.cancelled = cancelled
        self.context_update = context_update
        self.duration_ms = duration_ms
        self.exit_code = exit_code
        self.truncated = truncated
        self.output_path = output_path
        self.output_bytes = output_bytes


# ------------------------------------------------------------------------------ events


class ToolAdded(_Record):
    """A tool call arrived (``add_tool``). ``outcome`` is set when it can never run.

    ``sibling_label`` is set for tools whose errors cancel their siblings (Bash), as the text
    of the message; a precomputed error (an invalid Bash call) cascades like a run that failed.
    ``payload`` is the runtime's (the validated input); the core hands it back in ``StartTool``.
    ``request_id`` and ``line`` are echoed in a duplicate-id refusal.
    """

    __slots__ = (
        "interrupt_behavior",
        "line",
        "name",
        "outcome",
        "payload",
        "request_id",
        "safe",
        "sibling_label",
        "tool_use_id",
    )

    def __init__(
        self,
        tool_use_id: str,
        name: str,
        safe: bool,
        interrupt_behavior: InterruptBehavior = "cancel",
        sibling_label: str | None = None,
        outcome: Outcome | None = None,
        payload: object = None,
        request_id: str | None = None,
        line: int | None = None,
    ) -> None:
        self.tool_use_id = tool_use_id
        self.name = name
        self.safe = safe
        self.interrupt_behavior = interrupt_behavior
        self.sibling_label = sibling_label
        self.outcome = outcome
        self.payload = payload
        self.request_id = request_id
        self.line = line


class ToolFinished(_Record):
    """``turn``: the turn the tool was started in (``StartTool.turn``); None means the open
    turn. A host may reuse an id in the turn after a discard while the old call is still
    dying."""

    __slots__ = ("outcome", "tool_use_id", "turn")

    def __init__(self, tool_use_id: str, outcome: Outcome, turn: int | None = None) -> None:
        self.tool_use_id = tool_use_id
        self.outcome = outcome
        self.turn = turn


class InterruptRequested(_Record):
    """``interrupt``. ``turn`` None: the host's command, applied in input order. A number:
    raised from inside that turn (a hook's ``continue: false``, a host's ``interrupt: true``
    answer to a permission request), applied at once to that turn, or to nothing if it ended."""

    __slots__ = ("reason", "request_id", "turn")

    def __init__(
        self, reason: str = "abort", request_id: str | None = None, turn: int | None = None
    ) -> None:
        self.reason = reason
        self.request_id = request_id
        self.turn = turn


class DiscardRequested(_Record):
    __slots__ = ("request_id",)

    def __init__(self, request_id: str | None = None) -> None:
        self.request_id = request_id


class DrainRequested(_Record):
    __slots__ = ("request_id",)

    def __init__(self, request_id: str | None = None) -> None:
        self.request_id = request_id


class InputClosed(_Record):
    """EOF on stdin: finish what was sent (held turns too), then drain the last turn."""

    __slots__ = ()


class ShutdownRequested(_Record):
    """The daemon is stopping. ``discard`` False (a signal): cancel everything, results are
    still written. True (the host is gone): nobody reads, so discard the open turn and drop
    every held command."""

    __slots__ = ("discard",)

    def __init__(self, discard: bool = False) -> None:
        self.discard = discard


Event = (
    ToolAdded
    | ToolFinished
    | InterruptRequested
    | DiscardRequested
    | DrainRequested
    | InputClosed
    | ShutdownRequested
)

# ----------------------------------------------------------------------------- actions


class StartTool(_Record):
    __slots__ = ("context", "name", "payload", "tool_use_id", "turn")

    def __init__(
        self,
        tool_use_id: str,
        name: str,
        turn: int,
        context: Mapping[str, str],
        payload: object = None,
    ) -> None:
        self.tool_use_id = tool_use_id
        self.name = name
        self.turn = turn
        self.context = context
        self.payload = payload


class CancelTool(_Record):
    """``turn``: the turn it was started in: (turn, id) names one running call."""

    __slots__ = ("reason", "tool_use_id", "turn")

    def __init__(self, tool_use_id: str, reason: CancelReason, turn: int) -> None:
        self.tool_use_id = tool_use_id
        self.reason = reason
        self.turn = turn


class EmitResult(_Record):
    __slots__ = ("outcome", "tool_use_id", "turn")

    def __init__(self, tool_use_id: str, turn: int, outcome: Outcome) -> None:
        self.tool_use_id = tool_use_id
        self.turn = turn
        self.outcome = outcome


class EmitDrained(_Record):
    __slots__ = ("by_status", "request_id", "turn")

    def __init__(
        self, request_id: str | None, turn: int | None, by_status: Mapping[str, int]
    ) -> None:
        self.request_id = request_id
        self.turn = turn
        self.by_status = by_status


class EmitDiscarded(_Record):
    __slots__ = ("request_id", "tool_use_ids", "turn")

    def __init__(
        self, request_id: str | None, turn: int | None, tool_use_ids: tuple[str, ...]
    ) -> None:
        self.request_id = request_id
        self.turn = turn
        self.tool_use_ids = tool_use_ids


class EmitInterrupted(_Record):
    __slots__ = ("reason", "request_id", "tool_use_ids", "turn")

    def __init__(
        self,
        request_id: str | None,
        turn: int | None,
        reason: str,
        tool_use_ids: tuple[str, ...],
    ) -> None:
        self.request_id = request_id
        self.turn = turn
        self.reason = reason
        self.tool_use_ids = tool_use_ids


class EmitDuplicate(_Record):
    __slots__ = ("line", "request_id", "tool_use_id", "turn")

    def __init__(
        self,
        tool_use_id: str,
        turn: int,
        request_id: str | None = None,
        line: int | None = None,
    ) -> None:
        self.tool_use_id = tool_use_id
        self.turn = turn
        self.request_id = request_id
        self.line = line


Action = (
    StartTool
    | CancelTool
    | EmitResult
    | EmitDrained
    | EmitDiscarded
    | EmitInterrupted
    | EmitDuplicate
)
