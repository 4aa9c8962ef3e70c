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
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    precondition,
    rule,
    run_state_machine_as_test,
)

from stdio_executor.core.executor import (
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
    Executor,
    InterruptRequested,
    Outcome,
    ResultOrder,
    StartTool,
    State,
    ToolAdded,
    ToolFinished,
    sibling_label,
)

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
    return Outcome(REJECTED_MESSAGE, True, "rejected", {}, True)


def sibling_cancelled(label: str, extra: Mapping[str, Any] | None = None) -> Outcome:
    message = f"<tool_use_error>Cancelled: parallel tool call {label} errored</tool_use_error>"
    return Outcome(message, True, "sibling_cancelled", extra or {}, True)


def interrupted(partial: Outcome) -> Outcome:
    content = INTERRUPTED_MESSAGE
    assert isinstance(partial.content, str)
    if partial.content.strip():
        content = f"{INTERRUPTED_MESSAGE}\nOutput before it stopped:\n{partial.content.rstrip()}"
    return Outcome(content, True, "interrupted", partial.extra, True)


class ExecutorMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.executor = Executor()
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
        self.drains: list[str] = []
        self.requests = 0
        self.ids: list[str] = []  # every id used so far
        self.counter = 0

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

    @rule(tool=TOOLS)
    def add(self, tool: ToolSpec) -> None:
        self.add_tool(*tool)

    @rule(tools=st.lists(TOOLS, min_size=2, max_size=4))
    def add_several(self, tools: list[ToolSpec]) -> None:
        # An assistant message streams several tool_use blocks before anything finishes.
        for tool in tools:
            self.add_tool(*tool)

    def add_tool(
        self, reuse: int | None, safe: bool, behavior: str, command: str | None, precomputed: bool
    ) -> None:
        if reuse is None or not self.ids:
            self.ids.append(f"toolu_{len(self.ids)}")
            tool_use_id = self.ids[-1]
        else:
            tool_use_id = self.ids[-1 - reuse % len(self.ids)]
        label = None if command is None else sibling_label("Bash", command)
        name = "Bash" if label else ("Read" if safe else "Write")
        outcome = None
        if precomputed:
            status = "invalid_input" if label else "unknown_tool"
            outcome = Outcome(f"<tool_use_error>{status}</tool_use_error>", True, status)
        event = ToolAdded(
            tool_use_id,
            name,
            safe=safe,
            interrupt_behavior="cancel" if behavior == "cancel" else "block",
            sibling_label=label,
            outcome=outcome,
        )
        if self.turn_open and any(tool.id == tool_use_id for tool in self.tools):
            assert self.executor.handle(event) == [EmitDuplicate(tool_use_id, self.turn)]
            return
        if not self.turn_open:
            self.turn += 1
            self.turn_open = True
            self.tools = []
            self.aborted = self.interrupted = False
            self.sibling = None
        tool = Tool(tool_use_id, self.turn, safe, behavior, label)
        self.tools.append(tool)
        self.all_tools.append(tool)
        cancels: list[CancelTool] = []
        if self.sibling is not None:
            tool.expected = sibling_cancelled(self.sibling)
        elif self.aborted or (self.interrupted and behavior == "cancel"):
            tool.expected = rejected()
        elif outcome is not None:
            tool.expected = outcome
            self.cascade(tool, outcome, cancels)
        self.apply(self.executor.handle(event), cancels)

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
            {"n": self.counter},
            cancelled,
            update,
        )
        self.finish_tool(key, outcome, names_its_turn)

    @precondition(lambda self: any(t.cancel_reason for t in self.running.values()))
    @rule(data=st.data(), stopped_by_the_cancel=st.sampled_from([True, True, True, False]))
    def finish_cancelled(self, data: st.DataObject, stopped_by_the_cancel: bool) -> None:
        # Rare under ``finish`` alone: a tool asked to stop reports back before the turn ends.
        keys = sorted(k for k, t in self.running.items() if t.cancel_reason is not None)
        key = data.draw(st.sampled_from(keys), label="cancelled tool")
        partial = data.draw(st.sampled_from(["", "line 1\nline 2\n"]), label="partial")
        outcome = Outcome(partial, False, "success", {"signal": 15}, stopped_by_the_cancel)
        self.finish_tool(key, outcome, names_its_turn=False)

    @rule(reason=st.sampled_from(["interrupt", "abort"]))
    def interrupt(self, reason: str) -> None:
        request_id = self.request_id()
        event = InterruptRequested(reason, request_id)
        if not self.turn_open:
            assert self.executor.handle(event) == [EmitInterrupted(request_id, None, reason, ())]
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
        self.apply(self.executor.handle(event), cancels, [announced])

    @rule()
    def discard(self) -> None:
        request_id = self.request_id()
        actions = self.executor.handle(DiscardRequested(request_id))
        if not self.turn_open:
            assert actions == [EmitDiscarded(request_id, None, ())]
            return
        expected: list[Action] = []
        for tool in self.tools:
            tool.discarded = True
            if tool.running and tool.cancel_reason is None:
                tool.cancel_reason = CancelReason.DISCARD
                expected.append(CancelTool(tool.id, CancelReason.DISCARD))
        lost = tuple(tool.id for tool in self.tools if tool.results == 0)
        expected.append(EmitDiscarded(request_id, self.turn, lost))
        by_status = self.by_status()
        expected += [EmitDrained(drain, self.turn, by_status) for drain in self.drains]
        assert actions == expected
        self.turn_open = False
        self.drains = []
        self.check()

    @rule()
    def drain(self) -> None:
        request_id = self.request_id()
        event = DrainRequested(request_id)
        if not self.turn_open:
            assert self.executor.handle(event) == [EmitDrained(request_id, None, {})]
            return
        self.drains.append(request_id)
        self.apply(self.executor.handle(event), [])

    def teardown(self) -> None:
        # Let every running tool end the way the runtime would report it, then drain.
        while self.running:
            key = min(self.running)
            tool = self.running[key]
            stopped = tool.cancel_reason is not None
            self.finish_tool(key, Outcome("bye", False, "success", {}, stopped), True)
        if self.turn_open:
            self.drain()
        assert not self.turn_open
        assert self.executor.idle
        for tool in self.all_tools:
            # A discarded turn may have written some results before the discard, none after.
            assert tool.results == 1 or (tool.discarded and tool.results == 0), tool

    # ---------------------------------------------------------------------- the model

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
        cancels: list[CancelTool] = []
        if not tool.discarded:
            if tool.cancel_reason is not None and outcome.cancelled:
                if tool.cancel_reason is CancelReason.SIBLING_ERROR:
                    assert self.sibling is not None
                    tool.expected = sibling_cancelled(self.sibling, outcome.extra)
                else:
                    tool.expected = interrupted(outcome)
            else:
                tool.expected = outcome
                if not tool.safe and outcome.context_update:
                    self.context = {**self.context, **outcome.context_update}
                if tool.cancel_reason is None:
                    self.cascade(tool, outcome, cancels)
        self.apply(self.executor.handle(event), cancels)

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
                cancels.append(CancelTool(tool.id, reason))
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
