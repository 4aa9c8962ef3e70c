"""Random command sequences against the executor core, checked by a model of SPEC section 4.

The machine plays host and runtime at once: it adds tools (safe or not, ``cancel`` or
``block``, with or without a Bash sibling label, sometimes with a precomputed error), reports
running tools finished (a cancelled one with ``Outcome(..., cancelled=True)``, or with its real
result when it finished before the kill landed), interrupts, discards and drains. Ids are
mostly fresh and sometimes a recent one again: a duplicate, or an id reused after a discard
while its first holder may still be dying.

Every action the core answers with is checked the moment it appears:

- ``StartTool`` only for a queued tool of the open turn, never after that turn was aborted,
  sibling-cancelled or (for ``cancel`` tools) interrupted; an unsafe tool never runs beside
  another (zombies of discarded turns included); at most ``max_concurrency`` run; no tool
  starts while an earlier unsafe tool of its turn still waits; the context is the current one.
- ``EmitResult`` exactly once per tool, never after its turn was discarded, in add order
  (``strict``) or never past an unfinished unsafe tool (``barrier``), with the outcome the
  rules predict (real, rejected, interrupted with partial output, or sibling-cancelled).
- ``CancelTool`` exactly for the running tools the rules pick, once per tool.
- ``EmitDrained`` only once every result of the turn is written (or the turn is discarded).
- Within one answer, results come before starts (the freed slot's result is seen first).

After every step nothing startable is left waiting, and the core's view of each tool agrees
with the model's. At the end every running tool is finished and the turn drained: every tool
of a turn that was not discarded has exactly one result.

Held turns (pipe equivalence, SPEC 4): the model plays a host that waits for each ``drained``
before sending more, so the checked executor never holds a command. A second executor, the
*pipe*, gets every command the moment it is generated. After every step:

- the pipe holds exactly the commands the waiting host has not sent yet;
- the pipe has answered with exactly the actions the waiting host's executor has, in order
  (so a held turn starts only after the last one ended, with its context, and no cancellation
  crosses a turn boundary);
- at the end, the pipe's end of input runs what it held, drains the last turn (as the waiting
  host's final drain does) and leaves it ``finished``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    precondition,
    rule,
    run_state_machine_as_test,
)

from stdio_executor.core import (
    INTERRUPTED_MESSAGE,
    REJECTED_MESSAGE,
    Action,
    CancelReason,
    CancelTool,
    DiscardRequested,
    DrainRequested,
    EmitDiscarded,
    EmitDrained,
    EmitDuplicate,
    EmitInterrupted,
    EmitResult,
    Event,
    Executor,
    InputClosed,
    InterruptRequested,
    Outcome,
    ResultOrder,
    StartTool,
    State,
    Status,
    ToolAdded,
    ToolFinished,
    sibling_label,
)
from stdio_executor.core import executor as executor_module

COMMANDS = ["false", "npm test -- --runInBand --reporter=verbose --coverage=false"]
ToolSpec = tuple[int | None, bool, str, str | None, bool]
TOOLS: st.SearchStrategy[ToolSpec] = st.tuples(
    # None: a fresh id; n: the n-th most recent id (a duplicate, or reused after a discard)
    st.sampled_from([None, None, None, None, 0, 1, 2, 3]),
    st.booleans(),  # safe
    st.sampled_from(["cancel", "block"]),
    # A Bash command (the tool has a sibling label); not too often, or cascades hide the rest.
    st.sampled_from([None, None, None, *COMMANDS]),
    st.sampled_from([False, False, False, True]),  # a precomputed error (unknown, invalid)
)


@dataclass
class Tool:
    """The model's view of one added tool."""

    id: str
    turn: int
    safe: bool
    behavior: str
    label: str | None
    started: bool = False
    running: bool = False
    discarded: bool = False  # its turn was discarded
    cancel_reason: CancelReason | None = None  # a CancelTool was sent
    expected: Outcome | None = None  # set once the result is known: the tool is settled
    results: int = 0

    @property
    def queued(self) -> bool:
        return not self.started and self.expected is None


