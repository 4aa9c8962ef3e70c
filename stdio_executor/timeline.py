"""``stdio-executor timeline JOURNAL -o timeline.svg``: a journal drawn as one bar per tool.

Owns: turning a journaled session into per-tool spans (added, started, finished, result
written, progress, status) and drawing them as a self-contained SVG, with no dependencies
(``--format trace`` hands the same spans to ``trace_events``).
Must not: be imported by the daemon.

Each row is one tool call, in the order the host added them:

    ┄┄┄┄┄┄┄┄████████▮▮████────────◆
    queued  executing (progress   waiting for  result
            ticks, coloured by    its place in written
            status)               result order

"finished" is the start plus the result's ``duration_ms``; the thin line after it is the time
a finished result waited for earlier tools (result order). Vertical lines mark ``interrupt``,
``discard`` and the end of each turn (``drained``).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from html import escape
from typing import Any

from .display import visible
from .journal import Session, last_session, read_sessions

__all__ = ["Span", "input_summary", "render_svg", "run", "spans_of"]


def _text(text: str) -> str:
    """SVG text: XML forbids most control characters, and a tool's output may hold any."""
    return escape(visible(text))


STATUS_COLORS = {
    "success": "#2e9d57",
    "error": "#d64541",
    "timed_out": "#e67e22",
    "interrupted": "#8e44ad",
    "rejected": "#b4a7d6",
    "sibling_cancelled": "#e17ca8",
    "denied": "#a0522d",
    "invalid_input": "#d4ac0d",
    "unknown_tool": "#b7950b",
    "discarded": "#95a5a6",
    "unfinished": "#34495e",
}
_MARKER_COLORS = {"interrupt": "#e67e22", "discard": "#7f8c8d", "drained": "#2c3e50"}


@dataclass
class Span:
    tool_use_id: str
    name: str
    summary: str
    added: float
    line: int | None = None
    turn: int | None = None
    started: float | None = None
    duration: float | None = None
    result: float | None = None
    status: str = "unfinished"
    progress: list[float] = field(default_factory=list)
    progress_data: list[dict[str, Any]] = field(default_factory=list)  # beside ``progress``

    @property
    def finished(self) -> float | None:
        if self.started is None or self.duration is None:
            return None
        return self.started + self.duration

    def end(self, session_end: float) -> float:
        return self.result if self.result is not None else session_end


@dataclass
class Marker:
    t: float
    kind: str
    label: str


def input_summary(name: str, raw: Any) -> str:
    if not isinstance(raw, dict):
        return ""
    for key in ("command", "file_path", "pattern", "url", "query"):
        value = raw.get(key)
        if isinstance(value, str):
            return " ".join(value.split())
    return ""


def _progress_data(data: Any) -> dict[str, Any]:
    """A progress event's data, its output text shortened: enough to recognise it."""
    if not isinstance(data, dict):
        return {}
    shown: dict[str, Any] = dict(data)
    text = shown.get("text")
    if isinstance(text, str) and len(text) > 500:
        shown["text"] = text[:500] + "…"
    return shown


def spans_of(session: Session) -> tuple[list[Span], list[Marker], float]:
    """The tools of a session, the markers, and the time of the session's last record."""
    spans: list[Span] = []
    open_: dict[str, Span] = {}
    markers: list[Marker] = []
    end = 0.0
    for record in session.records:
        end = max(end, record.t)
        msg = record.msg
        if not isinstance(msg, dict):
            continue
        kind = msg.get("type")
        if record.dir == "in":
            if kind == "add_tool" and isinstance(msg.get("tool_use"), dict):
                use = msg["tool_use"]
                tool_id = str(use.get("id"))
                if tool_id not in open_:
                    name = str(use.get("name"))
                    span = Span(tool_id, name, input_summary(name, use.get("input")), record.t)
                    span.line = record.line
                    spans.append(span)
                    open_[tool_id] = span
            elif kind == "interrupt":
                reason = str(msg.get("reason", "abort"))
                markers.append(Marker(record.t, "interrupt", f"interrupt ({reason})"))
            elif kind == "discard":
                markers.append(Marker(record.t, "discard", "discard"))
            continue
        tool_id = str(msg.get("tool_use_id"))
        span_or_none = open_.get(tool_id)
        if kind == "tool_started" and span_or_none is not None:
            span_or_none.started = record.t
            span_or_none.turn = msg.get("turn")
            span_or_none.name = str(msg.get("name", span_or_none.name))
        elif kind == "progress" and span_or_none is not None:
            span_or_none.progress.append(record.t)
            span_or_none.progress_data.append(_progress_data(msg.get("data")))
        elif kind == "tool_result" and span_or_none is not None:
            meta: dict[str, Any] = msg["meta"] if isinstance(msg.get("meta"), dict) else {}
            span_or_none.result = record.t
            span_or_none.status = str(meta.get("status", "success"))
            span_or_none.turn = meta.get("turn", span_or_none.turn)
            duration = meta.get("duration_ms")
            if isinstance(duration, int | float) and span_or_none.started is not None:
                span_or_none.duration = duration / 1000
            del open_[tool_id]
        elif kind == "discarded":
            for gone in msg.get("tool_use_ids") or ():
                dropped = open_.pop(str(gone), None)
                if dropped is not None:
                    dropped.status = "discarded"
                    dropped.result = record.t
        elif kind == "drained" and msg.get("turn") is not None:
            markers.append(Marker(record.t, "drained", f"turn {msg['turn']} drained"))
        elif kind == "error" and msg.get("line") is not None:
            # A refused add_tool (duplicate id, invalid command) never becomes a tool.
            for span in list(open_.values()):
                if span.line == msg["line"] and span.started is None:
                    spans.remove(span)
                    del open_[span.tool_use_id]
    return spans, markers, end


