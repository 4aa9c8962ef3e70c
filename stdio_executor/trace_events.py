"""``stdio-executor timeline JOURNAL --format trace``: a session as Chrome trace-event JSON.

Owns: turning the timeline's spans and markers into the Trace Event Format's JSON Object
Format, which Perfetto (ui.perfetto.dev) and chrome://tracing open.
Must not: be imported by the daemon, or read journals itself (``timeline`` does).

The layout, in one process (the daemon's pid):

    thread 0 "host"            add_tool slices (flow starts), interrupt / discard / drained
    thread n "<id> <tool>: …"  queued ─ executing ─ waiting for order ─ tool_result
                                          progress instants       (flow end)

One thread per tool call, in ``add_tool`` order, so every call has its own track. A flow
arrow runs from the host's ``add_tool`` to the tool's ``tool_result``. The format binds a
flow event to a slice: a flow start to the slice enclosing it on its thread, a flow end with
``"bp": "e"`` to the slice enclosing it. Commands and results are instants in the journal,
so each is drawn as a slice of ``_MARK_US`` with its flow event in the middle.

Times: ``ts`` and ``dur`` are microseconds (the format's unit) since the journal session
began, with sub-microsecond precision kept as a fraction.
"""

from __future__ import annotations

import json
from typing import Any

from .timeline import Marker, Span

__all__ = ["render_trace"]

_HOST_TID = 0
# Commands and results happen at an instant; a slice this long (1 µs) carries their flow
# events without hiding the phases around them at any zoom level a person uses.
_MARK_US = 1.0
_FLOW_CAT = "tool_call"
_FLOW_NAME = "add_tool → tool_result"


def _us(seconds: float) -> float:
    return round(seconds * 1_000_000, 3)


def render_trace(
    spans: list[Span],
    markers: list[Marker],
    session_end: float,
    pid: int,
    title: str,
) -> str:
    """The session as a trace-event JSON document (the JSON Object Format)."""
    events: list[dict[str, Any]] = [
        _meta("process_name", pid, _HOST_TID, {"name": title}),
        _meta("thread_name", pid, _HOST_TID, {"name": "host"}),
        _meta("thread_sort_index", pid, _HOST_TID, {"sort_index": 0}),
    ]
    timed: list[dict[str, Any]] = []
    host_free = 0.0  # add_tool slices on the host's thread must not overlap, or flows bind
    for n, span in enumerate(spans, 1):
        tid = n
        label = f"{span.tool_use_id} {span.name}" + (f": {span.summary}" if span.summary else "")
        events.append(_meta("thread_name", pid, tid, {"name": label[:120]}))
        events.append(_meta("thread_sort_index", pid, tid, {"sort_index": n}))
        host_at = max(_us(span.added), host_free)
        host_free = round(host_at + _MARK_US, 3)
        timed += _tool_events(span, session_end, pid, tid, host_at, flow_id=n)
    for marker in markers:
        timed.append(
            {
                "name": marker.label,
                "cat": marker.kind,
                "ph": "i",
                "s": "p",  # drawn across the whole process, like the SVG's vertical lines
                "ts": _us(marker.t),
                "pid": pid,
                "tid": _HOST_TID,
            }
        )
    # Viewers sort by themselves; sorted output is easier to read and to diff.
    timed.sort(key=lambda e: (e["ts"], e["tid"]))
    document = {
        "traceEvents": events + timed,
        "displayTimeUnit": "ms",
        "otherData": {"source": "stdio-executor timeline", "title": title},
    }
    return json.dumps(document, ensure_ascii=False, indent=None) + "\n"


def _meta(name: str, pid: int, tid: int, args: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "ph": "M", "pid": pid, "tid": tid, "args": args}


def _slice(
    name: str, cat: str, start: float, end: float, pid: int, tid: int, args: dict[str, Any]
) -> dict[str, Any]:
    ts = _us(start)
    return {
        "name": name,
        "cat": cat,
        "ph": "X",
        "ts": ts,
        "dur": max(round(_us(end) - ts, 3), 0.0),
        "pid": pid,
        "tid": tid,
        "args": args,
    }


def _tool_events(
    span: Span, session_end: float, pid: int, tid: int, host_at: float, flow_id: int
) -> list[dict[str, Any]]:
    """The tool's thread, its add_tool slice on the host's thread at ``host_at`` (µs), and
    the flow between them."""
    end = span.end(session_end)
    details: dict[str, Any] = {
        "tool_use_id": span.tool_use_id,
        "tool": span.name,
        "status": span.status,
        "turn": span.turn,
    }
    if span.summary:
        details["input"] = span.summary
    out: list[dict[str, Any]] = []
    queued_until = span.started if span.started is not None else end
    out.append(_slice("queued", "queued", span.added, queued_until, pid, tid, details))
    if span.started is not None:
        finished = min(span.finished if span.finished is not None else end, end)
        executing = dict(details)
        if span.duration is not None:
            executing["duration_ms"] = round(span.duration * 1000, 3)
        out.append(
            _slice(
                f"{span.name} ({span.status})",
                "executing",
                span.started,
                finished,
                pid,
                tid,
                executing,
            )
        )
        if span.result is not None and span.result > finished:
            out.append(
                _slice("waiting for order", "waiting", finished, span.result, pid, tid, details)
            )
        for k, (t, data) in enumerate(zip(span.progress, span.progress_data, strict=True), 1):
            out.append(
                {
                    "name": "progress",
                    "cat": "progress",
                    "ph": "i",
                    "s": "t",
                    "ts": _us(t),
                    "pid": pid,
                    "tid": tid,
                    "args": {"n": k, **data},
                }
            )
    # The host's add_tool and the tool's result, each a short slice carrying one flow end.
    out.append(
        {
            "name": f"add_tool {span.tool_use_id}",
            "cat": "command",
            "ph": "X",
            "ts": host_at,
            "dur": _MARK_US,
            "pid": pid,
            "tid": _HOST_TID,
            "args": details,
        }
    )
    if span.result is None:
        return out
    result = _us(span.result)
    out.append(
        {
            "name": f"tool_result ({span.status})",
            "cat": "result",
            "ph": "X",
            "ts": result,
            "dur": _MARK_US,
            "pid": pid,
            "tid": tid,
            "args": details,
        }
    )
    flow = {"name": _FLOW_NAME, "cat": _FLOW_CAT, "id": flow_id, "pid": pid}
    out.append({**flow, "ph": "s", "ts": round(host_at + _MARK_US / 2, 3), "tid": _HOST_TID})
    out.append({**flow, "ph": "f", "bp": "e", "ts": round(result + _MARK_US / 2, 3), "tid": tid})
    return out
