"""The call runner: performs a ``StartTool`` and reports how the call ended.

Owns: one call from ``tool_started`` to its ``Finished`` inbox item: the permission gate and
hooks around it, the synchronous fast path for calls that finish in microseconds, one task
and one cancel scope per call that must wait, the partial output of a cancelled call, and
the ``Outcome`` with its timing. The table of running calls (turn, id) -> cancel scope.
Must not: decide whether or when a call starts or is cancelled (the core does), write
results (the loop writes what the core answers), or let a tool's exception escape: it
becomes the call's error result through ``failures.crash_outcome``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anyio
import anyio.abc
import msgspec

from ..core import Outcome, StartTool
from ..permissions.gate import Allow, CallInfo, Deny, Gate, Verdict
from ..protocol import Progress, ToolStarted
from ..protocol.messages import Event
from ..tools.base import InputError, Tool, ToolContext, ToolOutcome
from ..tools.session import Session
from .admission import Call
from .failures import crash_outcome
from .inbox import Finished

__all__ = ["CallRunner"]


class _Running(msgspec.Struct):
    tool: Tool
    scope: anyio.CancelScope


def _with_notes(result: ToolOutcome, notes: tuple[str, ...]) -> ToolOutcome:
    """Append gate notes (hook context) for the model to a text result."""
    extra = "\n".join(notes)
    if isinstance(result.content, str):
        return msgspec.structs.replace(result, content=f"{result.content}\n{extra}")
    return msgspec.structs.replace(
        result, content=[*result.content, {"type": "text", "text": extra}]
    )


def _ms_since(started: float) -> float:
    # round(x, 3) formats the float as decimal digits: a microsecond per call.
    return round((time.monotonic() - started) * 1e6) / 1000


def _outcome(result: ToolOutcome, started: float) -> Outcome:
    return Outcome(
        result.content,
        result.is_error,
        result.final_status,
        context_update=result.context_update,
        duration_ms=_ms_since(started),
        exit_code=result.exit_code,
        truncated=result.truncated,
        output_path=result.output_path,
        output_bytes=result.output_bytes,
    )


class CallRunner:
    def __init__(
        self,
        *,
        gate: Gate,
        session: Session,
        workspace: str,
        emit: Callable[[Event], None],
        emit_now: Callable[[Event], None],
        finished: Callable[[Finished], None],
        is_live: Callable[[int, str], bool],
        turn_tool_ids: Callable[[], tuple[str, ...]],
    ) -> None:
        self.gate = gate
        self.session = session
        self.workspace = workspace
        self._emit = emit
        self._emit_now = emit_now
        self._finished = finished
        self._is_live = is_live
        self._turn_tool_ids = turn_tool_ids
        self._running: dict[tuple[int, str], _Running] = {}
        self._tg: anyio.abc.TaskGroup | None = None

    def attach(self, tg: anyio.abc.TaskGroup) -> None:
        """The task group the calls' tasks live in (as long as the daemon)."""
        self._tg = tg

    @property
    def running(self) -> int:
        """Calls with a task still going (the fast path never has one)."""
        return len(self._running)

    def tool_of(self, turn: int, tool_use_id: str) -> Tool | None:
        running = self._running.get((turn, tool_use_id))
        return running.tool if running is not None else None

    def cancel(self, turn: int, tool_use_id: str, reason: str) -> None:
        running = self._running.get((turn, tool_use_id))
        if running is not None:
            running.scope.cancel(reason)

    def cancel_all(self, reason: str) -> None:
        for running in self._running.values():
            running.scope.cancel(reason)

    # ----------------------------------------------------------------------- a call

    def start(self, action: StartTool) -> None:
        call = action.payload
        assert isinstance(call, Call), "the core hands back the payload admission gave it"
        tool, value = call.tool, call.value
        turn, tool_use_id = action.turn, action.tool_use_id
        self._emit(ToolStarted(tool_use_id=tool_use_id, name=action.name, turn=turn))
        cwd = action.context.get("cwd", self.workspace)
        ctx = ToolContext(
            tool_use_id=tool_use_id,
            cwd=cwd,
            session=self.session,
            progress=self._progress_sink(turn, tool_use_id),
            notify=self._notify_sink(turn, tool_use_id),
        )
        info = CallInfo(tool_use_id, tool, call.raw, value, turn, cwd, self._turn_tool_ids)
        started = time.monotonic()
        verdict = self.gate.quick_verdict(info)
        if isinstance(verdict, Deny):
            outcome = Outcome(verdict.message, True, "denied", duration_ms=_ms_since(started))
            self._finished(Finished(turn, tool_use_id, outcome))
            return
        if (
            isinstance(verdict, Allow)
            and verdict.updated_input is None
            and not verdict.notes
            and not self.gate.needs_after_run(info)
        ):
            ctx.confine = verdict.confine
            try:
                fast = tool.run_inline(value, ctx)
            except Exception as exc:  # a bug in the tool's fast path: still one result
                outcome = crash_outcome(exc, tool.spec.name, _ms_since(started))
                self._finished(Finished(turn, tool_use_id, outcome))
                return
            if fast is not None:
                self._finished(Finished(turn, tool_use_id, _outcome(fast, started)))
                return
            if verdict.confine is not None:
                # The file may have been outside the roots (the tool does not say why it
                # declined): the call is judged again in its task, where a path outside
                # asks or is denied as the policy says, not refused by the tool.
                verdict = None
        scope = anyio.CancelScope()
        self._running[(turn, tool_use_id)] = _Running(tool, scope)
        assert self._tg is not None
        self._tg.start_soon(self._run, info, ctx, scope, started, verdict)

    async def _run(
        self,
        call: CallInfo,
        ctx: ToolContext,
        scope: anyio.CancelScope,
        started: float,
        verdict: Verdict | None,
    ) -> None:
        outcome: Outcome | None = None
        with scope:
            try:
                outcome = await self._gated_run(call, ctx, started, verdict)
            except Exception as exc:  # a bug in the tool: the model gets an error result
                outcome = crash_outcome(exc, call.tool.spec.name, _ms_since(started))
        if outcome is None:  # cancelled: report what the tool had produced so far
            partial = ctx.sink.collect() if ctx.sink is not None else None
            outcome = Outcome(
                partial.text if partial else "",
                True,
                "interrupted",
                cancelled=True,
                duration_ms=_ms_since(started),
            )
            if partial is not None:
                outcome.truncated = partial.truncated
                outcome.output_path = partial.path
                outcome.output_bytes = partial.total_bytes
        if ctx.sink is not None:
            # A cancelled or crashed tool never reached its own close: the spill file's fd
            # would leak for the daemon's lifetime.
            ctx.sink.close()
        self._running.pop((call.turn, ctx.tool_use_id), None)
        self._finished(Finished(call.turn, ctx.tool_use_id, outcome))

    async def _gated_run(
        self, call: CallInfo, ctx: ToolContext, started: float, verdict: Verdict | None
    ) -> Outcome:
        """Permission check and PreToolUse hooks, the run, then PostToolUse hooks."""
        if verdict is None:
            verdict = await self.gate.before_run(call)
        if isinstance(verdict, Deny):
            return Outcome(verdict.message, True, "denied", duration_ms=_ms_since(started))
        ctx.confine = verdict.confine
        value = call.value
        if verdict.updated_input is not None:
            try:
                value = call.tool.validate(verdict.updated_input)
            except InputError as exc:
                return Outcome(str(exc), True, "invalid_input", duration_ms=_ms_since(started))
            call = msgspec.structs.replace(call, raw_input=verdict.updated_input, value=value)
        result = await call.tool.run(value, ctx)
        if verdict.notes:
            result = _with_notes(result, verdict.notes)
        if self.gate.needs_after_run(call):
            result = await self.gate.after_run(call, result)
        return _outcome(result, started)

    def _progress_sink(self, turn: int, tool_use_id: str) -> Callable[[dict[str, Any]], None]:
        def progress(data: dict[str, Any]) -> None:
            # Output of a discarded turn must never reach the host.
            if self._is_live(turn, tool_use_id):
                self._emit_now(Progress(tool_use_id=tool_use_id, data=data))

        return progress

    def _notify_sink(self, turn: int, tool_use_id: str) -> Callable[[Event], None]:
        def notify(event: Event) -> None:
            # An event a tool announces (TodoWrite's todos): like progress, never for a
            # discarded turn.
            if self._is_live(turn, tool_use_id):
                self._emit_now(event)

        return notify
