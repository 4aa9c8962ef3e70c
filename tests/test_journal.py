"""Reading journals back: sessions, the last session found from the end, unfinished tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stdio_executor.journal import Journal, last_session, read_sessions, unfinished_tools


def rec(t: float, kind: str, msg: Any, **extra: Any) -> str:
    return json.dumps({"t": t, "wall": 1.0 + t, "dir": kind, **extra, "msg": msg}) + "\n"


def add(tool_id: str, command: str) -> dict[str, Any]:
    use = {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": command}}
    return {"type": "add_tool", "tool_use": use}


def started(tool_id: str, turn: int = 1) -> dict[str, Any]:
    return {"type": "tool_started", "tool_use_id": tool_id, "name": "Bash", "turn": turn}


def result(tool_id: str, turn: int = 1) -> dict[str, Any]:
    return {
        "type": "tool_result",
        "tool_use_id": tool_id,
        "content": "",
        "is_error": False,
        "meta": {"status": "success", "turn": turn},
    }


def test_the_last_session_is_found_from_the_end_of_a_large_journal(tmp_path: Path) -> None:
    path = tmp_path / "j"
    filler = rec(0.1, "out", {"type": "progress", "tool_use_id": "x", "data": {"t": "y" * 900}})
    with path.open("w") as f:
        f.write(rec(0, "session", {"pid": 1}))
        f.write(filler * 3000)  # ~3 MiB: several backward chunks
        f.write(rec(0, "session", {"pid": 2}))
        f.write(rec(0.2, "in", add("a", "ls"), line=1))
        # A host's own field that looks like a session marker is not one.
        f.write(rec(0.3, "in", {"type": "drain", "dir": "session"}, line=2))
    session = last_session(str(path))
    assert session is not None
    assert session.info == {"pid": 2}
    assert [r.line for r in session.records] == [1, 2]
    assert [s.info["pid"] for s in read_sessions(str(path))] == [1, 2]


def test_a_journal_without_session_records_is_one_session(tmp_path: Path) -> None:
    path = tmp_path / "j"
    path.write_text(rec(0.1, "in", add("a", "ls"), line=1) + "torn {\n")
    session = last_session(str(path))
    assert session is not None and len(session.records) == 1
    empty = tmp_path / "empty"
    empty.write_text("")
    assert last_session(str(empty)) is None


def test_unfinished_tools_are_those_started_without_result_or_discard(tmp_path: Path) -> None:
    path = tmp_path / "j"
    path.write_text(
        rec(0, "session", {})
        + rec(0.1, "in", add("done", "echo"), line=1)
        + rec(0.1, "in", add("lost", "./deploy"), line=2)
        + rec(0.1, "in", add("waiting", "touch x"), line=3)
        + rec(0.2, "out", started("done"))
        + rec(0.2, "out", started("lost"))
        + rec(0.3, "out", result("done"))
        + rec(0.4, "in", {"type": "discard"}, line=4)
        + rec(0.4, "out", {"type": "discarded", "tool_use_ids": ["lost", "waiting"], "turn": 1})
        + rec(0.5, "in", add("lost", "./deploy --again"), line=5)
        + rec(0.6, "out", started("lost", turn=2))
    )
    session = last_session(str(path))
    assert session is not None
    assert unfinished_tools(session) == [
        {"tool_use_id": "lost", "name": "Bash", "input": {"command": "./deploy --again"}, "turn": 2}
    ]


def test_the_writer_splices_input_and_output_lines_as_they_are(tmp_path: Path) -> None:
    journal = Journal(str(tmp_path / "j"))
    journal.session({"pid": 7})
    journal.record_in(1, b'{"type":"drain", "x": "\\u2028"}', is_json=True)
    journal.record_in(2, "caf\u00e9 not json".encode(), is_json=False)
    journal.record_out(b'{"type":"drained"}\n')
    journal.close()
    lines = [json.loads(line) for line in (tmp_path / "j").read_text().splitlines()]
    assert [line["dir"] for line in lines] == ["session", "in", "in", "out"]
    assert lines[1]["msg"] == {"type": "drain", "x": "\u2028"}
    assert lines[2]["raw"] == "caf\u00e9 not json"
    assert lines[3]["msg"] == {"type": "drained"}
