"""Sibling cancellation, interrupt, abort and discard through the real daemon (SPEC 4)."""

from __future__ import annotations

import time
from pathlib import Path

from daemon_harness import (
    alive,
    group_members,
    is_result,
    is_type,
    run_daemon,
    tool_use,
    wait_until,
)

from stdio_executor.protocol import (
    Discarded,
    Drained,
    Interrupted,
    Progress,
    ToolResult,
    ToolStarted,
)

SIBLING_MESSAGE = (
    "<tool_use_error>Cancelled: parallel tool call Bash(ls /nonexistent-dir) errored"
    "</tool_use_error>"
)


def _gone(pid: int) -> bool:
    return not alive(pid) and not group_members(pid)


def test_failing_bash_cancels_running_and_later_siblings(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as d:
        d.send(tool_use("sleeper", "cut -d' ' -f4 /proc/self/stat; sleep 5"))
        pid = d.printed_pid("sleeper")
        d.send(tool_use("failing", "ls /nonexistent-dir"))
        sleeper = d.result("sleeper", timeout=4)
        assert sleeper.content == SIBLING_MESSAGE
        assert (sleeper.is_error, sleeper.meta.status) == (True, "sibling_cancelled")
        failing = d.result("failing")
        assert failing.is_error and failing.meta.status == "error"
        assert failing.meta.exit_code == 2
        assert wait_until(lambda: _gone(pid), timeout=3), f"group {pid} survived"

        # The turn goes on, but everything added to it later is cancelled too.
        d.send(tool_use("later", "echo never"))
        later = d.result("later")
        assert later.content == SIBLING_MESSAGE
        assert later.meta.status == "sibling_cancelled"
        d.send({"type": "drain"})
        drained = d.wait_for(is_type(Drained))
        assert isinstance(drained, Drained)
        assert drained.by_status == {"sibling_cancelled": 2, "error": 1}
        assert {e.tool_use_id for e in d.of_type(ToolStarted)} == {"sleeper", "failing"}

        # The next turn is not affected.
        d.send(tool_use("next", "echo fresh"))
        assert d.result("next").content == "fresh"


def test_grep_finding_nothing_cancels_nothing(tmp_path: Path) -> None:
    (tmp_path / "somefile").write_text("something else\n")
    with run_daemon(tmp_path) as d:
        d.send(tool_use("slow", "sleep 0.5; echo survivor"))
        d.send(tool_use("grep", "grep nothing-here somefile"))
        d.send({"type": "drain"})
        d.wait_for(is_type(Drained))
        grep = d.result("grep")
        assert grep.is_error is False
        assert grep.meta.exit_code == 1
        slow = d.result("slow")
        assert (slow.content, slow.meta.status) == ("survivor", "success")


def test_interrupt_cancels_running_bash_and_rejects_queued(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as d:
        d.send(tool_use("run", "cut -d' ' -f4 /proc/self/stat; sleep 30"))
        pid = d.printed_pid("run")
        members = group_members(pid)
        assert members  # the shell, which execs its last command (sleep) in place
        d.send(tool_use("queued", "echo x > f"))  # unsafe: waits behind the read
        d.send({"type": "interrupt", "reason": "interrupt", "request_id": "i1"})

        interrupted = d.wait_for(is_type(Interrupted))
        assert isinstance(interrupted, Interrupted)
        assert interrupted.reason == "interrupt"
        assert interrupted.request_id == "i1"
        assert sorted(interrupted.tool_use_ids) == ["queued", "run"]
        run = d.result("run", timeout=5)
        assert run.is_error and run.meta.status == "interrupted"
        assert isinstance(run.content, str) and "interrupted" in run.content
        assert str(pid) in run.content  # partial output is kept
        queued = d.result("queued")
        assert queued.is_error and queued.meta.status == "rejected"
        assert wait_until(lambda: all(not alive(p) for p in members), timeout=3)
        assert not (tmp_path / "f").exists()

        # Bash added to the interrupted turn later is rejected as well.
        d.send(tool_use("after", "echo late"))
        assert d.result("after").meta.status == "rejected"
        d.send({"type": "drain"})
        d.wait_for(is_type(Drained))
        assert {e.tool_use_id for e in d.of_type(ToolStarted)} == {"run"}


def test_abort_cancels_everything_and_rejects_later_adds(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as d:
        d.send(tool_use("a", "cut -d' ' -f4 /proc/self/stat; sleep 30"))
        d.send(tool_use("b", "cut -d' ' -f4 /proc/self/stat; sleep 30"))
        pids = [d.printed_pid("a"), d.printed_pid("b")]
        d.send(tool_use("c", "touch f"))
        d.send({"type": "interrupt"})
        interrupted = d.wait_for(is_type(Interrupted))
        assert isinstance(interrupted, Interrupted)
        assert interrupted.reason == "abort"
        assert sorted(interrupted.tool_use_ids) == ["a", "b", "c"]
        statuses = {i: d.result(i, timeout=5).meta.status for i in "abc"}
        assert statuses == {"a": "interrupted", "b": "interrupted", "c": "rejected"}
        d.send(tool_use("later", "echo no"))
        assert d.result("later").meta.status == "rejected"
        assert wait_until(lambda: all(_gone(p) for p in pids), timeout=3)
        assert not (tmp_path / "f").exists()


def test_discard_writes_no_result_of_the_turn_and_kills_its_processes(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as d:
        d.send(tool_use("d1", "cut -d' ' -f4 /proc/self/stat; sleep 30"))
        pid = d.printed_pid("d1")
        d.send(tool_use("d2", "echo queued > f"))
        d.send({"type": "discard", "request_id": "x"})
        discarded = d.wait_for(is_type(Discarded))
        assert isinstance(discarded, Discarded)
        assert sorted(discarded.tool_use_ids) == ["d1", "d2"]
        assert (discarded.request_id, discarded.turn) == ("x", 1)
        assert wait_until(lambda: _gone(pid), timeout=3), f"group {pid} survived"

        # A fresh turn starts with the next add_tool, and may even reuse an id.
        d.send(tool_use("d1", "echo again"))
        d.send(tool_use("n2", "echo fine"))
        d.send({"type": "drain"})
        drained = d.wait_for(is_type(Drained))
        assert isinstance(drained, Drained) and drained.turn == 2
        time.sleep(0.3)  # anything late from the discarded turn would show up by now
        results = d.of_type(ToolResult)
        assert [(r.tool_use_id, r.content, r.meta.turn) for r in results] == [
            ("d1", "again", 2),
            ("n2", "fine", 2),
        ]
        # Nothing of turn 1 reached the host after the discard.
        after = d.index(is_type(Discarded))
        late = [
            e
            for e in d.events[after:]
            if isinstance(e, Progress | ToolResult | ToolStarted) and e.tool_use_id == "d2"
        ]
        assert late == []
        assert d.index(is_result("d1")) > after
        assert not (tmp_path / "f").exists()


def test_interrupt_kills_a_command_that_ignores_sigterm(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as d:
        d.send(tool_use("stubborn", "trap '' TERM; cut -d' ' -f4 /proc/self/stat; sleep 30"))
        pid = d.printed_pid("stubborn")
        members = group_members(pid)
        sent = time.monotonic()
        d.send({"type": "interrupt", "reason": "interrupt"})
        result = d.result("stubborn", timeout=8)
        assert result.meta.status == "interrupted"
        assert time.monotonic() - sent < 5
        assert wait_until(lambda: not any(alive(p) for p in members), timeout=3)


def test_interrupt_with_no_turn_open_cancels_nothing(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as d:
        d.send({"type": "interrupt", "reason": "interrupt", "request_id": "i"})
        event = d.wait_for(is_type(Interrupted))
        assert isinstance(event, Interrupted)
        assert (event.tool_use_ids, event.request_id, event.turn) == ([], "i", None)
        d.send({"type": "drain", "request_id": "d"})
        drained = d.wait_for(is_type(Drained))
        assert isinstance(drained, Drained) and drained.request_id == "d"
        d.send({"type": "discard", "request_id": "x"})
        discarded = d.wait_for(is_type(Discarded))
        assert isinstance(discarded, Discarded) and discarded.tool_use_ids == []


def test_a_discarded_unsafe_call_holds_its_slot_until_its_processes_are_gone(
    tmp_path: Path,
) -> None:
    with run_daemon(tmp_path) as d:
        # Unsafe (trap is not read-only) and deaf to SIGTERM: it dies only at the SIGKILL.
        d.send(tool_use("old", "trap '' TERM; cut -d' ' -f4 /proc/self/stat; sleep 30"))
        pid = d.printed_pid("old")
        d.send({"type": "discard"})
        d.wait_for(is_type(Discarded))
        d.send(tool_use("new", "date +%s%N > started"))
        last_seen_alive = 0
        deadline = time.monotonic() + 5
        while group_members(pid) and time.monotonic() < deadline:
            last_seen_alive = time.time_ns()
            time.sleep(0.02)
        assert not group_members(pid)
        assert last_seen_alive > 0, "the old call died at once; nothing was tested"
        assert d.result("new").meta.status == "success"
        # The new turn's write did not overlap the dying one.
        assert int((tmp_path / "started").read_text()) > last_seen_alive
        assert [r.tool_use_id for r in d.of_type(ToolResult)] == ["new"]


def test_sibling_message_cuts_a_long_command_to_40_characters(tmp_path: Path) -> None:
    failing = "ls /nonexistent-directory-with-a-rather-long-name-1 /nonexistent-2"
    with run_daemon(tmp_path) as d:
        d.send(tool_use("sleeper", "cut -d' ' -f4 /proc/self/stat; sleep 5"))
        d.printed_pid("sleeper")
        d.send(tool_use("failing", failing))
        assert d.result("sleeper", timeout=4).content == (
            f"<tool_use_error>Cancelled: parallel tool call Bash({failing[:40]}\u2026) errored"
            "</tool_use_error>"
        )
