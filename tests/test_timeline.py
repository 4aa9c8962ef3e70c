"""The timeline: spans from a journaled session, drawn as a standalone SVG or written as
Chrome trace-event JSON that Perfetto and chrome://tracing open.

``check_trace`` holds the trace format's structural rules, written from the Trace Event
Format document (JSON Object Format; Complete, Instant, Flow and Metadata events), so that a
trace which breaks one fails here rather than in a viewer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import Any

from stdio_executor.cli import main
from stdio_executor.journal import last_session
from stdio_executor.timeline import STATUS_COLORS, render_svg, spans_of

SVG = "{http://www.w3.org/2000/svg}"


def rec(t: float, kind: str, msg: dict[str, Any], line: int | None = None) -> str:
    record: dict[str, Any] = {"t": t, "wall": 100 + t, "dir": kind}
    if line is not None:
        record["line"] = line
    record["msg"] = msg
    return json.dumps(record) + "\n"


def add(tool_id: str, command: str) -> dict[str, Any]:
    use = {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": command}}
    return {"type": "add_tool", "tool_use": use}


def result(tool_id: str, status: str, duration_ms: float | None) -> dict[str, Any]:
    meta = {"status": status, "turn": 1, "duration_ms": duration_ms}
    return {"type": "tool_result", "tool_use_id": tool_id, "content": "", "meta": meta}


def started(tool_id: str) -> dict[str, Any]:
    return {"type": "tool_started", "tool_use_id": tool_id, "name": "Bash", "turn": 1}


def write_journal(path: Path) -> None:
    path.write_text(
        rec(0, "session", {"pid": 9})
        + rec(1.0, "in", add("read", "sleep 1; cat f"), line=1)
        + rec(1.0, "in", add("write", "echo x > f"), line=2)
        + rec(1.0, "in", add("read", "duplicate id, refused"), line=3)
        + rec(1.1, "out", started("read"))
        + rec(1.1, "out", {"type": "error", "code": "duplicate_tool_use_id", "line": 3})
        + rec(1.5, "out", {"type": "progress", "tool_use_id": "read", "data": {}})
        + rec(2.1, "out", result("read", "success", 1000.0))
        + rec(2.1, "out", started("write"))
        + rec(2.2, "in", {"type": "interrupt", "reason": "abort"}, line=4)
        + rec(2.3, "out", result("write", "interrupted", 200.0))
        + rec(2.4, "in", add("late", "ls"), line=5)
        + rec(2.4, "out", result("late", "rejected", None))
        + rec(2.5, "out", {"type": "drained", "turn": 1})
    )


def test_spans_follow_each_tool_from_add_to_result(tmp_path: Path) -> None:
    write_journal(tmp_path / "j")
    session = last_session(str(tmp_path / "j"))
    assert session is not None
    spans, markers, end = spans_of(session)
    assert [s.tool_use_id for s in spans] == ["read", "write", "late"]
    read, write, late = spans
    assert (read.added, read.started, read.finished, read.result) == (1.0, 1.1, 2.1, 2.1)
    assert read.progress == [1.5] and read.summary == "sleep 1; cat f"
    assert (write.added, write.started, write.status) == (1.0, 2.1, "interrupted")
    assert (late.started, late.status, late.result) == (None, "rejected", 2.4)
    assert [(m.kind, m.t) for m in markers] == [("interrupt", 2.2), ("drained", 2.5)]
    assert end == 2.5


def test_the_svg_has_a_row_per_tool_coloured_by_status(tmp_path: Path) -> None:
    write_journal(tmp_path / "j")
    session = last_session(str(tmp_path / "j"))
    assert session is not None
    svg = render_svg(*spans_of(session), title="test <timeline>")
    root = ET.fromstring(svg)  # well-formed, with the title escaped
    texts = [t.text or "" for t in root.iter(f"{SVG}text")]
    assert "test <timeline>" in texts
    assert "read Bash: sleep 1; cat f" in texts
    assert "interrupt (abort)" in texts and "turn 1 drained" in texts
    fills = [r.get("fill") for r in root.iter(f"{SVG}rect")]
    assert STATUS_COLORS["success"] in fills and STATUS_COLORS["interrupted"] in fills
    tooltips = [t.text or "" for t in root.iter(f"{SVG}title")]
    assert any(t.startswith("write (Bash), turn 1: interrupted") for t in tooltips)


def test_the_command_writes_the_picture(tmp_path: Path) -> None:
    write_journal(tmp_path / "j")
    assert main(["timeline", str(tmp_path / "j"), "-o", str(tmp_path / "t.svg")]) == 0
    assert (tmp_path / "t.svg").read_text().startswith("<svg ")
    assert main(["timeline", str(tmp_path / "j"), "--session", "2"]) == 2


# ------------------------------------------------------------------------- trace events

REPO_ROOT = Path(__file__).resolve().parents[1]

# Every phase the format defines; only the ones we write are checked in detail.
_PHASES = set("BEXiICbneSTpFsftPNODMVvRc")
_METADATA = {
    "process_name": "name",
    "process_labels": "labels",
    "process_sort_index": "sort_index",
    "thread_name": "name",
    "thread_sort_index": "sort_index",
}


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_trace(document: Any) -> list[dict[str, Any]]:
    """Assert the trace-event format's structure; the events, for further checks."""
    # JSON Object Format: an object whose traceEvents is the array of events.
    assert isinstance(document, dict)
    events = document["traceEvents"]
    assert isinstance(events, list) and events
    assert document.get("displayTimeUnit", "ms") in ("ms", "ns")
    slices: dict[tuple[int, int], list[tuple[float, float]]] = {}
    for event in events:
        assert isinstance(event, dict), event
        ph = event["ph"]
        assert ph in _PHASES, event
        assert isinstance(event["name"], str), event
        # pid and tid identify the process and thread (track) of every event we write.
        assert isinstance(event["pid"], int) and isinstance(event["tid"], int), event
        if "args" in event:
            assert isinstance(event["args"], dict), event
        if ph == "M":
            key = _METADATA[event["name"]]
            value = event["args"][key]
            assert isinstance(value, int if key == "sort_index" else str), event
            continue
        # ts (and dur) in microseconds, as numbers.
        assert _number(event["ts"]) and event["ts"] >= 0, event
        assert isinstance(event.get("cat", ""), str), event
        if ph == "X":
            assert _number(event["dur"]) and event["dur"] >= 0, event
            slices.setdefault((event["pid"], event["tid"]), []).append(
                (event["ts"], event["ts"] + event["dur"])
            )
        elif ph in ("i", "I"):
            assert event.get("s", "t") in ("g", "p", "t"), event
        elif ph in ("s", "t", "f"):
            assert "id" in event and isinstance(event["cat"], str), event
            if "bp" in event:
                assert event["bp"] == "e", event
    # Complete events on one thread must nest (no partial overlap), or viewers misdraw them.
    for intervals in slices.values():
        intervals.sort(key=lambda iv: (iv[0], -iv[1]))
        stack: list[tuple[float, float]] = []
        for start, end in intervals:
            while stack and stack[-1][1] <= start:
                stack.pop()
            assert not stack or end <= stack[-1][1], (start, end, stack)
            stack.append((start, end))
    # Flows: one start and one end per (cat, name, id), the start first, each bound to a
    # slice: a start to the slice around it on its thread, an end with bp "e" likewise.
    flows: dict[tuple[str, str, Any], dict[str, dict[str, Any]]] = {}
    for event in events:
        if event["ph"] in ("s", "f"):
            flow = (event["cat"], event["name"], event["id"])
            assert event["ph"] not in flows.setdefault(flow, {}), f"duplicate flow {event}"
            flows[flow][event["ph"]] = event
    for flow, ends in flows.items():
        assert set(ends) == {"s", "f"}, f"unmatched flow {flow}"
        assert ends["s"]["ts"] <= ends["f"]["ts"], flow
        for event in ends.values():
            around = slices.get((event["pid"], event["tid"]), [])
            assert any(a <= event["ts"] <= b for a, b in around), f"unbound flow {event}"
    return events


