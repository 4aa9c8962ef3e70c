"""The action-to-event mapping: what the host reads for each thing the core decided.

Owns: turning the core's ``Emit*`` actions into wire events (``tool_result`` with its
``meta``, ``drained``, ``discarded``, ``interrupted``, the ``duplicate_tool_use_id`` error).
Must not: decide anything (the core did), write (the loop does), or keep state.
"""

from __future__ import annotations

from ..core import EmitDiscarded, EmitDrained, EmitDuplicate, EmitInterrupted, EmitResult
from ..protocol import Discarded, Drained, ErrorEvent, Interrupted, ResultMeta, ToolResult
from ..protocol.messages import Event

__all__ = ["Announcement", "event_for", "result_event"]

Announcement = EmitResult | EmitDrained | EmitDiscarded | EmitInterrupted | EmitDuplicate


def result_event(action: EmitResult) -> ToolResult:
    outcome = action.outcome
    return ToolResult(
        tool_use_id=action.tool_use_id,
        content=outcome.content,
        is_error=outcome.is_error,
        meta=ResultMeta(
            status=outcome.status,
            turn=action.turn,
            duration_ms=outcome.duration_ms,
            exit_code=outcome.exit_code,
            truncated=outcome.truncated,
            output_path=outcome.output_path,
            output_bytes=outcome.output_bytes,
        ),
    )


def event_for(action: Announcement) -> Event:
    if isinstance(action, EmitResult):
        return result_event(action)
    if isinstance(action, EmitDrained):
        by_status = dict(action.by_status)
        return Drained(
            request_id=action.request_id,
            turn=action.turn,
            results=sum(by_status.values()),
            errors=sum(n for status, n in by_status.items() if status != "success"),
            by_status=by_status,
        )
    if isinstance(action, EmitDiscarded):
        return Discarded(
            tool_use_ids=list(action.tool_use_ids),
            request_id=action.request_id,
            turn=action.turn,
        )
    if isinstance(action, EmitInterrupted):
        return Interrupted(
            reason=action.reason,
            tool_use_ids=list(action.tool_use_ids),
            request_id=action.request_id,
            turn=action.turn,
        )
    return ErrorEvent(
        code="duplicate_tool_use_id",
        message=(
            f"tool_use id {action.tool_use_id!r} is already in turn {action.turn}; "
            "this add_tool was ignored"
        ),
        line=action.line,
        request_id=action.request_id,
        tool_use_id=action.tool_use_id,
    )
