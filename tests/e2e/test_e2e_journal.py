"""--journal through the real daemon: what is recorded, when it is flushed, and recovery of
tools a killed daemon left unfinished (SPEC section 10)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from daemon_harness import REPO_ROOT, is_progress, is_type, run_daemon, tool_use

from stdio_executor.protocol import Drained, JournalRecovered, Ready


def records(journal: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in journal.read_text().splitlines()]


def test_the_journal_holds_every_command_received_and_every_event_written(
    tmp_path: Path,
) -> None:
    journal = tmp_path / "run.journal"
    lines = [
        json.dumps(tool_use("a", "echo one")).encode(),
        b"",
        b"not json",
        b'{"type":"drain","request_id":"d1","mine":1}',
    ]
    with run_daemon(tmp_path, "--journal", str(journal), "--max-line-bytes", "1000") as d:
        for line in lines:
            d.send_bytes(line + b"\n")
        d.send_bytes(b"\xff\xfe\n" + b"x" * 2000 + b"\n")
        d.wait_for(is_type(Drained))
        d.close_stdin()
        assert d.wait_exit() == 0
        stdout = bytes(d.raw).splitlines()

    recs = records(journal)
    assert recs[0]["dir"] == "session" and 0 <= recs[0]["t"] < 1
    assert recs[0]["msg"]["argv"][:2] == ["--journal", str(journal)]
    times = [r["t"] for r in recs]
    assert times == sorted(times)
    assert all(isinstance(r["wall"], float) for r in recs)
    # Every stdout line, byte for byte, in order.
    outs = [r["msg"] for r in recs if r["dir"] == "out"]
    assert outs == [json.loads(line) for line in stdout]
    assert outs[0]["type"] == "ready"
    # Every input line that is not blank, with its line number and as sent.
    ins = [{k: v for k, v in r.items() if k not in ("t", "wall")} for r in recs[1:]]
    ins = [r for r in ins if r["dir"] == "in"]
    assert ins == [
        {"dir": "in", "line": 1, "msg": tool_use("a", "echo one")},
        {"dir": "in", "line": 3, "raw": "not json"},
        {"dir": "in", "line": 4, "msg": {"type": "drain", "request_id": "d1", "mine": 1}},
        {"dir": "in", "line": 5, "raw_b64": "//4="},
        {"dir": "in", "line": 6, "skipped_bytes": 2000},
    ]
    # A command is recorded before the events it caused.
    first_in = next(i for i, r in enumerate(recs) if r["dir"] == "in")
    started = next(i for i, r in enumerate(recs) if r.get("msg", {}).get("type") == "tool_started")
    assert first_in < started


def test_a_restarted_daemon_reports_tools_a_killed_run_left_unfinished(tmp_path: Path) -> None:
    journal = tmp_path / "run.journal"
    with run_daemon(tmp_path, "--journal", str(journal)) as d:
        d.send(tool_use("done", "echo ok"))
        d.send({"type": "drain"})
        d.wait_for(is_type(Drained))
        d.send(tool_use("slow", "echo up; sleep 30"))
        d.send(tool_use("queued", "touch never"))  # unsafe: waits, never starts
        # Its output shows the process is running (and registered with the reaper).
        d.wait_for(is_progress("slow"))
        d.proc.kill()  # SIGKILL: no chance to write anything more
        d.wait_exit()
    # What the host saw is in the journal: it was written before stdout.
    assert any(r["msg"].get("tool_use_id") == "slow" for r in records(journal))

    with run_daemon(tmp_path, "--journal", str(journal)) as d:
        d.wait_for(is_type(JournalRecovered))
        assert isinstance(d.events[0], Ready)
        recovered = d.events[1]
        assert isinstance(recovered, JournalRecovered)
        assert recovered.journal == str(journal)
        assert [(u.tool_use_id, u.name, u.input, u.turn) for u in recovered.unfinished] == [
            ("slow", "Bash", {"command": "echo up; sleep 30"}, 2)
        ]
        # The recovery is journaled too, and reported once: this run ends cleanly.
        d.close_stdin()
        assert d.wait_exit() == 0

    with run_daemon(tmp_path, "--journal", str(journal)) as d:
        d.close_stdin()
        assert d.wait_exit() == 0
        assert not d.of_type(JournalRecovered)
    sessions = [r for r in records(journal) if r["dir"] == "session"]
    assert len(sessions) == 3


def test_discarded_tools_are_not_reported_as_unfinished(tmp_path: Path) -> None:
    journal = tmp_path / "run.journal"
    with run_daemon(tmp_path, "--journal", str(journal)) as d:
        d.send(tool_use("gone", "echo up; sleep 30"))
        d.wait_for(is_progress("gone"))
        d.send({"type": "discard"})
        d.send(tool_use("next", "echo up; sleep 30"))
        d.wait_for(is_progress("next"))
        d.proc.kill()
        d.wait_exit()
    with run_daemon(tmp_path, "--journal", str(journal)) as d:
        recovered = d.wait_for(is_type(JournalRecovered))
        assert isinstance(recovered, JournalRecovered)
        assert [u.tool_use_id for u in recovered.unfinished] == ["next"]


def test_a_journal_in_use_by_another_daemon_is_refused(tmp_path: Path) -> None:
    journal = tmp_path / "run.journal"
    with run_daemon(tmp_path, "--journal", str(journal)):
        second = subprocess.run(
            [sys.executable, "-m", "stdio_executor", "--journal", str(journal)],
            cwd=tmp_path,
            env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=30,
        )
    assert second.returncode == 2
    assert b"in use by another stdio-executor" in second.stderr
    assert second.stdout == b""