def trace_of(journal: Path, tmp_path: Path) -> list[dict[str, Any]]:
    out = tmp_path / "trace.json"
    assert main(["timeline", str(journal), "--format", "trace", "-o", str(out)]) == 0
    return check_trace(json.loads(out.read_text("utf-8")))


def test_each_tool_has_its_own_track_with_its_phases_in_microseconds(tmp_path: Path) -> None:
    write_journal(tmp_path / "j")
    events = trace_of(tmp_path / "j", tmp_path)
    threads = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert threads == {
        0: "host",
        1: "read Bash: sleep 1; cat f",
        2: "write Bash: echo x > f",
        3: "late Bash: ls",
    }
    assert {e["pid"] for e in events} == {9}  # the daemon's pid from the journal
    phases = [(e["tid"], e["cat"], e["ts"], e["dur"]) for e in events if e["ph"] == "X"]
    # read: queued 1.0-1.1 s, executing 1.1 s for 1000 ms, result at once.
    assert (1, "queued", 1_000_000, 100_000) in phases
    assert (1, "executing", 1_100_000, 1_000_000) in phases
    assert (1, "result", 2_100_000, 1.0) in phases
    assert not any(tid == 1 and cat == "waiting" for tid, cat, _, _ in phases)
    # write: queued behind read, executing 200 ms, ended by the interrupt.
    assert (2, "queued", 1_000_000, 1_100_000) in phases
    assert (2, "executing", 2_100_000, 200_000) in phases
    # late: rejected without running: queued until its result, never executing.
    assert (3, "queued", 2_400_000, 0) in phases
    assert not any(tid == 3 and cat == "executing" for tid, cat, _, _ in phases)
    (executing,) = [e for e in events if e.get("cat") == "executing" and e["tid"] == 2]
    assert executing["args"]["status"] == "interrupted"
    assert executing["name"] == "Bash (interrupted)"


