"""The executor state machine: every scheduling, ordering, cancellation and turn rule.

Owns: SPEC section 4. Fed events (a tool was added, a tool finished, interrupt, discard,
drain, end of input, shutdown), it answers with actions (start this tool, cancel that one,
write this result). Every rule is a table below; the methods only apply them.
Must not: import anyio, read a clock, touch a file descriptor or know what a tool does.
The runtime performs the actions and reports back; tests drive it synchronously.

Theory of operation
-------------------
A *turn* is the tools of one assistant message: it opens with the first ``add_tool`` after
the previous turn ended, and ends when a ``drain`` has seen every result written, or at a
``discard``. The turn and each of its tools have their own states; ``_move`` is the only
place either changes, and it refuses any move not in ``_MOVES`` / ``_TURN_MOVES``::

      the turn                              each tool of it
      ────────                              ───────────────
      (none) ── add_tool ──► OPEN           QUEUED ──start──► EXECUTING ──finish──► COMPLETED
                              │                │                  │                   │ in
                            drain              │ never runs (unknown, invalid,        │ order
                              ▼                │ rejected) ───────┼──────────────► ───┤
                           DRAINING            ▼                  ▼                   ▼
         discard (either) ────┤             DISCARDED ◄───────────┴────────────── YIELDED
                              ▼               (discard: nothing more is written)
         every result written: ENDED
         (``drained``), or DISCARDED

Pipe equivalence (SPEC 4): the output for any input equals the output when the host waits for
each ``drained`` before sending more. So once a turn is DRAINING, later *turn commands* are
held in arrival order and replayed when it has ended (``_ROUTES``); the next turn then starts
with the context the last one left, and no cancellation crosses a turn boundary.

Starting: the queue is scanned in add order. A tool starts when nothing executes, or when
it is concurrency-safe and everything executing is safe, within ``max_concurrency``. A
queued unsafe tool that cannot start ends the scan, so nothing overtakes it.

Results: written in add order (``strict``), or ``barrier``: a finished result may pass an
earlier unfinished *safe* tool but never an unfinished unsafe one (Claude Code's order).

Cancellation: a tool that is still queued gets its synthetic result at once. A running tool
is asked to stop (``CancelTool``) and keeps its slot until the runtime reports it finished,
because its processes are still dying; its result then says why it was cancelled. A running
tool of a discarded turn is a *zombie*: no result, but it holds its slot until it is gone.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Callable, Mapping

from .events import (
    Action,
    CancelReason,
    CancelTool,
    Content,
    DiscardRequested,
    DrainRequested,
    EmitDiscarded,
    EmitDrained,
    EmitDuplicate,
    EmitInterrupted,
    EmitResult,
    Event,
    InputClosed,
    InterruptBehavior,
    InterruptRequested,
    Outcome,
    ResultOrder,
    ShutdownRequested,
    StartTool,
    Status,
    ToolAdded,
    ToolFinished,
)

__all__ = [
    "INTERRUPTED_MESSAGE",
    "REJECTED_MESSAGE",
    "SHUTDOWN_MESSAGE",
    "Executor",
    "ExecutorError",
    "State",
    "TurnState",
    "sibling_label",
]


class State(enum.Enum):
    """A tool's state within its turn."""

    QUEUED = "queued"
    EXECUTING = "executing"
    COMPLETED = "completed"
    YIELDED = "yielded"
    DISCARDED = "discarded"

    # Members are singletons compared by identity; Enum's own hash is a Python-level call,
    # and every move hashes two states (bench/NOTES.md).
    __hash__ = object.__hash__


class TurnState(enum.Enum):
    OPEN = "open"  # tools are being added
    DRAINING = "draining"  # a drain waits for the last result; later turn commands are held
    ENDED = "ended"  # ``drained`` written
    DISCARDED = "discarded"  # ``discarded`` written; no more results

    __hash__ = object.__hash__


