"""``stdio-executor pretty``: the daemon's event stream on stdin, shown for a person.

Owns: reading events (or journal records) line by line, the state of the calls they speak
of, and two renderings of it: a live terminal view (rich), and plain text, one line per
event, when stdout is not a terminal or ``--plain`` is given.
Must not: be imported by the daemon, or import rich outside the live view (plain text
needs nothing beyond the standard library, and pipes should not pay rich's import).

``Stream`` is the part that knows the protocol: fed one decoded line at a time, it returns
the lines to print for good and keeps the calls still running, so both renderings (and the
tests) share it. The live view redraws the running calls below the printed lines: one line
each with a spinner, the time since ``tool_started``, how much progress arrived and the
last line of output.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import IO, Any

from .display import visible
from .timeline import input_summary

__all__ = ["Line", "Running", "Stream", "run"]

# Status words and the rich styles they are shown in (the SVG timeline's palette, roughly).
STATUS_STYLES = {
    "success": "green",
    "error": "red",
    "timed_out": "dark_orange",
    "interrupted": "magenta",
    "rejected": "grey62",
    "sibling_cancelled": "grey62",
    "denied": "bold red",
    "invalid_input": "yellow",
    "unknown_tool": "yellow",
    "discarded": "grey62",
}
PERMISSION_STYLE = "bold black on yellow"
_WIDTH = 100  # plain text: longest summary or output excerpt, in characters


@dataclass
class Line:
    """One line to print for good: styled parts (rich style names, "" for none)."""

    parts: list[tuple[str, str]]
    progress: bool = False  # the live view shows progress in its running lines instead

    def __post_init__(self) -> None:
        self.parts = [(visible(text), style) for text, style in self.parts]

    @property
    def text(self) -> str:
        return "".join(text for text, _ in self.parts)


@dataclass
class Running:
    """A call between ``tool_started`` (or ``permission_request``) and its result."""

    tool_use_id: str
    name: str
    summary: str
    since: float  # the stream's clock when it started
    progress: int = 0
    output_bytes: int = 0
    last_output: str = ""
    asking: str | None = None  # the permission request it waits for

    def __setattr__(self, name: str, value: object) -> None:
        # Everything shown of a running call comes from events: made visible once, here.
        super().__setattr__(name, visible(value) if isinstance(value, str) else value)


def _short(text: str, width: int = _WIDTH) -> str:
    one = " ".join(text.split())
    return one if len(one) <= width else one[: width - 1] + "…"


def _last_line(text: str) -> str:
    for line in reversed(text.splitlines()):
        if line.strip():
            return line.strip()
    return ""


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif isinstance(block, dict):
                parts.append(f"[{block.get('type', 'block')}]")
        return "\n".join(parts)
    return ""


def _ms(value: Any) -> str:
    if not isinstance(value, int | float):
        return ""
    return f"{value:.0f}ms" if value < 1000 else f"{value / 1000:.1f}s"


@dataclass
class Stream:
    """The calls an event stream speaks of; ``feed`` returns the lines to print."""

    clock: Callable[[], float] = time.monotonic
    running: dict[str, Running] = field(default_factory=dict)
    inputs: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (name, summary)
    statuses: dict[str, int] = field(default_factory=dict)

    def feed_line(self, raw: bytes | str) -> list[Line]:
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        text = text.rstrip("\r\n")
        if not text.strip():
            return []
        try:
            value = json.loads(text)
        except ValueError:
            return [Line([("?      ", "dim"), (_short(text), "dim")])]
        if not isinstance(value, dict):
            return [Line([("?      ", "dim"), (_short(text), "dim")])]
        # A journal record (--journal FILE): commands tell the calls' inputs, events as usual.
        if "dir" in value and isinstance(value.get("msg"), dict):
            if value["dir"] == "in":
                self._command(value["msg"])
                return []
            if value["dir"] != "out":
                return []
            value = value["msg"]
        return self.feed(value)

    def _command(self, msg: dict[str, Any]) -> None:
        use = msg.get("tool_use")
        if msg.get("type") == "add_tool" and isinstance(use, dict):
            name = str(use.get("name"))
            self.inputs[str(use.get("id"))] = (name, input_summary(name, use.get("input")))

    def _call(self, tool_use_id: str, name: str | None = None) -> Running:
        call = self.running.get(tool_use_id)
        if call is None:
            known_name, summary = self.inputs.get(tool_use_id, (name or "?", ""))
            call = Running(tool_use_id, name or known_name, summary, self.clock())
            self.running[tool_use_id] = call
        return call

    def _label(self, tool_use_id: str, name: str) -> list[tuple[str, str]]:
        summary = self.inputs.get(tool_use_id, ("", ""))[1]
        parts = [(tool_use_id, "bold"), (" ", ""), (name, "cyan")]
        if summary:
            parts += [("  ", ""), (_short(summary, 60), "")]
        return parts

    def feed(self, event: dict[str, Any]) -> list[Line]:
        """The lines to print for one event (none for events without a handler here)."""
        handler = getattr(self, f"_on_{event.get('type')}", None)
        if handler is None:
            return [Line([(f"{event.get('type')}  ", "dim"), (_short(json.dumps(event)), "dim")])]
        line: Line = handler(event, str(event.get("tool_use_id", "")))
        return [line]

    def _on_ready(self, event: dict[str, Any], _: str) -> Line:
        tools = [str(t.get("name")) for t in event.get("tools") or () if isinstance(t, dict)]
        return Line(
            [
                ("ready  ", "bold green"),
                (f"stdio-executor {event.get('version')} ", ""),
                (f"(protocol {event.get('protocol_version')}, pid {event.get('pid')}) ", "dim"),
                (f"{len(tools)} tools: {', '.join(tools)}", "dim"),
            ]
        )

    def _on_tool_started(self, event: dict[str, Any], tool_use_id: str) -> Line:
        name = str(event.get("name"))
        call = self._call(tool_use_id, name)
        call.name = name
        call.since = self.clock()
        turn = (f"  (turn {event.get('turn')})", "dim")
        return Line([("start  ", "blue"), *self._label(tool_use_id, name), turn])

    def _on_progress(self, event: dict[str, Any], tool_use_id: str) -> Line:
        call = self._call(tool_use_id)
        data = event.get("data")
        call.progress += 1
        text = data.get("text") if isinstance(data, dict) else None
        if isinstance(text, str):
            assert isinstance(data, dict)
            call.output_bytes = int(data.get("total_bytes") or call.output_bytes + len(text))
            call.last_output = _last_line(text) or call.last_output
        else:
            call.last_output = _short(json.dumps(data), 60)
        excerpt = (_short(call.last_output, 80), "dim")
        return Line([("...    ", "dim"), (tool_use_id, "bold"), ("  ", ""), excerpt], True)

    def _on_tool_result(self, event: dict[str, Any], tool_use_id: str) -> Line:
        meta = event.get("meta")
        meta = meta if isinstance(meta, dict) else {}
        status = str(meta.get("status", "error" if event.get("is_error") else "success"))
        self.statuses[status] = self.statuses.get(status, 0) + 1
        call = self.running.pop(tool_use_id, None)
        name = call.name if call else self.inputs.get(tool_use_id, ("?", ""))[0]
        style = STATUS_STYLES.get(status, "")
        parts = [(f"{status:<7}", f"bold {style}".strip()), (" ", "")]
        parts += self._label(tool_use_id, name)
        took = _ms(meta.get("duration_ms"))
        if took:
            parts.append((f"  {took}", "dim"))
        if meta.get("exit_code") not in (None, 0):
            parts.append((f"  exit {meta['exit_code']}", style))
        first = _content_text(event.get("content")).strip().split("\n", 1)[0]
        if first:
            parts += [("  ", ""), (_short(first, 80), style if status != "success" else "")]
        return Line(parts)

    def _on_permission_request(self, event: dict[str, Any], tool_use_id: str) -> Line:
        name = str(event.get("name"))
        self.inputs.setdefault(tool_use_id, (name, input_summary(name, event.get("input"))))
        self._call(tool_use_id, name).asking = str(event.get("request_id"))
        return Line(
            [
                (" PERMISSION ", PERMISSION_STYLE),
                (" ", ""),
                *self._label(tool_use_id, name),
                (f"  {event.get('reason', '')}", "yellow"),
                (f"  (request {event.get('request_id')})", "dim"),
            ]
        )

    def _on_permission_cancelled(self, event: dict[str, Any], tool_use_id: str) -> Line:
        call = self.running.get(tool_use_id)
        if call is not None:
            call.asking = None
        what = f"{tool_use_id}: request {event.get('request_id')} cancelled ({event.get('reason')})"
        return Line([("asked  ", "yellow"), (what, "dim")])

    def _on_tool_call(self, event: dict[str, Any], tool_use_id: str) -> Line:
        name = str(event.get("name"))
        self.inputs.setdefault(tool_use_id, (name, input_summary(name, event.get("input"))))
        host = ("  (the host runs it)", "dim")
        return Line([("host   ", "blue"), *self._label(tool_use_id, name), host])

    def _on_tool_cancel(self, event: dict[str, Any], tool_use_id: str) -> Line:
        return Line([("cancel ", "magenta"), (f"{tool_use_id} ({event.get('reason')})", "")])

    def _on_drained(self, event: dict[str, Any], _: str) -> Line:
        counts = event.get("by_status")
        detail = (
            ", ".join(f"{n} {s}" for s, n in counts.items()) if isinstance(counts, dict) else ""
        )
        return Line(
            [
                ("drained", "bold"),
                (f" turn {event.get('turn')}: {event.get('results', 0)} results", ""),
                (f" ({detail})" if detail else "", "dim"),
            ]
        )

    def _on_interrupted(self, event: dict[str, Any], _: str) -> Line:
        ids = ", ".join(str(i) for i in event.get("tool_use_ids") or ())
        return Line([(f"interrupted ({event.get('reason')})", "bold magenta"), (f" {ids}", "")])

    def _on_discarded(self, event: dict[str, Any], _: str) -> Line:
        ids = ", ".join(str(i) for i in event.get("tool_use_ids") or ())
        return Line([("discarded", "bold magenta"), (f" {ids}", "")])

    def _on_error(self, event: dict[str, Any], _: str) -> Line:
        where = f" line {event['line']}" if event.get("line") is not None else ""
        message = (_short(str(event.get("message", ""))), "")
        return Line([("error  ", "bold red"), (f"{event.get('code')}{where}: ", "red"), message])

    def _on_tools_changed(self, event: dict[str, Any], _: str) -> Line:
        added = ", ".join(event.get("added") or ()) or "-"
        removed = ", ".join(event.get("removed") or ()) or "-"
        return Line([("tools  ", "blue"), (f"added {added}; removed {removed}", "dim")])

    def _on_journal_recovered(self, event: dict[str, Any], _: str) -> Line:
        unfinished = event.get("unfinished") or ()
        ids = ", ".join(str(u.get("tool_use_id")) for u in unfinished if isinstance(u, dict))
        return Line([("recovered", "bold yellow"), (f" unfinished in the last run: {ids}", "")])

    def summary(self) -> Line | None:
        if not self.statuses:
            return None
        parts: list[tuple[str, str]] = [("total  ", "bold")]
        for n, (status, count) in enumerate(sorted(self.statuses.items())):
            parts.append((", " if n else "", ""))
            parts.append((f"{count} {status}", STATUS_STYLES.get(status, "")))
        return Line(parts)


# ----------------------------------------------------------------------------- rendering


def _plain(lines: Iterable[bytes], out: IO[str], stream: Stream) -> None:
    began = stream.clock()
    for raw in lines:
        for line in stream.feed_line(raw):
            out.write(f"{stream.clock() - began:7.2f}s {line.text}\n")
        out.flush()
    done = stream.summary()
    if done is not None:
        out.write(f"{stream.clock() - began:7.2f}s {done.text}\n")
    out.flush()


def _live(lines: Iterable[bytes], stream: Stream) -> None:
    from rich.console import Console, Group, RenderableType
    from rich.live import Live
    from rich.spinner import Spinner
    from rich.table import Table
    from rich.text import Text

    console = Console()
    lock = threading.Lock()  # the refresh thread renders while this one feeds
    spinners: dict[str, Spinner] = {}

    def styled(line: Line) -> Text:
        return Text.assemble(*((t, s) if s else t for t, s in line.parts))

    class RunningView:
        def __rich__(self) -> RenderableType:
            with lock:
                calls = list(stream.running.values())
                now = stream.clock()
            if not calls:
                return Text("")
            table = Table.grid(padding=(0, 1))
            for call in calls:
                spinner = spinners.setdefault(call.tool_use_id, Spinner("dots", style="cyan"))
                if call.asking is not None:
                    state = Text(f"waiting for permission ({call.asking})", style=PERMISSION_STYLE)
                else:
                    plural = "" if call.progress == 1 else "s"
                    bar = f"{call.progress} update{plural}" + (
                        f", {call.output_bytes:,} B" if call.output_bytes else ""
                    )
                    state = Text.assemble(
                        (bar, "dim"), ("  ", ""), (_short(call.last_output, 50), "")
                    )
                table.add_row(
                    spinner,
                    Text(call.tool_use_id, style="bold"),
                    Text(call.name, style="cyan"),
                    Text(_short(call.summary, 40)),
                    Text(f"{now - call.since:6.1f}s", style="bold"),
                    state,
                )
            return Group(Text("running", style="dim"), table)

    with Live(RunningView(), console=console, refresh_per_second=8, transient=True) as live:
        for raw in lines:
            with lock:
                printed = stream.feed_line(raw)
            for line in printed:
                if not line.progress:
                    live.console.print(styled(line), soft_wrap=True)
        done = stream.summary()
    if done is not None:
        console.print(styled(done))


def run(args: argparse.Namespace) -> int:
    """``stdio-executor pretty``, parsed by ``commands``."""
    stream = Stream()
    lines = iter(sys.stdin.buffer.readline, b"")
    try:
        if args.plain or not sys.stdout.isatty():
            _plain(lines, sys.stdout, stream)
        else:
            _live(lines, stream)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `... | stdio-executor pretty | head`
        return 0
    return 0