# ------------------------------------------------------------------------------ drawing

_LEFT = 250
_RIGHT = 40
_TOP = 58
_ROW = 24
_BAR = 14


def _nice_step(span: float, target: int = 8) -> float:
    raw = max(span / target, 1e-3)
    for step in (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1, 2, 5, 10, 15, 30):
        if step >= raw:
            return step
    return 60.0 * max(1, round(raw / 60))


def _fmt(seconds: float) -> str:
    return f"{seconds:.3f}".rstrip("0").rstrip(".") + "s"


def render_svg(
    spans: list[Span], markers: list[Marker], session_end: float, title: str, width: int = 960
) -> str:
    """The timeline as a standalone SVG document."""
    if spans:
        t0 = min(s.added for s in spans)
        t1 = max([session_end, *(s.end(session_end) for s in spans)])
    else:
        t0, t1 = 0.0, max(session_end, 1.0)
    duration = max(t1 - t0, 0.001)
    plot = width - _LEFT - _RIGHT
    used = sorted({s.status for s in spans}, key=list(STATUS_COLORS).index)
    height = _TOP + _ROW * max(len(spans), 1) + 70

    def x(t: float) -> float:
        return _LEFT + (t - t0) / duration * plot

    out: list[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="ui-monospace, Menlo, Consolas, monospace" '
        'font-size="12">',
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
        f'<text x="12" y="20" font-size="14" font-weight="bold" fill="#222">{_text(title)}</text>',
    ]
    # Time axis and grid.
    step = _nice_step(duration)
    bottom = _TOP + _ROW * max(len(spans), 1)
    tick = 0.0
    while tick <= duration + 1e-9:
        gx = _LEFT + tick / duration * plot
        out.append(
            f'<line x1="{gx:.1f}" y1="{_TOP - 8}" x2="{gx:.1f}" y2="{bottom}" stroke="#eee"/>'
        )
        out.append(
            f'<text x="{gx:.1f}" y="{_TOP - 12}" text-anchor="middle" fill="#777" '
            f'font-size="10">{_fmt(tick)}</text>'
        )
        tick += step
    # Rows.
    for i, span in enumerate(spans):
        y = _TOP + i * _ROW
        mid = y + _ROW / 2
        color = STATUS_COLORS.get(span.status, "#555")
        if i % 2:
            out.append(f'<rect x="0" y="{y}" width="{width}" height="{_ROW}" fill="#fafafa"/>')
        label = f"{span.tool_use_id} {span.name}"
        if span.summary:
            label += f": {span.summary}"
        if len(label) > 34:
            label = label[:33] + "…"
        details = [
            f"{span.tool_use_id} ({span.name}), turn {span.turn}: {span.status}",
            span.summary,
            f"added {_fmt(span.added - t0)}",
        ]
        if span.started is not None:
            details.append(f"started {_fmt(span.started - t0)}")
        if span.finished is not None:
            details.append(f"finished {_fmt(span.finished - t0)}")
        if span.result is not None:
            details.append(f"result written {_fmt(span.result - t0)}")
        details.append(f"{len(span.progress)} progress events")
        out.append(f"<g><title>{_text(chr(10).join(d for d in details if d))}</title>")
        out.append(f'<text x="12" y="{mid + 4:.1f}" fill="#222">{_text(label)}</text>')
        end = span.end(session_end)
        queued_until = span.started if span.started is not None else end
        if queued_until > span.added:
            out.append(
                f'<rect x="{x(span.added):.1f}" y="{mid - 3:.1f}" '
                f'width="{max(x(queued_until) - x(span.added), 1):.1f}" height="6" '
                'fill="#e3e3e3" stroke="#aaa" stroke-dasharray="3,2" stroke-width="0.8"/>'
            )
        if span.started is not None:
            finished = span.finished if span.finished is not None else end
            finished = min(finished, end)
            out.append(
                f'<rect x="{x(span.started):.1f}" y="{mid - _BAR / 2:.1f}" '
                f'width="{max(x(finished) - x(span.started), 2):.1f}" height="{_BAR}" '
                f'rx="2" fill="{color}"/>'
            )
            for t in span.progress:
                out.append(
                    f'<line x1="{x(t):.1f}" y1="{mid - _BAR / 2 + 2:.1f}" x2="{x(t):.1f}" '
                    f'y2="{mid + _BAR / 2 - 2:.1f}" stroke="#fff" stroke-width="1.5"/>'
                )
            if span.result is not None and x(span.result) - x(finished) > 1:
                out.append(
                    f'<line x1="{x(finished):.1f}" y1="{mid:.1f}" x2="{x(span.result):.1f}" '
                    f'y2="{mid:.1f}" stroke="{color}" stroke-width="2" opacity="0.55"/>'
                )
        if span.result is not None:
            rx = x(span.result)
            out.append(
                f'<path d="M{rx:.1f} {mid - 5:.1f} L{rx + 5:.1f} {mid:.1f} L{rx:.1f} '
                f'{mid + 5:.1f} L{rx - 5:.1f} {mid:.1f} Z" fill="{color}" stroke="#222" '
                'stroke-width="0.8"/>'
            )
        out.append("</g>")
    # Markers.
    for n, marker in enumerate(markers):
        mx = x(marker.t)
        color = _MARKER_COLORS.get(marker.kind, "#333")
        out.append(
            f'<line x1="{mx:.1f}" y1="{_TOP - 4}" x2="{mx:.1f}" y2="{bottom}" stroke="{color}" '
            'stroke-width="1.2" stroke-dasharray="5,3"/>'
        )
        # Labels near the right edge go to the left of their line.
        flip = mx > width - _RIGHT - 6.5 * len(marker.label)
        anchor = 'text-anchor="end" ' if flip else ""
        lx_ = mx - 3 if flip else mx + 3
        out.append(
            f'<text x="{lx_:.1f}" y="{_TOP - 26 - (n % 2) * 11}" {anchor}fill="{color}" '
            f'font-size="10">{_text(marker.label)}</text>'
        )
    # Legend.
    ly = bottom + 24
    lx = 12.0
    items: list[tuple[str, str]] = [("queued", "queued"), ("waiting", "waiting for result order")]
    items += [(status, status) for status in used]
    for key, text in items:
        if key == "queued":
            out.append(
                f'<rect x="{lx:.1f}" y="{ly - 3}" width="18" height="6" fill="#e3e3e3" '
                'stroke="#aaa" stroke-dasharray="3,2" stroke-width="0.8"/>'
            )
        elif key == "waiting":
            out.append(
                f'<line x1="{lx:.1f}" y1="{ly}" x2="{lx + 18:.1f}" y2="{ly}" stroke="#555" '
                'stroke-width="2" opacity="0.55"/>'
            )
        else:
            out.append(
                f'<rect x="{lx:.1f}" y="{ly - 6}" width="18" height="12" rx="2" '
                f'fill="{STATUS_COLORS[key]}"/>'
            )
        out.append(f'<text x="{lx + 23:.1f}" y="{ly + 4}" fill="#333">{_text(text)}</text>')
        lx += 23 + 7.3 * len(text) + 18
        if lx > width - 150:
            lx = 12.0
            ly += 20
    out.append(
        f'<text x="12" y="{ly + 24}" fill="#777" font-size="10">bars: executing (white ticks: '
        "progress events); ◆: tool_result written; dashed lines: interrupt, discard, end of "
        "turn</text>"
    )
    out.append("</svg>")
    # Grow the canvas if the legend wrapped.
    document = "\n".join(out) + "\n"
    needed = ly + 40
    if needed > height:
        document = document.replace(
            f'height="{height}" viewBox="0 0 {width} {height}"',
            f'height="{needed}" viewBox="0 0 {width} {needed}"',
            1,
        ).replace(
            f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
            f'<rect width="{width}" height="{needed}" fill="#ffffff"/>',
            1,
        )
    return document


def run(args: argparse.Namespace) -> int:
    """``stdio-executor timeline``, parsed by ``commands``."""
    try:
        if args.session is None:
            session = last_session(args.journal)
        else:
            sessions = read_sessions(args.journal)
            ok = 0 < args.session <= len(sessions)
            session = sessions[args.session - 1] if ok else None
    except OSError as exc:
        sys.stderr.write(f"stdio-executor timeline: {exc}\n")
        return 2
    if session is None:
        sys.stderr.write(f"stdio-executor timeline: no such session in {args.journal}\n")
        return 2
    spans, markers, end = spans_of(session)
    pid = session.info.get("pid")
    title = f"stdio-executor timeline: {len(spans)} tool calls" + (f", pid {pid}" if pid else "")
    if args.format == "trace":
        from .trace_events import render_trace

        text = render_trace(spans, markers, end, pid if isinstance(pid, int) else 1, title)
    else:
        text = render_svg(spans, markers, end, title, args.width)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    return 0