# The members as module globals for the methods below: ``State.QUEUED`` is a class
# attribute lookup through the enum's metaclass, ~100 ns on Python 3.11 against ~5 ns for a
# global, and a call does ~30 of them (bench/NOTES.md section 18).
_QUEUED, _EXECUTING, _COMPLETED, _YIELDED, _DISCARDED = (
    State.QUEUED,
    State.EXECUTING,
    State.COMPLETED,
    State.YIELDED,
    State.DISCARDED,
)
_OPEN, _DRAINING, _ENDED, _TURN_DISCARDED = (
    TurnState.OPEN,
    TurnState.DRAINING,
    TurnState.ENDED,
    TurnState.DISCARDED,
)


# ------------------------------------------------------------------------ the tables

_MOVES: dict[State, frozenset[State]] = {
    State.QUEUED: frozenset({State.EXECUTING, State.COMPLETED, State.DISCARDED}),
    State.EXECUTING: frozenset({State.COMPLETED, State.DISCARDED}),
    State.COMPLETED: frozenset({State.YIELDED, State.DISCARDED}),
    State.YIELDED: frozenset(),
    State.DISCARDED: frozenset(),
}

_TURN_MOVES: dict[TurnState, frozenset[TurnState]] = {
    TurnState.OPEN: frozenset({TurnState.DRAINING, TurnState.DISCARDED}),
    TurnState.DRAINING: frozenset({TurnState.ENDED, TurnState.DISCARDED}),
    TurnState.ENDED: frozenset(),
    TurnState.DISCARDED: frozenset(),
}


class _Route(enum.Enum):
    APPLY = "apply"  # handled now
    HOLD = "hold"  # kept in arrival order until the draining turn has ended


# How a host command is routed while the open turn is in a state (no turn open: APPLY).
# Once anything is held, every later command of this table is held behind it, so the held
# commands replay in input order. Tool completions, shutdown and an interrupt raised from
# inside a turn (``InterruptRequested.turn`` set) are never held.
_ROUTES: dict[type[Event], dict[TurnState, _Route]] = {
    #                              OPEN                          DRAINING
    ToolAdded: {TurnState.OPEN: _Route.APPLY, TurnState.DRAINING: _Route.HOLD},
    DrainRequested: {TurnState.OPEN: _Route.APPLY, TurnState.DRAINING: _Route.HOLD},
    # An interrupt (the user pressed Esc while the turn drains) still reaches that turn.
    InterruptRequested: {TurnState.OPEN: _Route.APPLY, TurnState.DRAINING: _Route.APPLY},
    DiscardRequested: {TurnState.OPEN: _Route.APPLY, TurnState.DRAINING: _Route.APPLY},
    InputClosed: {TurnState.OPEN: _Route.APPLY, TurnState.DRAINING: _Route.APPLY},
}


def _every(tool: _Tool) -> bool:
    return True


def _cancel_behavior(tool: _Tool) -> bool:
    return tool.interrupt_behavior == "cancel"


# Which unfinished tools of the turn a reason stops. Every reason but DISCARD (which ends the
# turn) stays in force for the rest of the turn: tools added later are stopped the same way.
_VICTIMS: dict[CancelReason, Callable[[_Tool], bool]] = {
    CancelReason.SIBLING_ERROR: _every,  # the erring Bash call itself is already complete
    CancelReason.INTERRUPT: _cancel_behavior,  # ``block`` tools run to their real result
    CancelReason.ABORT: _every,
    CancelReason.DISCARD: _every,
    CancelReason.SHUTDOWN: _every,
}

# Admission: a tool added to the open turn is stopped by the first reason in force that picks
# it; otherwise it takes its precomputed outcome (unknown tool, invalid input) or is queued.
_ADMISSION: tuple[CancelReason, ...] = (
    CancelReason.SHUTDOWN,
    CancelReason.SIBLING_ERROR,
    CancelReason.ABORT,
    CancelReason.INTERRUPT,
)