def test_progress_is_instants_and_results_are_flow_ends(tmp_path: Path) -> None:
    write_journal(tmp_path / "j")
    events = trace_of(tmp_path / "j", tmp_path)
    progress = [e for e in events if e["name"] == "progress"]
    assert [(e["ph"], e["s"], e["tid"], e["ts"]) for e in progress] == [("i", "t", 1, 1_500_000)]
    ends = {e["tid"]: e for e in events if e["ph"] == "f"}
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    assert set(ends) == {1, 2, 3}
    for tid, end in ends.items():
        assert starts[end["id"]]["tid"] == 0  # from the host's add_tool
        (result,) = [e for e in events if e.get("cat") == "result" and e["tid"] == tid]
        assert result["ts"] <= end["ts"] <= result["ts"] + result["dur"]
    markers = [(e["name"], e["s"]) for e in events if e["ph"] == "i" and e["tid"] == 0]
    assert markers == [("interrupt (abort)", "p"), ("turn 1 drained", "p")]


def test_a_real_daemon_session_gives_a_valid_trace(tmp_path: Path) -> None:
    journal = tmp_path / "demo.journal"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    demo = (REPO_ROOT / "examples" / "demo.ndjson").read_bytes()
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    argv = [sys.executable, "-m", "stdio_executor", "--journal", str(journal)]
    daemon = subprocess.run(
        [*argv, "--permission-mode", "bypassPermissions"],
        input=demo,
        capture_output=True,
        cwd=workspace,
        env=env,
        timeout=60,
    )
    assert daemon.returncode == 0, daemon.stderr
    events = trace_of(journal, tmp_path)
    added = sum(1 for line in demo.splitlines() if b'"add_tool"' in line)
    tools = [e for e in events if e["name"] == "thread_name" and e["tid"] != 0]
    assert len(tools) == added
    results = [json.loads(line) for line in daemon.stdout.splitlines()]
    ended = Counter(e["tool_use_id"] for e in results if e["type"] == "tool_result")
    assert sum(1 for e in events if e["ph"] == "f") == sum(ended.values())
    assert any(e["name"] == "progress" for e in events)  # the demo's scan prints as it goes


def test_the_trace_checks_catch_what_viewers_would_misdraw() -> None:
    import pytest

    meta = {"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "t"}}

    def x(ts: float, dur: float) -> dict[str, Any]:
        return {"name": "x", "cat": "c", "ph": "X", "ts": ts, "dur": dur, "pid": 1, "tid": 1}

    flow = {"name": "f", "cat": "c", "id": 1, "pid": 1, "tid": 1}
    good = [meta, x(0, 10), {**flow, "ph": "s", "ts": 5}, {**flow, "ph": "f", "bp": "e", "ts": 6}]
    check_trace({"traceEvents": good})
    broken = [
        [meta, x(0, 10), x(5, 10)],  # partial overlap on one thread
        [meta, x(0, 10), {**flow, "ph": "s", "ts": 5}],  # a flow that never ends
        [meta, x(0, 1), {**flow, "ph": "s", "ts": 5}, {**flow, "ph": "f", "ts": 6}],  # unbound
        [meta, {"name": "x", "ph": "X", "ts": 0, "pid": 1, "tid": 1}],  # X without dur
        [{**meta, "args": {}}],  # thread_name without a name
    ]
    for events in broken:
        with pytest.raises((AssertionError, KeyError)):
            check_trace({"traceEvents": events})


def test_control_characters_in_a_command_still_make_a_valid_svg(tmp_path: Path) -> None:
    # A command (from a model, from a hostile file) can hold any character; XML cannot.
    command = "cat \x1b[31mred\x07 \x00 \x9b \u202eevil"
    (tmp_path / "j").write_text(
        rec(0, "session", {"pid": 9})
        + rec(1.0, "in", add("c\x1b", command), line=1)
        + rec(1.1, "out", started("c\x1b"))
        + rec(2.0, "out", result("c\x1b", "success", 900.0))
    )
    session = last_session(str(tmp_path / "j"))
    assert session is not None
    root = ET.fromstring(render_svg(*spans_of(session), title="t"))
    texts = [t.text or "" for t in root.iter(f"{SVG}text")]
    assert "c\\x1b Bash: cat \\x1b[31mred\\x07 \\x00 \\x9b \\u202eevil" in texts