def rejected() -> Outcome:
    return Outcome(REJECTED_MESSAGE, True, "rejected", cancelled=True)


def facts_of(partial: Outcome | None) -> dict[str, Any]:
    """The result facts a cancellation message keeps from the partial outcome."""
    if partial is None:
        return {}
    return {
        "duration_ms": partial.duration_ms,
        "exit_code": partial.exit_code,
        "truncated": partial.truncated,
        "output_path": partial.output_path,
        "output_bytes": partial.output_bytes,
    }


def sibling_cancelled(label: str, partial: Outcome | None = None) -> Outcome:
    message = f"<tool_use_error>Cancelled: parallel tool call {label} errored</tool_use_error>"
    return Outcome(message, True, "sibling_cancelled", cancelled=True, **facts_of(partial))


def interrupted(partial: Outcome) -> Outcome:
    content = INTERRUPTED_MESSAGE
    assert isinstance(partial.content, str)
    if partial.content.strip():
        content = f"{INTERRUPTED_MESSAGE}\nOutput before it stopped:\n{partial.content.rstrip()}"
    return Outcome(content, True, "interrupted", cancelled=True, **facts_of(partial))


class ExecutorMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.executor = Executor()  # fed the way a host that waits for each drained feeds it
        self.pipe = Executor()  # fed every command the moment it is generated
        self.max_concurrency = 10
        self.order: ResultOrder = "strict"
        self.context: dict[str, str] = {"cwd": "/"}
        self.turn = 0
        self.turn_open = False
        self.tools: list[Tool] = []  # the open (or last) turn, in add order
        self.all_tools: list[Tool] = []
        self.running: dict[tuple[int, str], Tool] = {}  # zombies included
        self.aborted = False
        self.interrupted = False
        self.sibling: str | None = None  # label of the Bash call that errored
        self.drains: list[str | None] = []
        self.requests = 0
        self.ids: list[str] = []  # every id used so far
        self.counter = 0
        # Commands the waiting host has not sent yet (its turn drains), in generation order.
        self.waiting: list[tuple[Event, Callable[[Event], None]]] = []
        self.host_log: list[Action] = []
        self.pipe_log: list[Action] = []
        self.input_closed = False

    # -------------------------------------------------------------------------- rules

    @initialize(
        max_concurrency=st.integers(min_value=1, max_value=4),
        order=st.sampled_from(["strict", "barrier"]),
    )
    def configure(self, max_concurrency: int, order: ResultOrder) -> None:
        self.max_concurrency = max_concurrency
        self.order = order
        self.executor = Executor(
            max_concurrency=max_concurrency, result_order=order, context=self.context
        )
        self.pipe = Executor(
            max_concurrency=max_concurrency, result_order=order, context=self.context
        )

    @rule(tool=TOOLS)
    def add(self, tool: ToolSpec) -> None:
        self.send(self.new_tool(*tool), self.add_tool)

    @rule(tools=st.lists(TOOLS, min_size=2, max_size=4))
    def add_several(self, tools: list[ToolSpec]) -> None:
        # An assistant message streams several tool_use blocks before anything finishes.
        for tool in tools:
            self.send(self.new_tool(*tool), self.add_tool)

    @precondition(lambda self: bool(self.running))
    @rule(
        data=st.data(),
        is_error=st.sampled_from([False, False, False, True]),
        stopped_by_the_cancel=st.booleans(),
        partial=st.sampled_from(["", " \n", "partial output\n"]),
        moves=st.booleans(),
        names_its_turn=st.booleans(),
    )
    def finish(
        self,
        data: st.DataObject,
        is_error: bool,
        stopped_by_the_cancel: bool,
        partial: str,
        moves: bool,
        names_its_turn: bool,
    ) -> None:
        key = data.draw(st.sampled_from(sorted(self.running)), label="running tool")
        self.counter += 1
        update = {"cwd": f"/d{self.counter}"} if moves else None
        cancelled = self.running[key].cancel_reason is not None and stopped_by_the_cancel
        outcome = Outcome(
            partial,
            is_error,
            "error" if is_error else "success",
            cancelled=cancelled,
            context_update=update,
            exit_code=self.counter,
            output_bytes=len(partial),
        )
        self.finish_tool(key, outcome, names_its_turn)

    @precondition(lambda self: any(t.cancel_reason for t in self.running.values()))
    @rule(data=st.data(), stopped_by_the_cancel=st.sampled_from([True, True, True, False]))
    def finish_cancelled(self, data: st.DataObject, stopped_by_the_cancel: bool) -> None:
        # Rare under ``finish`` alone: a tool asked to stop reports back before the turn ends.
        keys = sorted(k for k, t in self.running.items() if t.cancel_reason is not None)
        key = data.draw(st.sampled_from(keys), label="cancelled tool")
        partial = data.draw(st.sampled_from(["", "line 1\nline 2\n"]), label="partial")
        outcome = Outcome(partial, False, "success", cancelled=stopped_by_the_cancel, exit_code=-15)
        self.finish_tool(key, outcome, names_its_turn=False)

    @rule(reason=st.sampled_from(["interrupt", "abort"]))
    def interrupt(self, reason: str) -> None:
        self.send(InterruptRequested(reason, self.request_id()), self.do_interrupt)

    @rule()
    def discard(self) -> None:
        self.send(DiscardRequested(self.request_id()), self.do_discard)

    @rule()
    def drain(self) -> None:
        self.send(DrainRequested(self.request_id()), self.do_drain)

    def teardown(self) -> None:
        # End of input: the pipe learns it at once; the waiting host, once it has sent every
        # command it held back, drains what is open. Every running tool then ends the way the
        # runtime would report it.
        self.pipe_log += self.pipe.handle(InputClosed())
        self.input_closed = True
        self.release()
        while True:
            if self.running:
                key = min(self.running)
                stopped = self.running[key].cancel_reason is not None
                self.finish_tool(key, Outcome("bye", False, "success", cancelled=stopped), True)
            else:
                break
        assert not self.turn_open and not self.waiting
        assert self.executor.idle
        assert self.pipe.finished, "the pipe did not finish what it was sent"
        assert self.pipe_log == self.host_log
        for tool in self.all_tools:
            # A discarded turn may have written some results before the discard, none after.
            assert tool.results == 1 or (tool.discarded and tool.results == 0), tool

    # ------------------------------------------------------- the host and the pipe

    def send(self, event: Event, apply: Callable[[Event], None]) -> None:
        """One host command: the pipe gets it now; the waiting host sends it now unless its
        turn drains (an add or a drain) or something it held back is still unsent."""
        self.pipe_log += self.pipe.handle(event)
        held = isinstance(event, ToolAdded | DrainRequested) and self.turn_open and self.drains
        if self.waiting or held:
            self.waiting.append((event, apply))
        else:
            apply(event)
            self.release()
        self.check_pipe()

    def release(self) -> None:
        """The waiting host's turn ended: it sends what it held back, until a drain waits."""
        while self.waiting and not (self.turn_open and self.drains):
            event, apply = self.waiting.pop(0)
            apply(event)
        if self.input_closed and self.turn_open and not self.drains and not self.waiting:
            self.do_drain(DrainRequested(None))  # what the daemon does at end of input

    def host(self, event: Event) -> list[Action]:
        actions = self.executor.handle(event)
        self.host_log += actions
        return actions

    def check_pipe(self) -> None:
        # The pipe holds exactly what the waiting host has not sent, and has said so far
        # exactly what the host's executor said: SPEC 4's pipe equivalence, step by step.
        if not self.input_closed:  # after it, the pipe also holds its end of input
            assert self.pipe.held == len(self.waiting)
        assert self.executor.held == 0, "a host that waits for drained never has commands held"
        assert self.pipe_log == self.host_log
        assert (self.pipe.turn, self.pipe.turn_open) == (self.executor.turn, self.turn_open)

    # ---------------------------------------------------------------------- the model

    def new_tool(
        self, reuse: int | None, safe: bool, behavior: str, command: str | None, precomputed: bool
    ) -> ToolAdded:
        if reuse is None or not self.ids:
            self.ids.append(f"toolu_{len(self.ids)}")
            tool_use_id = self.ids[-1]
        else:
            tool_use_id = self.ids[-1 - reuse % len(self.ids)]
        label = None if command is None else sibling_label("Bash", command)
        name = "Bash" if label else ("Read" if safe else "Write")
        outcome = None
        if precomputed:
            status: Status = "invalid_input" if label else "unknown_tool"
            outcome = Outcome(f"<tool_use_error>{status}</tool_use_error>", True, status)
        return ToolAdded(
            tool_use_id,
            name,
            safe=safe,
            interrupt_behavior="cancel" if behavior == "cancel" else "block",
            sibling_label=label,
            outcome=outcome,
        )

    def add_tool(self, event: Event) -> None:
        assert isinstance(event, ToolAdded)
        tool_use_id = event.tool_use_id
        if self.turn_open and any(tool.id == tool_use_id for tool in self.tools):
            assert self.host(event) == [EmitDuplicate(tool_use_id, self.turn)]
            return
        if not self.turn_open:
            self.turn += 1
            self.turn_open = True
            self.tools = []
            self.aborted = self.interrupted = False
            self.sibling = None
        tool = Tool(
            tool_use_id, self.turn, event.safe, event.interrupt_behavior, event.sibling_label
        )
        self.tools.append(tool)
        self.all_tools.append(tool)
        cancels: list[CancelTool] = []
        if self.sibling is not None:
            tool.expected = sibling_cancelled(self.sibling)
        elif self.aborted or (self.interrupted and tool.behavior == "cancel"):
            tool.expected = rejected()
        elif event.outcome is not None:
            tool.expected = event.outcome
            self.cascade(tool, event.outcome, cancels)
        self.apply(self.host(event), cancels)

    def do_interrupt(self, event: Event) -> None:
        assert isinstance(event, InterruptRequested)
        request_id, reason = event.request_id, event.reason
        if not self.turn_open:
            assert self.host(event) == [EmitInterrupted(request_id, None, reason, ())]
            return
        if reason == "interrupt":
            self.interrupted = True
            cause = CancelReason.INTERRUPT
        else:
            self.aborted = True
            cause = CancelReason.ABORT
        cancels: list[CancelTool] = []
        victims = self.cancel_where(
            lambda t: reason != "interrupt" or t.behavior == "cancel", cause, cancels
        )
        announced = EmitInterrupted(request_id, self.turn, reason, tuple(victims))
        self.apply(self.host(event), cancels, [announced])

    def do_discard(self, event: Event) -> None:
        assert isinstance(event, DiscardRequested)
        request_id = event.request_id
        actions = self.host(event)
        if not self.turn_open:
            assert actions == [EmitDiscarded(request_id, None, ())]
            return
        expected: list[Action] = []
        for tool in self.tools:
            tool.discarded = True
            if tool.running and tool.cancel_reason is None:
                tool.cancel_reason = CancelReason.DISCARD
                expected.append(CancelTool(tool.id, CancelReason.DISCARD, tool.turn))
        lost = tuple(tool.id for tool in self.tools if tool.results == 0)
        expected.append(EmitDiscarded(request_id, self.turn, lost))
        by_status = self.by_status()
        expected += [EmitDrained(drain, self.turn, by_status) for drain in self.drains]
        assert actions == expected
        self.turn_open = False
        self.drains = []
        self.check()

    def do_drain(self, event: Event) -> None:
        assert isinstance(event, DrainRequested)
        if not self.turn_open:
            assert self.host(event) == [EmitDrained(event.request_id, None, {})]
            return
        self.drains.append(event.request_id)
        self.apply(self.host(event), [])

    def request_id(self) -> str:
        self.requests += 1
        return f"req_{self.requests}"

    def finish_tool(self, key: tuple[int, str], outcome: Outcome, names_its_turn: bool) -> None:
        tool = self.running.pop(key)
        tool.running = False
        # The runtime echoes StartTool.turn; None is allowed for the turn the core counts as
        # current, which is the open one or, when none is open, the last.
        turn = tool.turn if names_its_turn or tool.turn != self.turn else None
        event = ToolFinished(tool.id, outcome, turn)
        self.pipe_log += self.pipe.handle(event)
        cancels: list[CancelTool] = []
        if not tool.discarded:
            if tool.cancel_reason is not None and outcome.cancelled:
                if tool.cancel_reason is CancelReason.SIBLING_ERROR:
                    assert self.sibling is not None
                    tool.expected = sibling_cancelled(self.sibling, outcome)
                else:
                    tool.expected = interrupted(outcome)
            else:
                tool.expected = outcome
                if not tool.safe and outcome.context_update:
                    self.context = {**self.context, **outcome.context_update}
                if tool.cancel_reason is None:
                    self.cascade(tool, outcome, cancels)
        self.apply(self.host(event), cancels)
        self.release()
        self.check_pipe()

    def cascade(self, tool: Tool, outcome: Outcome, cancels: list[CancelTool]) -> None:
        if tool.label is None or not outcome.is_error or self.sibling is not None:
            return
        self.sibling = tool.label
        self.cancel_where(lambda t: t is not tool, CancelReason.SIBLING_ERROR, cancels)

    def cancel_where(
        self, pick: Callable[[Tool], bool], reason: CancelReason, cancels: list[CancelTool]
    ) -> list[str]:
        victims = []
        for tool in self.tools:
            if not pick(tool):
                continue
            if tool.queued:
                if reason is CancelReason.SIBLING_ERROR:
                    assert self.sibling is not None
                    tool.expected = sibling_cancelled(self.sibling)
                else:
                    tool.expected = rejected()
                victims.append(tool.id)
            elif tool.running and tool.cancel_reason is None:
                tool.cancel_reason = reason
                cancels.append(CancelTool(tool.id, reason, tool.turn))
                victims.append(tool.id)
        return victims

    def by_status(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for tool in self.tools:
            if tool.results:
                assert tool.expected is not None
                counts[tool.expected.status] = counts.get(tool.expected.status, 0) + 1
        return counts

    def in_turn(self, tool_use_id: str) -> Tool:
        assert self.turn_open, f"{tool_use_id}: action with no turn open"
        (tool,) = (tool for tool in self.tools if tool.id == tool_use_id)
        return tool

    # ------------------------------------------------------------------------ checks

    def apply(
        self,
        actions: list[Action],
        cancels: list[CancelTool],
        announced: list[Action] | None = None,
    ) -> None:
        assert [a for a in actions if isinstance(a, CancelTool)] == cancels
        others: list[Action] = []
        started = False
        for n, action in enumerate(actions):
            if isinstance(action, StartTool):
                self.check_start(action)
                started = True
            elif isinstance(action, EmitResult):
                assert not started, "a result after a start in the same answer"
                self.check_result(action)
            elif isinstance(action, EmitDrained):
                self.check_drained(actions[n:])
                break
            elif not isinstance(action, CancelTool):
                others.append(action)
        assert others == (announced or [])
        self.check()

    def check_start(self, action: StartTool) -> None:
        tool = self.in_turn(action.tool_use_id)
        assert action.turn == self.turn
        assert tool.queued, f"{tool.id} started but was not queued"
        assert not self.aborted and self.sibling is None
        assert not (self.interrupted and tool.behavior == "cancel")
        running = list(self.running.values())
        assert len(running) < self.max_concurrency
        if tool.safe:
            assert all(other.safe for other in running), "safe tool beside an unsafe one"
        else:
            assert not running, "unsafe tool beside another tool"
        for earlier in self.tools[: self.tools.index(tool)]:
            assert not (earlier.queued and not earlier.safe), "overtook a waiting unsafe tool"
        assert action.context == self.context
        tool.started = tool.running = True
        self.running[(tool.turn, tool.id)] = tool

    def check_result(self, action: EmitResult) -> None:
        tool = self.in_turn(action.tool_use_id)
        assert action.turn == self.turn
        assert tool.results == 0, f"second result for {tool.id}"
        assert not tool.running and tool.expected is not None
        assert action.outcome == tool.expected
        for earlier in self.tools[: self.tools.index(tool)]:
            if self.order == "strict" or not earlier.safe:
                assert earlier.results == 1, f"{tool.id} passed {earlier.id}"
        tool.results = 1

    def check_drained(self, rest: list[Action]) -> None:
        assert all(tool.results == 1 for tool in self.tools), "drained before every result"
        by_status = self.by_status()
        assert rest == [EmitDrained(drain, self.turn, by_status) for drain in self.drains]
        self.turn_open = False
        self.drains = []

    def check(self) -> None:
        executor = self.executor
        assert (executor.turn, executor.turn_open) == (self.turn, self.turn_open)
        zombies = any(tool.discarded for tool in self.running.values())
        assert executor.idle == (not self.turn_open and not zombies)
        if not self.turn_open:
            return
        assert executor.turn_tool_ids() == tuple(tool.id for tool in self.tools)
        assert self.drains == [] or not all(tool.results for tool in self.tools), "drain unanswered"
        for tool in self.tools:
            if tool.results:
                state = State.YIELDED
            elif tool.running:
                state = State.EXECUTING
            elif tool.queued:
                state = State.QUEUED
            else:
                state = State.COMPLETED
            assert executor.state_of(tool.id) is state, tool
            stopping = self.aborted or self.sibling is not None
            if stopping or (self.interrupted and tool.behavior == "cancel"):
                assert not tool.queued
                assert not tool.running or tool.cancel_reason is not None
        # Nothing that may be written is held back.
        for tool in self.tools:
            ready = tool.results == 0 and tool.expected is not None and not tool.running
            assert not ready, f"{tool.id} could be written"
            if tool.results == 0 and (self.order == "strict" or not tool.safe):
                break
        # Nothing that may start is left waiting (the scan rule of SPEC 4).
        running = len(self.running)
        unsafe_running = any(not tool.safe for tool in self.running.values())
        for tool in self.tools:
            if not tool.queued:
                continue
            if running >= self.max_concurrency:
                break
            assert not (running == 0 or (tool.safe and not unsafe_running)), f"{tool.id} waits"
            if not tool.safe:
                break


def test_executor_keeps_every_rule_under_random_commands() -> None:
    run_state_machine_as_test(
        ExecutorMachine,
        settings=settings(max_examples=200, stateful_step_count=40, deadline=None),
    )


@pytest.mark.parametrize("trim_at", [1, 2])
def test_every_rule_holds_when_written_calls_are_trimmed_at_once(
    monkeypatch: pytest.MonkeyPatch, trim_at: int
) -> None:
    """The same machine with a turn's written head dropped after every one or two results
    (it is 256 in use), so every rule runs against trimmed turns."""
    monkeypatch.setattr(executor_module, "_TRIM_AT", trim_at)
    run_state_machine_as_test(
        ExecutorMachine,
        settings=settings(max_examples=100, stateful_step_count=40, deadline=None),
    )
