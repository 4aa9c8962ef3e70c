"""A turn of many calls: the core lets go of a call once its result is written.

A host may queue 100,000 calls in one turn. Each written call's record (its payload, its
outcome with the result text) is released and only its id stays, so a long turn's memory does
not grow with the results (bench/NOTES.md section 18), while every rule that reads past calls
still holds: a duplicate id is refused however long ago its call was written, the turn's ids
are all listed in add order (permission requests name the siblings), and ``drained`` counts
every result by status.
"""

from __future__ import annotations

import gc
import weakref

from stdio_executor.core import (
    Action,
    DrainRequested,
    EmitDrained,
    EmitDuplicate,
    EmitResult,
    Executor,
    Outcome,
    StartTool,
    State,
    ToolAdded,
    ToolFinished,
)
from stdio_executor.core import executor as executor_module


class Payload:
    """Stands for admission's ``Call``; weakly referenceable so its release is visible."""


def run_turn(executor: Executor, n: int) -> tuple[list[weakref.ref[Payload]], list[str]]:
    """Add ``n`` safe calls, finishing each as it starts; the written ids in order."""
    refs: list[weakref.ref[Payload]] = []
    written: list[str] = []
    pending: list[StartTool] = []

    def take(actions: list[Action]) -> None:
        for action in actions:
            if isinstance(action, StartTool):
                pending.append(action)
            elif isinstance(action, EmitResult):
                written.append(action.tool_use_id)

    for i in range(n):
        payload = Payload()
        refs.append(weakref.ref(payload))
        take(executor.handle(ToolAdded(f"t{i}", "Read", True, "block", payload=payload)))
        while pending:
            start = pending.pop(0)
            outcome = Outcome("x" * 100, i % 3 == 0, "error" if i % 3 == 0 else "success")
            take(executor.handle(ToolFinished(start.tool_use_id, outcome, start.turn)))
    return refs, written


def test_a_written_calls_record_is_let_go_but_its_id_is_kept() -> None:
    executor = Executor()
    n = 3 * executor_module._TRIM_AT
    refs, written = run_turn(executor, n)
    assert written == [f"t{i}" for i in range(n)]
    gc.collect()
    # Every payload is gone (the core held each one until its result was written).
    assert [r for r in refs if r() is not None] == []
    # The ids stay: the first call's id is still a duplicate, and still a sibling.
    assert executor.turn_tool_ids() == tuple(f"t{i}" for i in range(n))
    assert executor.state_of("t0") is State.YIELDED
    assert executor.holds("t0")
    actions = executor.handle(ToolAdded("t0", "Read", True, "block"))
    assert [type(a) for a in actions] == [EmitDuplicate]
    # drained counts every result, the one trimmed long ago included.
    (drained,) = executor.handle(DrainRequested("d"))
    assert isinstance(drained, EmitDrained)
    assert drained.by_status == {"error": n // 3, "success": n - n // 3}
    assert list(drained.by_status) == ["error", "success"]  # t0 (an error) came first


def test_the_head_of_a_long_turn_is_dropped_from_the_scan_list() -> None:
    executor = Executor()
    run_turn(executor, 10 * executor_module._TRIM_AT + 3)
    turn = executor._open
    assert turn is not None
    assert len(turn.tools) < executor_module._TRIM_AT
    assert turn.trimmed + len(turn.tools) == 10 * executor_module._TRIM_AT + 3


def test_drained_lists_statuses_in_add_order_when_results_are_written_out_of_it() -> None:
    """``barrier`` order writes a later result first; ``by_status`` still lists each status
    where its first call was added, as it did when it was counted from the records."""
    executor = Executor(result_order="barrier")
    executor.handle(ToolAdded("a", "Read", True, "block"))
    executor.handle(ToolAdded("b", "Read", True, "block"))
    executor.handle(ToolFinished("b", Outcome("fine", False, "success")))  # written first
    executor.handle(ToolFinished("a", Outcome("no", True, "error")))
    (drained,) = executor.handle(DrainRequested("d"))
    assert isinstance(drained, EmitDrained)
    assert list(drained.by_status.items()) == [("error", 1), ("success", 1)]
