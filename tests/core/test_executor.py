"""Behaviour of the sans-I/O executor core, one SPEC section 4 rule per test.

Every test feeds events to a real ``Executor`` and looks at the actions it answers with; the
runtime's part (running tools, reporting them finished) is played by hand.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

import pytest

from stdio_executor.core import (
    INTERRUPTED_MESSAGE,
    REJECTED_MESSAGE,
    SHUTDOWN_MESSAGE,
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
    ExecutorError,
    InputClosed,
    InterruptRequested,
    Outcome,
    ResultOrder,
    ShutdownRequested,
    StartTool,
    State,
    ToolAdded,
    ToolFinished,
    sibling_label,
)

A = TypeVar("A", bound=Action)

# ------------------------------------------------------------------------------ helpers


def ok(content: str = "done", **extra: Any) -> Outcome:
    return Outcome(content, False, "success", **extra)


def failed(content: str = "exit code 1") -> Outcome:
    return Outcome(content, True, "error")


def stopped(partial: str = "", **extra: Any) -> Outcome:
    """What the runtime reports for a tool that stopped because it was asked to."""
    return Outcome(partial, True, "error", cancelled=True, **extra)


def unknown(name: str) -> Outcome:
    return Outcome(
        f"<tool_use_error>Error: No such tool available: {name}</tool_use_error>",
        True,
        "unknown_tool",
    )


def read(tool_use_id: str, *, outcome: Outcome | None = None) -> ToolAdded:
    """A concurrency-safe tool that blocks on interrupt (like Read)."""
    return ToolAdded(tool_use_id, "Read", safe=True, interrupt_behavior="block", outcome=outcome)


def write(tool_use_id: str, *, outcome: Outcome | None = None) -> ToolAdded:
    """An unsafe tool that blocks on interrupt (like Write)."""
    return ToolAdded(tool_use_id, "Write", safe=False, interrupt_behavior="block", outcome=outcome)


def bash(
    tool_use_id: str, command: str = "make", *, safe: bool = False, outcome: Outcome | None = None
) -> ToolAdded:
    """A Bash call: cancelled on interrupt, and its errors cancel its siblings."""
    return ToolAdded(
        tool_use_id,
        "Bash",
        safe=safe,
        interrupt_behavior="cancel",
        sibling_label=sibling_label("Bash", command),
        outcome=outcome,
    )


def cancellable(tool_use_id: str, *, safe: bool = True) -> ToolAdded:
    """A tool that is cancelled on interrupt but whose errors cancel nothing (a host tool)."""
    return ToolAdded(tool_use_id, "host_search", safe=safe, interrupt_behavior="cancel")


def sibling_message(command: str) -> str:
    return (
        "<tool_use_error>Cancelled: parallel tool call "
        f"{sibling_label('Bash', command)} errored</tool_use_error>"
    )


def feed(executor: Executor, *events: Event) -> list[Action]:
    actions: list[Action] = []
    for event in events:
        actions += executor.handle(event)
    return actions


def only(actions: Iterable[Action], kind: type[A]) -> list[A]:
    return [action for action in actions if isinstance(action, kind)]


def started(actions: Iterable[Action]) -> list[str]:
    return [action.tool_use_id for action in only(actions, StartTool)]


def written(actions: Iterable[Action]) -> list[str]:
    return [action.tool_use_id for action in only(actions, EmitResult)]


def results(actions: Iterable[Action]) -> dict[str, Outcome]:
    return {action.tool_use_id: action.outcome for action in only(actions, EmitResult)}


def cancels(actions: Iterable[Action]) -> list[tuple[str, CancelReason]]:
    return [(action.tool_use_id, action.reason) for action in only(actions, CancelTool)]


def finish_event(tool_use_id: str, outcome: Outcome) -> ToolFinished:
    return ToolFinished(tool_use_id, outcome)


def finish(
    executor: Executor, tool_use_id: str, outcome: Outcome | None = None, *, turn: int | None = None
) -> list[Action]:
    return executor.handle(ToolFinished(tool_use_id, outcome or ok(), turn))


# --------------------------------------------------------------------------- starting


def test_tools_start_as_soon_as_they_are_added() -> None:
    executor = Executor()
    assert executor.handle(read("a")) == [StartTool("a", "Read", 1, {})]
    assert started(executor.handle(read("b"))) == ["b"]


@pytest.mark.parametrize(
    ("kinds", "max_concurrency", "waves"),
    [
        pytest.param("SSS", 10, ["abc"], id="safe-tools-run-together"),
        pytest.param("U", 10, ["a"], id="lone-unsafe-tool-starts"),
        pytest.param("UU", 10, ["a", "b"], id="unsafe-tools-run-one-by-one"),
        pytest.param("SUS", 10, ["a", "b", "c"], id="unsafe-tool-is-a-barrier"),
        pytest.param("SSUSS", 10, ["ab", "c", "de"], id="unsafe-tool-splits-safe-batches"),
        pytest.param("USSU", 10, ["a", "bc", "d"], id="safe-batch-between-unsafe-tools"),
        pytest.param("SSS", 2, ["ab", "c"], id="max-concurrency-2"),
        pytest.param("SSSSS", 2, ["ab", "cd", "e"], id="freed-slots-refill-in-order"),
        pytest.param("SSUS", 1, ["a", "b", "c", "d"], id="max-concurrency-1-is-serial"),
    ],
)
def test_tools_start_in_waves_set_by_safety_and_max_concurrency(
    kinds: str, max_concurrency: int, waves: list[str]
) -> None:
    # Add the whole turn, then finish each wave in start order; note what each wave starts.
    executor = Executor(max_concurrency=max_concurrency)
    ids = "abcdefgh"[: len(kinds)]
    tools = [read(i) if kind == "S" else write(i) for i, kind in zip(ids, kinds, strict=True)]
    wave = started(feed(executor, *tools))
    seen = []
    while wave:
        seen.append("".join(wave))
        wave = [i for tool_use_id in wave for i in started(finish(executor, tool_use_id))]
    assert seen == waves


def test_unsafe_tool_waits_for_running_safe_tools() -> None:
    executor = Executor()
    feed(executor, read("a"), read("b"))
    assert started(executor.handle(write("c"))) == []
    assert started(finish(executor, "a")) == []
    assert started(finish(executor, "b")) == ["c"]


def test_result_comes_before_the_start_of_the_tool_that_takes_its_slot() -> None:
    # A host that tracks what runs from the wire never sees two unsafe tools at once.
    executor = Executor()
    feed(executor, write("a"), write("b"))
    assert finish(executor, "a") == [EmitResult("a", 1, ok()), StartTool("b", "Write", 1, {})]


def test_safe_tool_waits_for_running_unsafe_tool() -> None:
    executor = Executor()
    executor.handle(write("a"))
    assert started(executor.handle(read("b"))) == []
    assert started(finish(executor, "a")) == ["b"]


def test_queued_unsafe_tool_stops_the_scan_so_nothing_overtakes_it() -> None:
    executor = Executor()
    feed(executor, read("a"), write("b"))
    # "c" could run next to "a", but that would overtake the waiting unsafe "b".
    assert started(executor.handle(read("c"))) == []
    assert started(finish(executor, "a")) == ["b"]
    assert started(finish(executor, "b")) == ["c"]


def test_safe_tools_that_cannot_start_do_not_stop_the_scan() -> None:
    executor = Executor()
    feed(executor, write("a"), read("b"), read("c"), write("d"), read("e"))
    # "b" and "c" were both held back by "a"; neither holds back the other once "a" is done.
    assert started(finish(executor, "a")) == ["b", "c"]
    assert started(finish(executor, "b")) == []
    assert started(finish(executor, "c")) == ["d"]
    assert started(finish(executor, "d")) == ["e"]


def test_at_most_max_concurrency_tools_run_at_once() -> None:
    executor = Executor(max_concurrency=3)
    assert started(feed(executor, *(read(str(i)) for i in range(5)))) == ["0", "1", "2"]
    assert started(finish(executor, "1")) == ["3"]
    assert started(finish(executor, "0")) == ["4"]


def test_max_concurrency_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="max_concurrency"):
        Executor(max_concurrency=0)


def test_tool_with_a_precomputed_outcome_never_starts_and_never_holds_a_slot() -> None:
    executor = Executor(max_concurrency=1)
    invalid = Outcome(
        "<tool_use_error>InputValidationError: ...</tool_use_error>", True, "invalid_input"
    )
    actions = feed(executor, write("a", outcome=invalid), write("b"))
    assert started(actions) == ["b"]
    assert results(actions) == {"a": invalid}


def test_tool_moves_queued_executing_completed_yielded() -> None:
    executor = Executor()
    feed(executor, write("a"), read("b"))
    assert (executor.state_of("a"), executor.state_of("b")) == (State.EXECUTING, State.QUEUED)
    assert executor.is_live(1, "a") and not executor.is_live(1, "b")
    finish(executor, "a")
    assert (executor.state_of("a"), executor.state_of("b")) == (State.YIELDED, State.EXECUTING)
    assert executor.state_of("nope") is None


# ----------------------------------------------------------------------- result order


def test_results_come_out_in_add_order_in_strict_mode() -> None:
    executor = Executor()
    feed(executor, read("a"), read("b"), read("c"))
    assert written(finish(executor, "c")) == []
    assert executor.state_of("c") is State.COMPLETED
    assert written(finish(executor, "b")) == []
    assert written(finish(executor, "a")) == ["a", "b", "c"]


def test_barrier_mode_lets_a_result_pass_an_unfinished_safe_tool() -> None:
    executor = Executor(result_order="barrier")
    feed(executor, read("a"), read("b"), read("c"))
    assert written(finish(executor, "c")) == ["c"]
    assert written(finish(executor, "a")) == ["a"]
    assert written(finish(executor, "b")) == ["b"]


def test_barrier_mode_never_lets_a_result_pass_an_unfinished_unsafe_tool() -> None:
    executor = Executor(result_order="barrier")
    feed(executor, read("a"), write("b"))
    assert written(executor.handle(read("x", outcome=unknown("Nope")))) == []  # "b" queued
    assert written(finish(executor, "a")) == ["a"]  # and "b" starts
    assert written(executor.handle(read("y", outcome=unknown("Nope")))) == []  # "b" running
    assert written(finish(executor, "b")) == ["b", "x", "y"]


@pytest.mark.parametrize(
    ("order", "at_add", "at_finish"),
    [("strict", [], ["a", "x"]), ("barrier", ["x"], ["a"])],
)
def test_unknown_tool_result_keeps_its_place_in_result_order(
    order: ResultOrder, at_add: list[str], at_finish: list[str]
) -> None:
    executor = Executor(result_order=order)
    executor.handle(read("a"))
    actions = executor.handle(read("x", outcome=unknown("Nope")))
    assert (started(actions), written(actions)) == ([], at_add)
    assert written(finish(executor, "a")) == at_finish


def test_unknown_tool_between_unsafe_tools_is_written_between_their_results() -> None:
    executor = Executor()
    feed(executor, write("a"), read("x", outcome=unknown("Nope")), write("b"))
    actions = finish(executor, "a")
    assert (written(actions), started(actions)) == (["a", "x"], ["b"])
    assert results(actions)["x"] == unknown("Nope")


def test_first_tool_with_a_precomputed_outcome_is_written_at_once() -> None:
    executor = Executor()
    assert executor.handle(read("x", outcome=unknown("Nope"))) == [
        EmitResult("x", 1, unknown("Nope"))
    ]


# ----------------------------------------------------------------- sibling cancellation


@pytest.mark.parametrize(
    ("command", "label"),
    [
        ("ls", "Bash(ls)"),
        ("x" * 40, f"Bash({'x' * 40})"),
        ("x" * 41, f"Bash({'x' * 40}\u2026)"),
        (
            "npm run test -- --watch=false --reporter=dot --coverage",
            "Bash(npm run test -- --watch=false --reporter\u2026)",
        ),
    ],
)
def test_sibling_label_cuts_the_command_to_40_characters_plus_an_ellipsis(
    command: str, label: str
) -> None:
    assert sibling_label("Bash", command) == label


def test_bash_error_cancels_running_and_queued_siblings_with_the_exact_message() -> None:
    executor = Executor()
    feed(executor, bash("a", "ls /nope", safe=True), cancellable("b"), read("c"), write("d"))
    actions = finish(executor, "a", failed())
    assert cancels(actions) == [
        ("b", CancelReason.SIBLING_ERROR),
        ("c", CancelReason.SIBLING_ERROR),
    ]
    assert (written(actions), started(actions)) == (["a"], [])
    assert executor.state_of("d") is State.COMPLETED  # no process to wait for
    expected = Outcome(
        "<tool_use_error>Cancelled: parallel tool call Bash(ls /nope) errored</tool_use_error>",
        True,
        "sibling_cancelled",
        cancelled=True,
    )
    assert written(finish(executor, "b", stopped("partial"))) == ["b"]
    assert results(finish(executor, "c", stopped())) == {"c": expected, "d": expected}


def test_sibling_message_uses_the_cut_command() -> None:
    command = "pytest tests/very/long/path/to/a/test_module.py -x -q"
    executor = Executor()
    feed(executor, bash("a", command), write("b"))
    assert results(finish(executor, "a", failed()))["b"].content == (
        "<tool_use_error>Cancelled: parallel tool call "
        "Bash(pytest tests/very/long/path/to/a/test_mo\u2026) errored</tool_use_error>"
    )


@pytest.mark.parametrize(
    "later",
    [read("x"), write("x"), bash("x", "echo hi"), read("x", outcome=unknown("Nope"))],
    ids=["safe", "unsafe", "bash", "precomputed"],
)
def test_tools_added_after_a_sibling_error_are_cancelled_too(later: ToolAdded) -> None:
    executor = Executor()
    feed(executor, bash("a", "false"), finish_event("a", failed()))
    actions = executor.handle(later)
    assert started(actions) == []
    assert results(actions) == {
        "x": Outcome(sibling_message("false"), True, "sibling_cancelled", cancelled=True)
    }


def test_precomputed_bash_error_cancels_siblings() -> None:
    executor = Executor()
    executor.handle(read("a"))
    invalid = Outcome(
        "<tool_use_error>InputValidationError: ...</tool_use_error>", True, "invalid_input"
    )
    actions = executor.handle(bash("b", "", outcome=invalid))
    assert cancels(actions) == [("a", CancelReason.SIBLING_ERROR)]


@pytest.mark.parametrize(
    ("erring", "outcome"),
    [
        pytest.param(read("e"), failed(), id="failing-safe-tool"),
        pytest.param(write("e"), failed(), id="failing-unsafe-tool"),
        pytest.param(cancellable("e"), failed(), id="failing-cancellable-tool"),
        pytest.param(bash("e", "ls"), ok(), id="successful-bash"),
    ],
)
def test_only_bash_errors_cancel_siblings(erring: ToolAdded, outcome: Outcome) -> None:
    executor = Executor()
    feed(executor, erring, read("b"), bash("c"))
    assert cancels(finish(executor, "e", outcome)) == []
    assert started(finish(executor, "b")) == ["c"]
    assert results(finish(executor, "c")) == {"c": ok()}


def test_unknown_tool_error_cancels_nothing() -> None:
    executor = Executor()
    executor.handle(read("a"))
    assert cancels(executor.handle(read("x", outcome=unknown("Nope")))) == []
    assert results(finish(executor, "a")) == {"a": ok(), "x": unknown("Nope")}


def test_only_the_first_bash_error_names_the_label() -> None:
    executor = Executor()
    feed(executor, bash("a", "first", safe=True), bash("b", "second", safe=True), read("c"))
    assert cancels(finish(executor, "a", failed())) == [
        ("b", CancelReason.SIBLING_ERROR),
        ("c", CancelReason.SIBLING_ERROR),
    ]
    # "b" exits with an error before the kill lands: its own result, and no second cascade.
    actions = finish(executor, "b", failed("second failed"))
    assert cancels(actions) == []
    actions += finish(executor, "c", stopped())
    assert results(actions) == {
        "b": failed("second failed"),
        "c": Outcome(sibling_message("first"), True, "sibling_cancelled", cancelled=True),
    }


def test_sibling_error_does_not_end_the_turn_or_carry_over_to_the_next() -> None:
    executor = Executor()
    feed(executor, bash("a", "false"), finish_event("a", failed()))
    assert executor.turn_open
    drained = only(executor.handle(DrainRequested("r")), EmitDrained)
    assert drained == [EmitDrained("r", 1, {"error": 1})]
    assert started(executor.handle(bash("b"))) == ["b"]


# --------------------------------------------------------------------------- interrupt


def test_interrupt_rejects_queued_cancel_tools_at_once() -> None:
    executor = Executor()
    feed(executor, write("a"), bash("b"), write("c"))
    actions = executor.handle(InterruptRequested("interrupt", "r1"))
    assert actions == [EmitInterrupted("r1", 1, "interrupt", ("b",))]
    assert executor.state_of("b") is State.COMPLETED
    actions = finish(executor, "a")
    assert (written(actions), started(actions)) == (["a", "b"], ["c"])
    assert results(actions)["b"] == Outcome(REJECTED_MESSAGE, True, "rejected", cancelled=True)


def test_interrupt_cancels_running_cancel_tools_and_keeps_their_partial_output() -> None:
    executor = Executor()
    feed(executor, bash("a", safe=True), cancellable("b"), read("c"))
    actions = executor.handle(InterruptRequested("interrupt"))
    assert cancels(actions) == [("a", CancelReason.INTERRUPT), ("b", CancelReason.INTERRUPT)]
    assert only(actions, EmitInterrupted) == [EmitInterrupted(None, 1, "interrupt", ("a", "b"))]
    actions = feed(
        executor,
        finish_event("a", stopped("line 1\nline 2\n", exit_code=-15)),
        finish_event("b", stopped("  \n")),
        finish_event("c", ok("file text")),
    )
    assert results(actions) == {
        "a": Outcome(
            f"{INTERRUPTED_MESSAGE}\nOutput before it stopped:\nline 1\nline 2",
            True,
            "interrupted",
            cancelled=True,
            exit_code=-15,
        ),
        "b": Outcome(INTERRUPTED_MESSAGE, True, "interrupted", cancelled=True),
        "c": ok("file text"),
    }


def test_interrupt_lets_block_tools_run_to_their_real_result() -> None:
    executor = Executor(max_concurrency=1)
    feed(executor, read("a"), read("b"))
    actions = executor.handle(InterruptRequested("interrupt"))
    assert actions == [EmitInterrupted(None, 1, "interrupt", ())]
    assert started(finish(executor, "a", ok("A"))) == ["b"]
    assert results(finish(executor, "b", ok("B"))) == {"b": ok("B")}


def test_cancelled_tool_keeps_its_slot_until_it_reports_finished() -> None:
    executor = Executor()
    feed(executor, bash("a"), write("b"))
    executor.handle(InterruptRequested("interrupt"))
    assert executor.state_of("a") is State.EXECUTING
    assert started(executor.handle(write("c"))) == []
    assert started(finish(executor, "a", stopped())) == ["b"]


def test_cancel_tools_added_after_an_interrupt_are_rejected_and_block_tools_run() -> None:
    executor = Executor()
    executor.handle(InterruptRequested("interrupt"))  # no turn yet: nothing to remember
    feed(executor, read("a"), InterruptRequested("interrupt"))
    actions = feed(executor, bash("b", safe=True), cancellable("c"), read("d"))
    assert started(actions) == ["d"]
    assert [executor.state_of(i) for i in "bc"] == [State.COMPLETED, State.COMPLETED]
    finish(executor, "a")
    assert results(finish(executor, "d")) == {"d": ok()}
    assert executor.handle(DrainRequested()) == [
        EmitDrained(None, 1, {"success": 2, "rejected": 2})
    ]


def test_rejected_results_after_an_interrupt_are_the_rejection_message() -> None:
    executor = Executor()
    feed(executor, read("a"), InterruptRequested("interrupt"))
    actions = feed(executor, bash("b", safe=True), finish_event("a", ok()))
    assert results(actions) == {
        "a": ok(),
        "b": Outcome(REJECTED_MESSAGE, True, "rejected", cancelled=True),
    }


def test_interrupt_does_not_carry_over_to_the_next_turn() -> None:
    executor = Executor()
    feed(executor, read("a"), InterruptRequested("interrupt"), finish_event("a", ok()))
    feed(executor, DrainRequested())
    assert started(executor.handle(bash("b"))) == ["b"]


@pytest.mark.parametrize("reason", ["abort", "timeout", ""])
def test_any_reason_but_interrupt_cancels_every_unfinished_tool(reason: str) -> None:
    executor = Executor()
    feed(executor, read("a"), bash("b", safe=True), write("c"), read("d"))
    actions = executor.handle(InterruptRequested(reason))
    assert cancels(actions) == [("a", CancelReason.ABORT), ("b", CancelReason.ABORT)]
    assert only(actions, EmitInterrupted) == [
        EmitInterrupted(None, 1, reason, ("a", "b", "c", "d"))
    ]
    actions = feed(executor, finish_event("a", stopped("half")), finish_event("b", stopped()))
    assert started(actions) == []
    assert results(actions) == {
        "a": Outcome(
            f"{INTERRUPTED_MESSAGE}\nOutput before it stopped:\nhalf",
            True,
            "interrupted",
            cancelled=True,
        ),
        "b": Outcome(INTERRUPTED_MESSAGE, True, "interrupted", cancelled=True),
        "c": Outcome(REJECTED_MESSAGE, True, "rejected", cancelled=True),
        "d": Outcome(REJECTED_MESSAGE, True, "rejected", cancelled=True),
    }


@pytest.mark.parametrize(
    "later",
    [read("x"), write("x"), bash("x"), read("x", outcome=unknown("Nope"))],
    ids=["block", "unsafe-block", "bash", "precomputed"],
)
def test_tools_added_after_an_abort_are_rejected(later: ToolAdded) -> None:
    executor = Executor()
    feed(executor, read("a", outcome=unknown("Nope")), InterruptRequested())
    actions = executor.handle(later)
    assert started(actions) == []
    assert results(actions) == {"x": Outcome(REJECTED_MESSAGE, True, "rejected", cancelled=True)}


def test_interrupt_with_no_open_turn_cancels_nothing() -> None:
    executor = Executor()
    assert executor.handle(InterruptRequested("interrupt", "r")) == [
        EmitInterrupted("r", None, "interrupt", ())
    ]


def test_cancelled_tool_that_actually_finished_keeps_its_real_result() -> None:
    executor = Executor()
    feed(executor, bash("a"), InterruptRequested("interrupt"))
    real = Outcome("all done", False, "success", exit_code=0, context_update={"cwd": "/x"})
    assert results(finish(executor, "a", real)) == {"a": real}


def test_tool_is_cancelled_only_once_whatever_the_reasons() -> None:
    executor = Executor()
    feed(executor, bash("a"), InterruptRequested("interrupt"))
    assert cancels(executor.handle(InterruptRequested("abort"))) == []
    assert cancels(executor.handle(ShutdownRequested())) == []
    assert cancels(executor.handle(DiscardRequested())) == []


# ---------------------------------------------------------------------------- discard


def test_discard_writes_no_more_results_and_lists_the_ids_that_got_none() -> None:
    executor = Executor()
    feed(executor, read("a"), read("b"), finish_event("a", ok()), write("c"))
    executor.handle(read("d", outcome=unknown("Nope")))  # completed, but waits behind "b"
    actions = executor.handle(DiscardRequested("r"))
    assert actions == [
        CancelTool("b", CancelReason.DISCARD, 1),
        EmitDiscarded("r", 1, ("b", "c", "d")),
    ]
    assert not executor.turn_open
    assert not executor.is_live(1, "b")
    assert finish(executor, "b", stopped("partial")) == []


def test_next_add_after_discard_opens_a_new_turn() -> None:
    executor = Executor()
    feed(executor, read("a"), finish_event("a", ok()), DiscardRequested())
    assert executor.handle(read("a")) == [StartTool("a", "Read", 2, {})]
    assert executor.turn == 2
    assert written(finish(executor, "a")) == ["a"]


def test_discarded_running_tool_keeps_its_slot_until_it_reports_finished() -> None:
    executor = Executor()
    feed(executor, read("a"), DiscardRequested())
    assert executor.state_of("a") is None  # gone from the (closed) turn
    # The next turn's unsafe tool would overlap the dying "a"; a safe one may run beside it.
    assert started(feed(executor, write("b"))) == []
    assert not executor.idle
    assert finish(executor, "a", stopped(), turn=1) == [StartTool("b", "Write", 2, {})]


def test_discarded_unsafe_tool_still_runs_alone() -> None:
    executor = Executor()
    feed(executor, write("a"), DiscardRequested())
    assert started(feed(executor, read("b"), write("c"))) == []
    assert started(finish(executor, "a", stopped(), turn=1)) == ["b"]


def test_discarded_running_tool_counts_against_max_concurrency() -> None:
    executor = Executor(max_concurrency=1)
    feed(executor, read("a"), DiscardRequested())
    assert started(executor.handle(read("b"))) == []
    assert started(finish(executor, "a", ok(), turn=1)) == ["b"]


@pytest.mark.parametrize("zombie_first", [True, False])
def test_reused_id_after_discard_is_told_apart_by_the_turn_it_started_in(
    zombie_first: bool,
) -> None:
    executor = Executor()
    feed(executor, read("a"), DiscardRequested())
    assert executor.handle(read("a")) == [StartTool("a", "Read", 2, {})]  # beside the zombie
    zombie, live = ToolFinished("a", stopped(), 1), ToolFinished("a", ok(), 2)
    answers = [executor.handle(e) for e in ((zombie, live) if zombie_first else (live, zombie))]
    assert answers[0 if zombie_first else 1] == []
    assert answers[1 if zombie_first else 0] == [EmitResult("a", 2, ok())]
    assert executor.handle(DrainRequested()) == [EmitDrained(None, 2, {"success": 1})]
    assert executor.idle


def test_executor_is_idle_only_once_discarded_tools_are_gone() -> None:
    executor = Executor()
    idle = [executor.idle]
    for event in (read("a"), DiscardRequested(), finish_event("a", stopped())):
        executor.handle(event)
        idle.append(executor.idle)
    assert idle == [True, False, False, True]


def test_discard_with_no_open_turn_lists_nothing() -> None:
    executor = Executor()
    assert executor.handle(DiscardRequested("r")) == [EmitDiscarded("r", None, ())]


def test_tool_finished_twice_after_discard_is_a_contract_error() -> None:
    executor = Executor()
    feed(executor, read("a"), DiscardRequested(), finish_event("a", ok()))
    with pytest.raises(ExecutorError):
        finish(executor, "a")


# ------------------------------------------------------------------------------ drain


def test_drain_with_no_open_turn_answers_at_once() -> None:
    executor = Executor()
    assert executor.handle(DrainRequested("r")) == [EmitDrained("r", None, {})]


def test_drain_with_no_open_turn_does_not_end_the_next_turn() -> None:
    executor = Executor()
    feed(executor, DrainRequested("early"), read("a"), read("b"))
    actions = finish(executor, "a")
    assert only(actions, EmitDrained) == []
    assert executor.turn_open
    assert only(finish(executor, "b"), EmitDrained) == []


def test_drain_waits_for_every_result_then_ends_the_turn() -> None:
    executor = Executor()
    feed(executor, read("a"), read("b"), read("x", outcome=unknown("Nope")))
    assert executor.handle(DrainRequested("r")) == []
    assert only(finish(executor, "a"), EmitDrained) == []
    actions = finish(executor, "b", failed())
    assert actions == [
        EmitResult("b", 1, failed()),
        EmitResult("x", 1, unknown("Nope")),
        EmitDrained("r", 1, {"success": 1, "error": 1, "unknown_tool": 1}),
    ]
    assert not executor.turn_open
    assert started(executor.handle(read("a"))) == ["a"]  # the id is free again
    assert executor.turn == 2


def test_drain_after_every_result_is_written_answers_at_once() -> None:
    executor = Executor()
    feed(executor, read("a"), finish_event("a", ok()))
    assert executor.handle(DrainRequested()) == [EmitDrained(None, 1, {"success": 1})]


def test_every_waiting_drain_is_answered_when_the_turn_is_discarded_or_ended() -> None:
    executor = Executor()
    feed(executor, read("a"), DrainRequested("r1"))
    # A second drain arrives after the first: it waits behind it, and finds no turn open.
    assert executor.handle(DrainRequested("r2")) == []
    assert only(finish(executor, "a"), EmitDrained) == [
        EmitDrained("r1", 1, {"success": 1}),
        EmitDrained("r2", None, {}),
    ]


def test_waiting_drain_is_answered_when_the_turn_is_discarded() -> None:
    executor = Executor()
    feed(executor, read("a"), read("b"), finish_event("a", ok()), DrainRequested("r"))
    assert executor.handle(DiscardRequested("d")) == [
        CancelTool("b", CancelReason.DISCARD, 1),
        EmitDiscarded("d", 1, ("b",)),
        EmitDrained("r", 1, {"success": 1}),
    ]
    assert started(executor.handle(read("c"))) == ["c"]  # the old drain is gone
    assert only(finish(executor, "c"), EmitDrained) == []


# ------------------------------------------------------------ turns in input order (pipe)
# SPEC 4 / docs/protocol.md 4: the output for any input equals the output when the host waits
# for each ``drained`` before sending more, so commands after a drain wait for that turn.


def test_tool_added_after_a_drain_waits_for_that_turn_and_opens_the_next() -> None:
    executor = Executor()
    feed(executor, read("a"), DrainRequested("r"))
    assert executor.handle(read("b")) == []
    assert executor.held == 1 and executor.turn_tool_ids() == ("a",)
    assert finish(executor, "a") == [
        EmitResult("a", 1, ok()),
        EmitDrained("r", 1, {"success": 1}),
        StartTool("b", "Read", 2, {}),
    ]
    assert executor.held == 0 and executor.turn == 2


def test_held_turn_starts_with_the_context_the_previous_turn_left() -> None:
    executor = Executor(context={"cwd": "/w"})
    feed(executor, bash("a", "cd sub"), DrainRequested(), bash("b", "pwd", safe=True))
    moved = Outcome("", False, "success", context_update={"cwd": "/w/sub"})
    assert only(finish(executor, "a", moved), StartTool) == [
        StartTool("b", "Bash", 2, {"cwd": "/w/sub"})
    ]


def test_bash_error_never_cancels_a_tool_of_the_next_turn_in_the_input() -> None:
    executor = Executor()
    feed(executor, bash("a", "false"), DrainRequested(), bash("b", "echo two"))
    actions = finish(executor, "a", failed())
    assert cancels(actions) == [] and started(actions) == ["b"]
    assert results(finish(executor, "b")) == {"b": ok()}


def test_interrupt_after_a_drain_reaches_the_draining_turn_at_once() -> None:
    # An interactive host sends drain at message end, then interrupt when the user hits Esc.
    executor = Executor()
    feed(executor, bash("a"), DrainRequested("r"))
    actions = executor.handle(InterruptRequested("interrupt", "i"))
    assert actions == [
        CancelTool("a", CancelReason.INTERRUPT, 1),
        EmitInterrupted("i", 1, "interrupt", ("a",)),
    ]


def test_interrupt_after_a_held_add_waits_with_it_and_applies_to_the_next_turn() -> None:
    executor = Executor()
    feed(executor, bash("a"), DrainRequested("r"), bash("b"))
    assert executor.handle(InterruptRequested("interrupt", "i")) == []
    assert finish(executor, "a") == [
        EmitResult("a", 1, ok()),
        EmitDrained("r", 1, {"success": 1}),
        StartTool("b", "Bash", 2, {}),
        CancelTool("b", CancelReason.INTERRUPT, 2),
        EmitInterrupted("i", 2, "interrupt", ("b",)),
    ]


def test_interrupt_after_the_turn_ended_is_a_no_op() -> None:
    executor = Executor()
    feed(executor, bash("a"), DrainRequested("r"), finish_event("a", ok()))
    assert executor.handle(InterruptRequested("abort", "i")) == [
        EmitInterrupted("i", None, "abort", ())
    ]


def test_discard_after_a_drain_discards_the_draining_turn() -> None:
    executor = Executor()
    feed(executor, read("a"), DrainRequested("r"))
    assert executor.handle(DiscardRequested("d")) == [
        CancelTool("a", CancelReason.DISCARD, 1),
        EmitDiscarded("d", 1, ("a",)),
        EmitDrained("r", 1, {}),
    ]
    assert started(executor.handle(read("b"))) == ["b"]


def test_discard_after_a_held_add_discards_the_turn_it_follows() -> None:
    executor = Executor()
    feed(executor, read("a"), DrainRequested("r"), read("b"))
    assert executor.handle(DiscardRequested("d")) == []
    assert finish(executor, "a") == [
        EmitResult("a", 1, ok()),
        EmitDrained("r", 1, {"success": 1}),
        StartTool("b", "Read", 2, {}),
        CancelTool("b", CancelReason.DISCARD, 2),
        EmitDiscarded("d", 2, ("b",)),
    ]


def test_a_turn_ending_at_once_lets_the_next_held_turn_replay_in_the_same_answer() -> None:
    executor = Executor()
    feed(executor, read("a"), DrainRequested("r1"))
    feed(executor, read("x", outcome=unknown("Nope")), DrainRequested("r2"), read("c"))
    assert executor.held == 3
    assert finish(executor, "a") == [
        EmitResult("a", 1, ok()),
        EmitDrained("r1", 1, {"success": 1}),
        EmitResult("x", 2, unknown("Nope")),
        EmitDrained("r2", 2, {"unknown_tool": 1}),
        StartTool("c", "Read", 3, {}),
    ]


def test_duplicate_ids_are_judged_against_the_turn_the_add_joins() -> None:
    executor = Executor()
    feed(executor, read("a"), DrainRequested())
    feed(executor, ToolAdded("a", "Read", True, request_id="q", line=3))
    feed(executor, ToolAdded("a", "Read", True, request_id="q2", line=4))
    actions = finish(executor, "a", turn=1)
    assert started(actions) == ["a"]  # turn 2's "a" is not a duplicate of turn 1's
    assert only(actions, EmitDuplicate) == [EmitDuplicate("a", 2, "q2", 4)]


def test_end_of_input_finishes_held_turns_then_drains_the_last() -> None:
    executor = Executor()
    feed(executor, read("a"), DrainRequested("r"), read("b"), InputClosed())
    assert not executor.finished
    assert only(finish(executor, "a"), StartTool) == [StartTool("b", "Read", 2, {})]
    assert only(finish(executor, "b"), EmitDrained) == [EmitDrained(None, 2, {"success": 1})]
    assert executor.finished


def test_end_of_input_drains_the_open_turn_and_waits_for_zombies() -> None:
    executor = Executor()
    feed(executor, read("a"), DiscardRequested(), read("b"), InputClosed())
    assert only(finish(executor, "b"), EmitDrained) == [EmitDrained(None, 2, {"success": 1})]
    assert not executor.finished  # turn 1's "a" is still dying
    assert finish(executor, "a", stopped(), turn=1) == []
    assert executor.finished


def test_abort_raised_inside_a_turn_never_waits_and_never_reaches_the_next_turn() -> None:
    executor = Executor()
    feed(executor, bash("a"), DrainRequested(), bash("b"))
    # A hook of "a" stops the turn: applied at once although a command is held.
    actions = executor.handle(InterruptRequested("abort", "p1", turn=1))
    assert actions == [
        CancelTool("a", CancelReason.ABORT, 1),
        EmitInterrupted("p1", 1, "abort", ("a",)),
    ]
    assert started(finish(executor, "a", stopped())) == ["b"]
    stale = executor.handle(InterruptRequested("abort", "p0", turn=1))
    assert stale == [EmitInterrupted("p0", None, "abort", ())]


def test_shutdown_releases_held_commands_so_every_add_gets_a_result() -> None:
    executor = Executor()
    feed(executor, read("a"), DrainRequested("r"), read("b"), DrainRequested("r2"))
    assert cancels(executor.handle(ShutdownRequested())) == [("a", CancelReason.SHUTDOWN)]
    assert executor.held == 0
    actions = finish(executor, "a", stopped())
    assert written(actions) == ["a", "b"]
    assert results(actions)["b"] == Outcome(SHUTDOWN_MESSAGE, True, "rejected", cancelled=True)
    assert [d.request_id for d in only(actions, EmitDrained)] == ["r", "r2"]


def test_host_gone_discards_the_open_turn_and_drops_held_commands() -> None:
    executor = Executor()
    feed(executor, read("a"), DrainRequested("r"), read("b"))
    actions = executor.handle(ShutdownRequested(discard=True))
    assert actions == [CancelTool("a", CancelReason.DISCARD, 1)]
    assert executor.held == 0
    assert finish(executor, "a", stopped(), turn=1) == []
    assert executor.idle


# -------------------------------------------------------------------------- duplicates


def test_duplicate_id_is_refused_and_the_first_tool_is_unaffected() -> None:
    executor = Executor()
    executor.handle(write("a"))
    assert executor.handle(ToolAdded("a", "Bash", safe=True)) == [EmitDuplicate("a", 1)]
    assert executor.state_of("a") is State.EXECUTING
    feed(executor, finish_event("a", ok("first")))
    assert executor.handle(read("a")) == [EmitDuplicate("a", 1)]  # even once written
    assert executor.handle(DrainRequested()) == [EmitDrained(None, 1, {"success": 1})]


def test_same_id_in_a_later_turn_is_not_a_duplicate() -> None:
    executor = Executor()
    feed(executor, read("a"), finish_event("a", ok()), DrainRequested())
    assert executor.handle(read("a")) == [StartTool("a", "Read", 2, {})]


# ---------------------------------------------------------------------------- context


def test_context_update_of_unsafe_tool_is_seen_by_later_tools() -> None:
    executor = Executor(context={"cwd": "/w", "env": "x"})
    (first,) = only(feed(executor, write("a"), read("b")), StartTool)
    assert first.context == {"cwd": "/w", "env": "x"}
    moved = Outcome("", False, "success", context_update={"cwd": "/w/sub"})
    (second,) = only(finish(executor, "a", moved), StartTool)
    assert second.context == {"cwd": "/w/sub", "env": "x"}
    assert first.context == {"cwd": "/w", "env": "x"}  # actions already given never change
    assert executor.context == {"cwd": "/w/sub", "env": "x"}


@pytest.mark.parametrize(
    ("tool", "outcome"),
    [
        pytest.param(
            read("a"), Outcome("", False, "success", context_update={"cwd": "/x"}), id="safe"
        ),
        pytest.param(
            bash("a"),
            Outcome("", True, "error", cancelled=True, context_update={"cwd": "/x"}),
            id="cancelled",
        ),
    ],
)
def test_context_update_is_ignored_from_safe_or_cancelled_tools(
    tool: ToolAdded, outcome: Outcome
) -> None:
    executor = Executor(context={"cwd": "/w"})
    feed(executor, tool, InterruptRequested("interrupt"), finish_event("a", outcome))
    (start,) = only(executor.handle(write("b")), StartTool)
    assert start.context == {"cwd": "/w"}


def test_context_update_of_a_tool_that_never_ran_is_ignored() -> None:
    executor = Executor()
    never_ran = Outcome("bad", True, "invalid_input", context_update={"cwd": "/x"})
    actions = feed(executor, write("a", outcome=never_ran), write("b"))
    assert only(actions, StartTool) == [StartTool("b", "Write", 1, {})]


# ---------------------------------------------------------------------------- shutdown


def test_shutdown_cancels_everything_and_still_writes_results() -> None:
    executor = Executor()
    feed(executor, read("a"), write("b"))
    actions = executor.handle(ShutdownRequested())
    assert actions == [CancelTool("a", CancelReason.SHUTDOWN, 1)]
    actions = finish(executor, "a", stopped("so far"))
    assert started(actions) == []
    assert results(actions) == {
        "a": Outcome(
            f"{SHUTDOWN_MESSAGE}\nOutput before it stopped:\nso far",
            True,
            "interrupted",
            cancelled=True,
        ),
        "b": Outcome(SHUTDOWN_MESSAGE, True, "rejected", cancelled=True),
    }


def test_tools_added_after_shutdown_are_rejected() -> None:
    executor = Executor()
    assert executor.handle(ShutdownRequested()) == []
    actions = executor.handle(read("a"))
    assert results(actions) == {"a": Outcome(SHUTDOWN_MESSAGE, True, "rejected", cancelled=True)}
    assert started(actions) == []


# ---------------------------------------------------------------------- contract errors


@pytest.mark.parametrize(
    "setup",
    [
        pytest.param([], id="unknown-id"),
        pytest.param([write("a"), read("b")], id="still-queued"),
        pytest.param([read("b", outcome=unknown("Nope"))], id="never-ran"),
        pytest.param([read("b"), finish_event("b", ok())], id="finished-twice"),
    ],
)
def test_finish_of_a_tool_that_is_not_running_is_a_contract_error(setup: list[Event]) -> None:
    executor = Executor()
    feed(executor, *setup)
    with pytest.raises(ExecutorError, match="not running"):
        finish(executor, "b")


def test_drain_answered_by_discard_counts_only_written_results() -> None:
    executor = Executor()
    feed(executor, read("a"), read("b"), finish_event("b", ok()), DrainRequested("r"))
    drained = only(executor.handle(DiscardRequested()), EmitDrained)
    assert drained == [EmitDrained("r", 1, {})]  # "b" finished but was never written


def test_core_statuses_are_the_wire_statuses() -> None:
    # The core may not import the protocol package; the two closed sets must still agree.
    from typing import get_args

    from stdio_executor.core import Status
    from stdio_executor.protocol.messages import Status as WireStatus

    assert get_args(Status) == get_args(WireStatus)
