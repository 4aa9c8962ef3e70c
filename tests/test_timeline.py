"""The timeline: spans from a journaled session, drawn as a standalone SVG."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
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