# The ``interrupt`` command's reason -> the cancellation it causes.
_INTERRUPT_REASONS: dict[str, CancelReason] = {"interrupt": CancelReason.INTERRUPT}
_DEFAULT_INTERRUPT = CancelReason.ABORT  # any other reason

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

# What a stopped tool's result says: (message, status) before it ran / after it ran.
_STOPPED: dict[CancelReason, tuple[tuple[str, Status], tuple[str, Status]]] = {
    CancelReason.INTERRUPT: ((REJECTED_MESSAGE, "rejected"), (INTERRUPTED_MESSAGE, "interrupted")),
    CancelReason.ABORT: ((REJECTED_MESSAGE, "rejected"), (INTERRUPTED_MESSAGE, "interrupted")),
    CancelReason.SHUTDOWN: ((SHUTDOWN_MESSAGE, "rejected"), (SHUTDOWN_MESSAGE, "interrupted")),
}


def sibling_label(tool_name: str, detail: str) -> str:
    """``Bash(CMD)`` with CMD cut to 40 characters plus an ellipsis, as in the message."""
    if len(detail) > _SIBLING_LABEL_CHARS:
        detail = detail[:_SIBLING_LABEL_CHARS] + "\u2026"
    return f"{tool_name}({detail})"


def _sibling_message(label: str) -> str:
    return f"<tool_use_error>Cancelled: parallel tool call {label} errored</tool_use_error>"


class ExecutorError(Exception):
    """The runtime broke the core's contract (a bug, never bad host input)."""


# ----------------------------------------------------------------------------- records


class _Tool:
    # Plain classes, not dataclasses: see ``events._Record`` (start-up cost).
    __slots__ = (
        "cancel_reason",
        "id",
        "interrupt_behavior",
        "name",
        "outcome",
        "payload",
        "safe",
        "sibling_label",
        "state",
        "turn",
    )

    def __init__(
        self,
        id: str,
        name: str,
        safe: bool,
        interrupt_behavior: InterruptBehavior,
        sibling_label: str | None,
        payload: object,
        turn: int,
        state: State = State.QUEUED,
        outcome: Outcome | None = None,
        cancel_reason: CancelReason | None = None,
    ) -> None:
        self.id = id
        self.name = name
        self.safe = safe
        self.interrupt_behavior = interrupt_behavior
        self.sibling_label = sibling_label
        self.payload = payload
        self.turn = turn
        self.state = state
        self.outcome = outcome
        self.cancel_reason = cancel_reason


# What ``by_id`` keeps for a tool whose result is written: its record (outcome, payload)
# is let go, only the id stays (for the duplicate rule and the turn's ids in add order).
_WRITTEN = _Tool("", "", True, "block", None, None, 0, State.YIELDED)

# Once this many tools at the head of ``_Turn.tools`` have their result written, they are
# dropped from the list: a turn of 100,000 calls keeps ~100 bytes per written call, not
# its ~2 KB record and result (bench/NOTES.md section 18).
_TRIM_AT = 256


class _Turn:
    """The open turn: its tools, where the scans resume, and the reasons in force.

    ``tools`` holds the tools from the first one whose result is not written yet (the
    ``trimmed`` before it are gone); ``by_id`` every id of the turn in add order, a tool
    whose result is written mapped to ``_WRITTEN``; ``status_counts`` the written results
    by status (for ``drained``), with the add index of the first of each status.
    """

    __slots__ = (
        "by_id",
        "drains",
        "next_queued",
        "next_yield",
        "number",
        "sibling_error",
        "state",
        "status_counts",
        "status_first",
        "stops",
        "tools",
        "trimmed",
    )

    def __init__(self, number: int, state: TurnState = TurnState.OPEN) -> None:
        self.number = number
        self.state = state
        self.tools: list[_Tool] = []
        self.by_id: dict[str, _Tool] = {}
        self.trimmed = 0  # tools dropped from the head of ``tools``, all yielded
        self.next_yield = 0  # tools before this index all have their result written
        self.next_queued = 0  # tools before this index have all left QUEUED
        self.status_counts: dict[str, int] = {}
        self.status_first: dict[str, int] = {}
        self.stops: set[CancelReason] = set()  # reasons in force (see _VICTIMS)
        self.sibling_error: str | None = None  # label of the Bash call that errored
        self.drains: list[str | None] = []  # request ids waiting


