"""The executor state machine: every scheduling, ordering and cancellation rule.

Owns: SPEC section 4. Fed events (a tool was added, a tool finished, interrupt, discard,
drain), it answers with actions (start this tool, cancel that one, write this result).
Must not: import anyio, read a clock, touch a file descriptor or know what a tool does.
The runtime performs the actions and reports back; tests drive it synchronously.

Theory of operation
-------------------
A *turn* is the list of tools added since the previous turn ended (by ``drain`` or
``discard``). Each tool moves through the states below; ``_move`` is the only place a
state changes, and it refuses any move not in ``_MOVES``::

                start            finish / synthetic result      result written
    QUEUED ──────────► EXECUTING ───────────► COMPLETED ──────────────► YIELDED
       │                  │                     ▲   │
       └──────────────────┼─────────────────────┘   │   (unknown tool, bad input,
       │ rejected/cancelled before it ran           │    rejected before it ran)
       ▼                  ▼                         ▼
    DISCARDED ◄───────────┴─────────────────────────┘   (discard: nothing more is written)

Starting: the queue is scanned in add order. A tool starts when nothing executes, or when
it is concurrency-safe and everything executing is safe, within ``max_concurrency``. A
queued unsafe tool that cannot start ends the scan, so nothing overtakes it.

Results: written in add order (``strict``), or ``barrier``: a finished result may pass an
earlier unfinished *safe* tool but never an unfinished unsafe one (Claude Code's order).

Cancellation: a tool that is still queued gets its synthetic result at once. A running tool
is asked to stop (``CancelTool``) and keeps its slot until the runtime reports it finished,
because its processes are still dying; its result then says why it was cancelled.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "Action",
    "CancelReason",
    "CancelTool",
    "DiscardRequested",
    "DrainRequested",
    "EmitDiscarded",
    "EmitDrained",
    "EmitDuplicate",
    "EmitInterrupted",
    "EmitResult",
    "Event",
    "Executor",
    "ExecutorError",
    "InterruptRequested",
    "Outcome",
    "ResultOrder",
    "ShutdownRequested",
    "StartTool",
    "State",
    "ToolAdded",
    "ToolFinished",
    "sibling_label",
]

ResultOrder = Literal["strict", "barrier"]
InterruptBehavior = Literal["cancel", "block"]
Content = str | list[dict[str, Any]]


class State(enum.Enum):
    QUEUED = "queued"
    EXECUTING = "executing"
    COMPLETED = "completed"
    YIELDED = "yielded"
    DISCARDED = "discarded"

    # Members are singletons compared by identity; Enum's own hash is a Python-level call,
    # and every move hashes two states (bench/NOTES.md).
    __hash__ = object.__hash__


_MOVES: dict[State, frozenset[State]] = {
    State.QUEUED: frozenset({State.EXECUTING, State.COMPLETED, State.DISCARDED}),
    State.EXECUTING: frozenset({State.COMPLETED, State.DISCARDED}),
    State.COMPLETED: frozenset({State.YIELDED, State.DISCARDED}),
    State.YIELDED: frozenset(),
    State.DISCARDED: frozenset(),
}


class CancelReason(enum.Enum):
    """Why a tool is being stopped; a closed set, so every message is known in advance."""

    SIBLING_ERROR = "sibling_error"
    INTERRUPT = "interrupt"
    ABORT = "abort"
    DISCARD = "discard"
    SHUTDOWN = "shutdown"


class ExecutorError(Exception):
    """The runtime broke the core's contract (a bug, never bad host input)."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a tool call ended, as far as the core needs to know.

    ``extra`` is opaque to the core (exit code, timing, spill path) and travels to the result.
    ``cancelled`` is set by the runtime when the tool stopped because it was asked to;
    ``content`` is then whatever partial output the tool had produced.
    ``context_update`` is applied to the session context only if the tool was unsafe.
    """

    content: Content
    is_error: bool
    status: str
    extra: Mapping[str, Any] = field(default_factory=dict)
    cancelled: bool = False
    context_update: Mapping[str, str] | None = None


# ------------------------------------------------------------------------------ events


@dataclass(frozen=True, slots=True)
class ToolAdded:
    """A tool call arrived. ``outcome`` is set when it can never run (unknown, invalid)."""

    tool_use_id: str
    name: str
    safe: bool
    interrupt_behavior: InterruptBehavior = "cancel"
    # Set for tools whose errors cancel their siblings (Bash): the label in the message.
    sibling_label: str | None = None
    outcome: Outcome | None = None


@dataclass(frozen=True, slots=True)
class ToolFinished:
    tool_use_id: str
    outcome: Outcome
    # The turn the tool was started in (``StartTool.turn``); None means the open turn. A
    # host may reuse an id in the turn after a discard while the old call is still dying.
    turn: int | None = None


@dataclass(frozen=True, slots=True)
class InterruptRequested:
    reason: str = "abort"
    request_id: str | None = None


@dataclass(frozen=True, slots=True)
class DiscardRequested:
    request_id: str | None = None


@dataclass(frozen=True, slots=True)
class DrainRequested:
    request_id: str | None = None


@dataclass(frozen=True, slots=True)
class ShutdownRequested:
    """The daemon is stopping (signal): cancel everything, results still written."""


Event = (
    ToolAdded
    | ToolFinished
    | InterruptRequested
    | DiscardRequested
    | DrainRequested
    | ShutdownRequested
)

# ----------------------------------------------------------------------------- actions


@dataclass(frozen=True, slots=True)
class StartTool:
    tool_use_id: str
    name: str
    turn: int
    context: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class CancelTool:
    tool_use_id: str
    reason: CancelReason


@dataclass(frozen=True, slots=True)
class EmitResult:
    tool_use_id: str
    turn: int
    outcome: Outcome


@dataclass(frozen=True, slots=True)
class EmitDrained:
    request_id: str | None
    turn: int | None
    by_status: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class EmitDiscarded:
    request_id: str | None
    turn: int | None
    tool_use_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class EmitInterrupted:
    request_id: str | None
    turn: int | None
    reason: str
    tool_use_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class EmitDuplicate:
    tool_use_id: str
    turn: int


Action = (
    StartTool
    | CancelTool
    | EmitResult
    | EmitDrained
    | EmitDiscarded
    | EmitInterrupted
    | EmitDuplicate
)

# ---------------------------------------------------------------------------- messages

REJECTED_MESSAGE = (
    "<tool_use_error>The user rejected this tool use, so it was not carried out. "
    "Stop what you are doing and wait for the user to say how to go on.</tool_use_error>"
)
INTERRUPTED_MESSAGE = (
    "<tool_use_error>The user interrupted this tool use while it was running, so it did "
    "not finish. Stop what you are doing and wait for the user to say how to go on."
    "</tool_use_error>"
)
SHUTDOWN_MESSAGE = (
    "<tool_use_error>The tool executor shut down before this tool use finished.</tool_use_error>"
)
_SIBLING_LABEL_CHARS = 40


def sibling_label(tool_name: str, detail: str) -> str:
    """``Bash(CMD)`` with CMD cut to 40 characters plus an ellipsis, as in the message."""
    if len(detail) > _SIBLING_LABEL_CHARS:
        detail = detail[:_SIBLING_LABEL_CHARS] + "\u2026"
    return f"{tool_name}({detail})"


def _sibling_message(label: str) -> str:
    return f"<tool_use_error>Cancelled: parallel tool call {label} errored</tool_use_error>"


# ----------------------------------------------------------------------------- the core


@dataclass(slots=True)
class _Tool:
    id: str
    name: str
    safe: bool
    interrupt_behavior: InterruptBehavior
    sibling_label: str | None
    state: State = State.QUEUED
    outcome: Outcome | None = None
    cancel_reason: CancelReason | None = None


class Executor:
    """The state machine. One instance per daemon; not thread-safe, never awaits."""

    def __init__(
        self,
        *,
        max_concurrency: int = 10,
        result_order: ResultOrder = "strict",
        context: Mapping[str, str] | None = None,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self.max_concurrency = max_concurrency
        self.result_order: ResultOrder = result_order
        self.context: Mapping[str, str] = dict(context or {})
        self.turn = 0  # number of the open turn, 0 before the first
        self._tools: list[_Tool] = []
        self._by_id: dict[str, _Tool] = {}
        # Running tools of discarded turns: no result will be written, but they hold their
        # slot until their processes are gone, so nothing can overlap an unsafe one.
        self._zombies: dict[tuple[int, str], _Tool] = {}
        self._turn_open = False
        self._next_yield = 0  # tools before this index all have their result written
        self._next_queued = 0  # tools before this index have all left QUEUED
        # Tools physically running (zombies included): the concurrency rule's inputs, kept
        # as counters so that a turn of 10,000 tools is not rescanned on every event.
        self._running = 0
        self._running_unsafe = 0
        self._abort: CancelReason | None = None  # every later tool of the turn is rejected
        self._interrupted = False  # later ``cancel`` tools of the turn are rejected
        self._sibling_error: str | None = None  # label of the Bash call that errored
        self._drains: list[str | None] = []
        self._shutdown = False

    # ----------------------------------------------------------------- introspection

    @property
    def turn_open(self) -> bool:
        return self._turn_open

    @property
    def idle(self) -> bool:
        """No turn open and nothing executing: safe to exit."""
        return not self._turn_open and not self._zombies

    def state_of(self, tool_use_id: str) -> State | None:
        """The state of a tool of the open turn (None if the turn holds no such id)."""
        tool = self._by_id.get(tool_use_id)
        return tool.state if tool else None

    @property
    def draining(self) -> bool:
        """A drain is waiting for the open turn to finish."""
        return bool(self._drains)

    def turn_tool_ids(self) -> tuple[str, ...]:
        """Ids of the open turn's tools in add order."""
        return tuple(t.id for t in self._tools)

    def holds(self, tool_use_id: str) -> bool:
        """Whether the open turn already has this id (a new add would be a duplicate)."""
        return tool_use_id in self._by_id

    def is_live(self, tool_use_id: str) -> bool:
        """Whether output of this tool may still reach the host (not discarded)."""
        tool = self._by_id.get(tool_use_id)
        return tool is not None and tool.state is State.EXECUTING

    # ------------------------------------------------------------------------ events

    def handle(self, event: Event) -> list[Action]:
        actions: list[Action] = []
        if isinstance(event, ToolAdded):
            self._on_added(event, actions)
        elif isinstance(event, ToolFinished):
            self._on_finished(event, actions)
        elif isinstance(event, InterruptRequested):
            self._on_interrupt(event, actions)
        elif isinstance(event, DiscardRequested):
            self._on_discard(event, actions)
        elif isinstance(event, DrainRequested):
            self._on_drain(event, actions)
        elif isinstance(event, ShutdownRequested):
            self._shutdown = True
            self._cancel_all(CancelReason.SHUTDOWN, actions)
        else:  # pragma: no cover - the union is closed
            raise ExecutorError(f"unknown event {event!r}")
        # Results first: a host tracking "what runs" from the wire must see a finished tool's
        # result before the tool_started of whatever took its slot.
        self._flush(actions)
        self._schedule(actions)
        return actions

    def _on_added(self, event: ToolAdded, actions: list[Action]) -> None:
        if event.tool_use_id in self._by_id:
            actions.append(EmitDuplicate(event.tool_use_id, self.turn))
            return
        if not self._turn_open:
            self._open_turn()
        tool = _Tool(
            id=event.tool_use_id,
            name=event.name,
            safe=event.safe,
            interrupt_behavior=event.interrupt_behavior,
            sibling_label=event.sibling_label,
        )
        self._tools.append(tool)
        self._by_id[tool.id] = tool
        if self._shutdown:
            self._complete(tool, self._synthetic(tool, CancelReason.SHUTDOWN, None))
        elif self._sibling_error is not None:
            self._complete(tool, self._synthetic(tool, CancelReason.SIBLING_ERROR, None))
        elif self._abort is not None:
            self._complete(tool, self._synthetic(tool, self._abort, None))
        elif self._interrupted and tool.interrupt_behavior == "cancel":
            self._complete(tool, self._synthetic(tool, CancelReason.INTERRUPT, None))
        elif event.outcome is not None:
            self._complete(tool, event.outcome)
            self._maybe_cascade(tool, event.outcome, actions)

    def _on_finished(self, event: ToolFinished, actions: list[Action]) -> None:
        turn = self.turn if event.turn is None else event.turn
        zombie = self._zombies.pop((turn, event.tool_use_id), None)
        if zombie is not None:
            self._stopped_running(zombie)
            return
        tool = self._by_id.get(event.tool_use_id)
        if tool is None or tool.state is not State.EXECUTING:
            raise ExecutorError(f"finish reported for a tool that is not running: {event}")
        self._stopped_running(tool)
        outcome = event.outcome
        if tool.cancel_reason is not None and outcome.cancelled:
            outcome = self._synthetic(tool, tool.cancel_reason, outcome)
        elif not tool.safe and outcome.context_update:
            # Only an unsafe tool runs alone, so only its changes have a defined order.
            self.context = {**self.context, **outcome.context_update}
        self._complete(tool, outcome)
        if tool.cancel_reason is None:
            self._maybe_cascade(tool, outcome, actions)

    def _on_interrupt(self, event: InterruptRequested, actions: list[Action]) -> None:
        turn = self.turn if self._turn_open else None
        if not self._turn_open:
            actions.append(EmitInterrupted(event.request_id, turn, event.reason, ()))
            return
        if event.reason == "interrupt":
            self._interrupted = True
            victims = self._cancel_where(
                lambda t: t.interrupt_behavior == "cancel", CancelReason.INTERRUPT, actions
            )
        else:
            self._abort = CancelReason.ABORT
            victims = self._cancel_where(lambda t: True, CancelReason.ABORT, actions)
        actions.append(EmitInterrupted(event.request_id, turn, event.reason, tuple(victims)))

    def _on_drain(self, event: DrainRequested, actions: list[Action]) -> None:
        if not self._turn_open:
            # SPEC 4: answered at once. Queued, it would end the next turn at its first result.
            actions.append(EmitDrained(event.request_id, None, {}))
            return
        self._drains.append(event.request_id)

    def _on_discard(self, event: DiscardRequested, actions: list[Action]) -> None:
        if not self._turn_open:
            actions.append(EmitDiscarded(event.request_id, None, ()))
            return
        lost: list[str] = []
        for tool in self._tools:
            if tool.state is State.YIELDED:
                continue
            lost.append(tool.id)
            if tool.state is State.EXECUTING:
                self._zombies[(self.turn, tool.id)] = tool
                if tool.cancel_reason is None:
                    actions.append(CancelTool(tool.id, CancelReason.DISCARD))
                tool.cancel_reason = CancelReason.DISCARD
            self._move(tool, State.DISCARDED)
        turn = self.turn
        actions.append(EmitDiscarded(event.request_id, turn, tuple(lost)))
        # A drain that was waiting on this turn is answered: nothing more will come.
        for request_id in self._drains:
            actions.append(EmitDrained(request_id, turn, self._by_status()))
        self._close_turn()

    # --------------------------------------------------------------------- internals

    def _open_turn(self) -> None:
        self.turn += 1
        self._turn_open = True
        self._tools = []
        self._by_id = {}
        self._next_yield = 0
        self._next_queued = 0
        self._abort = None
        self._interrupted = False
        self._sibling_error = None

    def _close_turn(self) -> None:
        self._turn_open = False
        self._drains = []
        self._tools = []
        self._by_id = {}
        self._next_yield = 0
        self._next_queued = 0

    def _move(self, tool: _Tool, new: State) -> None:
        if new not in _MOVES[tool.state]:
            raise ExecutorError(f"illegal move of {tool.id}: {tool.state.name} -> {new.name}")
        tool.state = new

    def _complete(self, tool: _Tool, outcome: Outcome) -> None:
        self._move(tool, State.COMPLETED)
        tool.outcome = outcome

    def _maybe_cascade(self, tool: _Tool, outcome: Outcome, actions: list[Action]) -> None:
        if tool.sibling_label is None or not outcome.is_error or self._sibling_error:
            return
        self._sibling_error = tool.sibling_label
        self._cancel_where(lambda t: t is not tool, CancelReason.SIBLING_ERROR, actions)

    def _cancel_all(self, reason: CancelReason, actions: list[Action]) -> None:
        self._cancel_where(lambda t: True, reason, actions)

    def _stopped_running(self, tool: _Tool) -> None:
        self._running -= 1
        if not tool.safe:
            self._running_unsafe -= 1

    def _cancel_where(self, pick: Any, reason: CancelReason, actions: list[Action]) -> list[str]:
        victims: list[str] = []
        for tool in self._tools:
            if tool.cancel_reason is not None or not pick(tool):
                continue
            if tool.state is State.QUEUED:
                self._complete(tool, self._synthetic(tool, reason, None))
                victims.append(tool.id)
            elif tool.state is State.EXECUTING:
                tool.cancel_reason = reason
                actions.append(CancelTool(tool.id, reason))
                victims.append(tool.id)
        return victims

    def _synthetic(self, tool: _Tool, reason: CancelReason, partial: Outcome | None) -> Outcome:
        extra: Mapping[str, Any] = partial.extra if partial else {}
        if reason is CancelReason.SIBLING_ERROR:
            label = self._sibling_error or "Bash"
            return Outcome(_sibling_message(label), True, "sibling_cancelled", extra, True)
        if partial is None:
            message = SHUTDOWN_MESSAGE if reason is CancelReason.SHUTDOWN else REJECTED_MESSAGE
            return Outcome(message, True, "rejected", extra, True)
        message = SHUTDOWN_MESSAGE if reason is CancelReason.SHUTDOWN else INTERRUPTED_MESSAGE
        content: Content = message
        if isinstance(partial.content, str) and partial.content.strip():
            content = f"{message}\nOutput before it stopped:\n{partial.content.rstrip()}"
        return Outcome(content, True, "interrupted", extra, True)

    def _schedule(self, actions: list[Action]) -> None:
        if not self._turn_open or self._running_unsafe:
            return  # a running unsafe tool runs alone
        tools = self._tools
        while self._next_queued < len(tools) and tools[self._next_queued].state is not State.QUEUED:
            self._next_queued += 1
        for i in range(self._next_queued, len(tools)):
            if self._running >= self.max_concurrency:
                return  # nothing at all can start until a slot frees
            tool = tools[i]
            if tool.state is not State.QUEUED:
                continue
            if self._running == 0 or (tool.safe and self._running_unsafe == 0):
                self._move(tool, State.EXECUTING)
                self._running += 1
                if not tool.safe:
                    self._running_unsafe += 1
                actions.append(StartTool(tool.id, tool.name, self.turn, self.context))
            elif not tool.safe:
                return  # nothing may overtake a waiting unsafe tool

    def _flush(self, actions: list[Action]) -> None:
        if not self._turn_open:
            return
        strict = self.result_order == "strict"
        tools = self._tools
        i = self._next_yield
        prefix_done = True
        while i < len(tools):
            tool = tools[i]
            if tool.state is State.COMPLETED:
                self._move(tool, State.YIELDED)
                assert tool.outcome is not None
                actions.append(EmitResult(tool.id, self.turn, tool.outcome))
            elif tool.state is not State.YIELDED:
                if strict or not tool.safe:
                    break
                prefix_done = False  # barrier: a later result may pass this safe tool
            if prefix_done:
                self._next_yield = i + 1
            i += 1
        if self._drains and self._next_yield == len(tools):
            by_status = self._by_status()
            for request_id in self._drains:
                actions.append(EmitDrained(request_id, self.turn, by_status))
            self._close_turn()

    def _by_status(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for tool in self._tools:
            if tool.state is State.YIELDED and tool.outcome is not None:
                counts[tool.outcome.status] = counts.get(tool.outcome.status, 0) + 1
        return counts
