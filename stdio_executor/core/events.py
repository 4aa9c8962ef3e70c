"""What goes into the executor core and what comes out of it.

Owns: the events the runtime feeds the core (``ToolAdded``, ``ToolFinished``, the host's
``interrupt`` / ``discard`` / ``drain``, end of input, shutdown), the actions the core answers
with (start, cancel, write a result or an acknowledgement), ``Outcome`` (how a call ended, with
typed result facts) and the closed sets ``Status`` and ``CancelReason``.
Must not: hold rules (``executor`` does), import anything beyond the standard library, or be
frozen dataclasses: these are built on every call, and a frozen ``__init__`` costs several
times a plain one (bench/NOTES.md). Treat instances as immutable all the same.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass
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


@dataclass(slots=True)
class Outcome:
    """How a tool call ended, as far as the core and the result's ``meta`` need to know.

    ``cancelled`` is set by the runtime when the tool stopped because it was asked to;
    ``content`` is then whatever partial output the tool had produced. ``context_update`` is
    applied to the session context only if the tool was unsafe. The facts after it (timing,
    exit code, spill file) are opaque to the core and travel to the result unchanged, also
    when the core replaces a cancelled tool's content by its cancellation message.
    """

    content: Content
    is_error: bool
    status: Status
    _: KW_ONLY
    cancelled: bool = False
    context_update: Mapping[str, str] | None = None
    duration_ms: float | None = None
    exit_code: int | None = None
    truncated: bool = False
    output_path: str | None = None
    output_bytes: int | None = None


# ------------------------------------------------------------------------------ events


@dataclass(slots=True)
class ToolAdded:
    """A tool call arrived (``add_tool``). ``outcome`` is set when it can never run.

    ``sibling_label`` is set for tools whose errors cancel their siblings (Bash), as the text
    of the message; a precomputed error (an invalid Bash call) cascades like a run that failed.
    ``payload`` is the runtime's (the validated input); the core hands it back in ``StartTool``.
    ``request_id`` and ``line`` are echoed in a duplicate-id refusal.
    """

    tool_use_id: str
    name: str
    safe: bool
    interrupt_behavior: InterruptBehavior = "cancel"
    sibling_label: str | None = None
    outcome: Outcome | None = None
    payload: object = None
    request_id: str | None = None
    line: int | None = None


@dataclass(slots=True)
class ToolFinished:
    tool_use_id: str
    outcome: Outcome
    # The turn the tool was started in (``StartTool.turn``); None means the open turn. A
    # host may reuse an id in the turn after a discard while the old call is still dying.
    turn: int | None = None


@dataclass(slots=True)
class InterruptRequested:
    """``interrupt``. ``turn`` None: the host's command, applied in input order. A number:
    raised from inside that turn (a hook's ``continue: false``, a host's ``interrupt: true``
    answer to a permission request), applied at once to that turn, or to nothing if it ended."""

    reason: str = "abort"
    request_id: str | None = None
    turn: int | None = None


@dataclass(slots=True)
class DiscardRequested:
    request_id: str | None = None


@dataclass(slots=True)
class DrainRequested:
    request_id: str | None = None


@dataclass(slots=True)
class InputClosed:
    """EOF on stdin: finish what was sent (held turns too), then drain the last turn."""


@dataclass(slots=True)
class ShutdownRequested:
    """The daemon is stopping. ``discard`` False (a signal): cancel everything, results are
    still written. True (the host is gone): nobody reads, so discard the open turn and drop
    every held command."""

    discard: bool = False


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


@dataclass(slots=True)
class StartTool:
    tool_use_id: str
    name: str
    turn: int
    context: Mapping[str, str]
    payload: object = None


@dataclass(slots=True)
class CancelTool:
    tool_use_id: str
    reason: CancelReason
    turn: int  # the turn it was started in: (turn, id) names one running call


@dataclass(slots=True)
class EmitResult:
    tool_use_id: str
    turn: int
    outcome: Outcome


@dataclass(slots=True)
class EmitDrained:
    request_id: str | None
    turn: int | None
    by_status: Mapping[str, int]


@dataclass(slots=True)
class EmitDiscarded:
    request_id: str | None
    turn: int | None
    tool_use_ids: tuple[str, ...]


@dataclass(slots=True)
class EmitInterrupted:
    request_id: str | None
    turn: int | None
    reason: str
    tool_use_ids: tuple[str, ...]


@dataclass(slots=True)
class EmitDuplicate:
    tool_use_id: str
    turn: int
    request_id: str | None = None
    line: int | None = None


Action = (
    StartTool
    | CancelTool
    | EmitResult
    | EmitDrained
    | EmitDiscarded
    | EmitInterrupted
    | EmitDuplicate
)