# ----------------------------------------------------------------------------- the core


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
        self.turn = 0  # number of the open (or last) turn, 0 before the first
        self._open: _Turn | None = None
        # Host commands that arrived after a drain, replayed when that turn has ended.
        self._held: deque[Event] = deque()
        # Running tools of discarded turns: no result will be written, but they hold their
        # slot until their processes are gone, so nothing can overlap an unsafe one.
        self._zombies: dict[tuple[int, str], _Tool] = {}
        # Tools physically running (zombies included): the concurrency rule's inputs, kept
        # as counters so that a turn of 10,000 tools is not rescanned on every event.
        self._running = 0
        self._running_unsafe = 0
        self._shutdown = False
        self._input_closed = False

    # ----------------------------------------------------------------- introspection

    @property
    def turn_open(self) -> bool:
        return self._open is not None

    @property
    def draining(self) -> bool:
        """A drain is waiting for the open turn to finish."""
        return self._open is not None and self._open.state is _DRAINING

    @property
    def idle(self) -> bool:
        """No turn open and nothing executing."""
        return self._open is None and not self._zombies

    @property
    def finished(self) -> bool:
        """Input closed, every command handled and every tool gone: the daemon may exit."""
        return self._input_closed and not self._held and self.idle

    @property
    def held(self) -> int:
        """How many host commands wait for the draining turn to end."""
        return len(self._held)

    def state_of(self, tool_use_id: str) -> State | None:
        """The state of a tool of the open turn (None if the turn holds no such id)."""
        tool = self._open.by_id.get(tool_use_id) if self._open else None
        return tool.state if tool else None

    def turn_tool_ids(self) -> tuple[str, ...]:
        """Ids of the open turn's tools in add order."""
        return tuple(self._open.by_id) if self._open else ()

    def holds(self, tool_use_id: str) -> bool:
        """Whether the open turn already has this id (a new add would be a duplicate)."""
        return self._open is not None and tool_use_id in self._open.by_id

    def is_live(self, turn: int, tool_use_id: str) -> bool:
        """Whether output of this running call may still reach the host (not discarded)."""
        if self._open is None or self._open.number != turn:
            return False
        tool = self._open.by_id.get(tool_use_id)
        return tool is not None and tool.state is _EXECUTING

    def expected(self, tool_use_id: str) -> object | None:
        """The payload of a call added but not started yet (queued or held), else None."""
        if self._open is not None:
            tool = self._open.by_id.get(tool_use_id)
            if tool is not None and tool.state is _QUEUED:
                return tool.payload
        for event in self._held:
            if isinstance(event, ToolAdded) and event.tool_use_id == tool_use_id:
                return event.payload
        return None

    # ------------------------------------------------------------------------ events

    def handle(self, event: Event) -> list[Action]:
        actions: list[Action] = []
        if self._held_back(event):
            self._held.append(event)
            return actions
        self._step(event, actions)
        # The draining turn may have ended: what waited for it runs now, in input order,
        # until a replayed drain makes the next turn wait in its turn.
        held = self._held
        while held and (self._shutdown or not self.draining):
            self._step(held.popleft(), actions)
        return actions

    def _held_back(self, event: Event) -> bool:
        turn = self._open
        if not self._held and (turn is None or turn.state is _OPEN):
            return False  # the common case: every route is APPLY (no table lookup per call)
        routes = _ROUTES.get(type(event))
        if routes is None or self._shutdown:
            return False
        if isinstance(event, InterruptRequested) and event.turn is not None:
            return False  # raised from inside a turn: never waits behind host commands
        if self._held:
            return True
        return self._open is not None and routes[self._open.state] is _Route.HOLD

    def _step(self, event: Event, actions: list[Action]) -> None:
        if isinstance(event, ToolAdded):
            self._on_added(event, actions)
        elif isinstance(event, ToolFinished):
            self._on_finished(event, actions)
        elif isinstance(event, InterruptRequested):
            self._on_interrupt(event, actions)
        elif isinstance(event, DrainRequested):
            self._on_drain(event.request_id, actions)
        elif isinstance(event, DiscardRequested):
            self._on_discard(event, actions)
        elif isinstance(event, InputClosed):
            self._input_closed = True
            if self._open is not None and self._open.state is _OPEN:
                self._on_drain(None, actions)  # SPEC 8: EOF finishes the open turn
        elif isinstance(event, ShutdownRequested):
            self._on_shutdown(event, actions)
        else:  # pragma: no cover - the union is closed
            raise ExecutorError(f"unknown event {event!r}")
        # Results first: a host tracking "what runs" from the wire must see a finished tool's
        # result before the tool_started of whatever took its slot.
        self._flush(actions)
        self._schedule(actions)

    def _on_added(self, event: ToolAdded, actions: list[Action]) -> None:
        turn = self._open
        if turn is None:
            turn = self._open_turn()
        elif event.tool_use_id in turn.by_id:
            actions.append(
                EmitDuplicate(event.tool_use_id, turn.number, event.request_id, event.line)
            )
            return
        tool = _Tool(
            event.tool_use_id,
            event.name,
            event.safe,
            event.interrupt_behavior,
            event.sibling_label,
            event.payload,
            turn.number,
        )
        turn.tools.append(tool)
        turn.by_id[tool.id] = tool
        if turn.stops:
            for reason in _ADMISSION:
                if reason in turn.stops and _VICTIMS[reason](tool):
                    self._complete(tool, self._stopped(tool, reason, None))
                    return
        if event.outcome is not None:
            self._complete(tool, event.outcome)
            self._maybe_cascade(tool, event.outcome, actions)

    def _on_finished(self, event: ToolFinished, actions: list[Action]) -> None:
        turn = self.turn if event.turn is None else event.turn
        if self._zombies:  # rarely any: no key built per finish
            zombie = self._zombies.pop((turn, event.tool_use_id), None)
            if zombie is not None:
                self._stopped_running(zombie)
                return
        tool = self._open.by_id.get(event.tool_use_id) if self._open else None
        if tool is None or tool.state is not _EXECUTING or tool.turn != turn:
            raise ExecutorError(f"finish reported for a tool that is not running: {event}")
        self._stopped_running(tool)
        outcome = event.outcome
        if tool.cancel_reason is not None and outcome.cancelled:
            outcome = self._stopped(tool, tool.cancel_reason, outcome)
        elif not tool.safe and outcome.context_update:
            # Only an unsafe tool runs alone, so only its changes have a defined order.
            self.context = {**self.context, **outcome.context_update}
        self._complete(tool, outcome)
        if tool.cancel_reason is None:
            self._maybe_cascade(tool, outcome, actions)

    def _on_interrupt(self, event: InterruptRequested, actions: list[Action]) -> None:
        turn = self._open
        if turn is None or (event.turn is not None and event.turn != turn.number):
            # Nothing to interrupt: no turn, or the turn it was raised in has ended.
            actions.append(EmitInterrupted(event.request_id, None, event.reason, ()))
            return
        reason = _INTERRUPT_REASONS.get(event.reason, _DEFAULT_INTERRUPT)
        victims = self._cancel(turn, reason, actions)
        actions.append(EmitInterrupted(event.request_id, turn.number, event.reason, victims))

    def _on_drain(self, request_id: str | None, actions: list[Action]) -> None:
        turn = self._open
        if turn is None:
            # SPEC 4: answered at once. Queued, it would end the next turn at its first result.
            actions.append(EmitDrained(request_id, None, {}))
            return
        if turn.state is _OPEN:
            self._move_turn(turn, _DRAINING)
        turn.drains.append(request_id)

    def _on_discard(self, event: DiscardRequested, actions: list[Action]) -> None:
        turn = self._open
        if turn is None:
            actions.append(EmitDiscarded(event.request_id, None, ()))
            return
        lost = self._discard(turn, actions)
        actions.append(EmitDiscarded(event.request_id, turn.number, lost))
        # A drain that was waiting on this turn is answered: nothing more will come.
        by_status = self._by_status(turn)
        for request_id in turn.drains:
            actions.append(EmitDrained(request_id, turn.number, by_status))

    def _on_shutdown(self, event: ShutdownRequested, actions: list[Action]) -> None:
        self._shutdown = True
        if event.discard:
            self._held.clear()
            if self._open is not None:
                self._discard(self._open, actions)
        elif self._open is not None:
            self._cancel(self._open, CancelReason.SHUTDOWN, actions)

    # --------------------------------------------------------------------- internals

    def _open_turn(self) -> _Turn:
        self.turn += 1
        turn = _Turn(self.turn)
        if self._shutdown:
            turn.stops.add(CancelReason.SHUTDOWN)
        self._open = turn
        return turn

    def _move_turn(self, turn: _Turn, new: TurnState) -> None:
        if new not in _TURN_MOVES[turn.state]:
            raise ExecutorError(f"illegal move of turn {turn.number}: {turn.state} -> {new}")
        turn.state = new
        if new is _ENDED or new is _TURN_DISCARDED:
            self._open = None

    def _move(self, tool: _Tool, new: State) -> None:
        if new not in _MOVES[tool.state]:
            raise ExecutorError(f"illegal move of {tool.id}: {tool.state.name} -> {new.name}")
        tool.state = new

    def _complete(self, tool: _Tool, outcome: Outcome) -> None:
        self._move(tool, _COMPLETED)
        tool.outcome = outcome

    def _discard(self, turn: _Turn, actions: list[Action]) -> tuple[str, ...]:
        """End the turn with no more results; its running tools become zombies."""
        lost: list[str] = []
        for tool in turn.tools:
            if tool.state is _YIELDED:
                continue
            lost.append(tool.id)
            if tool.state is _EXECUTING:
                self._zombies[(turn.number, tool.id)] = tool
                if tool.cancel_reason is None:
                    actions.append(CancelTool(tool.id, CancelReason.DISCARD, turn.number))
                tool.cancel_reason = CancelReason.DISCARD
            self._move(tool, _DISCARDED)
        self._move_turn(turn, _TURN_DISCARDED)
        return tuple(lost)

    def _maybe_cascade(self, tool: _Tool, outcome: Outcome, actions: list[Action]) -> None:
        turn = self._open
        if tool.sibling_label is None or not outcome.is_error or turn is None:
            return
        if turn.sibling_error is None:
            turn.sibling_error = tool.sibling_label
            self._cancel(turn, CancelReason.SIBLING_ERROR, actions)

    def _stopped_running(self, tool: _Tool) -> None:
        self._running -= 1
        if not tool.safe:
            self._running_unsafe -= 1

    def _cancel(self, turn: _Turn, reason: CancelReason, actions: list[Action]) -> tuple[str, ...]:
        """Stop the turn's unfinished tools that ``reason`` picks, now and for later adds."""
        turn.stops.add(reason)
        pick = _VICTIMS[reason]
        victims: list[str] = []
        for tool in turn.tools:
            if tool.cancel_reason is not None or not pick(tool):
                continue
            if tool.state is _QUEUED:
                self._complete(tool, self._stopped(tool, reason, None))
                victims.append(tool.id)
            elif tool.state is _EXECUTING:
                tool.cancel_reason = reason
                actions.append(CancelTool(tool.id, reason, turn.number))
                victims.append(tool.id)
        return tuple(victims)

    def _stopped(self, tool: _Tool, reason: CancelReason, partial: Outcome | None) -> Outcome:
        """The result of a tool stopped for ``reason``, before it ran or with its partial."""
        if reason is CancelReason.SIBLING_ERROR:
            label = (self._open.sibling_error if self._open else None) or "Bash"
            content: Content = _sibling_message(label)
            status: Status = "sibling_cancelled"
        elif partial is None:
            content, status = _STOPPED[reason][0]
        else:
            content, status = _STOPPED[reason][1]
            if isinstance(partial.content, str) and partial.content.strip():
                content = f"{content}\nOutput before it stopped:\n{partial.content.rstrip()}"
        if partial is None:
            return Outcome(content, True, status, cancelled=True)
        return Outcome(
            content,
            True,
            status,
            cancelled=True,
            duration_ms=partial.duration_ms,
            exit_code=partial.exit_code,
            truncated=partial.truncated,
            output_path=partial.output_path,
            output_bytes=partial.output_bytes,
        )

    def _schedule(self, actions: list[Action]) -> None:
        turn = self._open
        if turn is None or self._running_unsafe or self._running >= self.max_concurrency:
            return  # a running unsafe tool runs alone; no slot is free for anything
        tools = turn.tools
        while turn.next_queued < len(tools) and tools[turn.next_queued].state is not _QUEUED:
            turn.next_queued += 1
        for i in range(turn.next_queued, len(tools)):
            if self._running >= self.max_concurrency:
                return  # nothing at all can start until a slot frees
            tool = tools[i]
            if tool.state is not _QUEUED:
                continue
            if self._running == 0 or (tool.safe and self._running_unsafe == 0):
                self._move(tool, _EXECUTING)
                self._running += 1
                if not tool.safe:
                    self._running_unsafe += 1
                actions.append(
                    StartTool(tool.id, tool.name, turn.number, self.context, tool.payload)
                )
            elif not tool.safe:
                return  # nothing may overtake a waiting unsafe tool

    def _flush(self, actions: list[Action]) -> None:
        turn = self._open
        if turn is None:
            return
        strict = self.result_order == "strict"
        tools = turn.tools
        i = turn.next_yield
        prefix_done = True
        while i < len(tools):
            tool = tools[i]
            if tool.state is _COMPLETED:
                self._move(tool, _YIELDED)
                outcome = tool.outcome
                assert outcome is not None
                actions.append(EmitResult(tool.id, turn.number, outcome))
                self._written(turn, tool, turn.trimmed + i, outcome)
            elif tool.state is not _YIELDED:
                if strict or not tool.safe:
                    break
                prefix_done = False  # barrier: a later result may pass this safe tool
            if prefix_done:
                turn.next_yield = i + 1
            i += 1
        if turn.next_yield >= _TRIM_AT:
            # The head is written: nothing reads those records again (the scans resume
            # past them, cancellation and discard skip written tools).
            done = turn.next_yield
            del tools[:done]
            turn.trimmed += done
            turn.next_yield = 0
            turn.next_queued = max(0, turn.next_queued - done)
        if turn.state is _DRAINING and turn.next_yield == len(tools):
            by_status = self._by_status(turn)
            for request_id in turn.drains:
                actions.append(EmitDrained(request_id, turn.number, by_status))
            self._move_turn(turn, _ENDED)

    @staticmethod
    def _written(turn: _Turn, tool: _Tool, index: int, outcome: Outcome) -> None:
        """Count a written result and let go of the tool's record (the id stays)."""
        status = outcome.status
        count = turn.status_counts.get(status)
        if count is None:
            turn.status_counts[status] = 1
            turn.status_first[status] = index
        else:
            turn.status_counts[status] = count + 1
            if index < turn.status_first[status]:  # barrier order: written out of order
                turn.status_first[status] = index
        turn.by_id[tool.id] = _WRITTEN
        tool.outcome = None
        tool.payload = None

    @staticmethod
    def _by_status(turn: _Turn) -> dict[str, int]:
        """The written results by status, each status where its first call was added."""
        first = turn.status_first
        return {
            status: turn.status_counts[status]
            for status in sorted(turn.status_counts, key=first.__getitem__)
        }
