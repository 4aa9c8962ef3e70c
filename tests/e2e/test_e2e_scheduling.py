"""Scheduling and result order, seen through the real daemon (SPEC sections 3 and 4)."""

from __future__ import annotations

import os
from pathlib import Path

from daemon_harness import is_progress, is_result, is_started, is_type, run_daemon, tool_use

from stdio_executor.protocol import Drained, ErrorEvent, ToolResult, ToolStarted


def test_read_only_calls_run_in_parallel_and_results_come_in_add_order(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as d:
        d.send(tool_use("a", "sleep 0.5; echo one"))
        d.send(tool_use("b", "echo two"))
        d.send({"type": "drain", "request_id": "r1"})
        drained = d.wait_for(is_type(Drained))
        d.close_stdin()
        assert d.wait_exit() == 0

        assert d.events[0] is d.ready()
        a, b = d.result("a"), d.result("b")
        assert (a.content, a.is_error, a.meta.status) == ("one", False, "success")
        assert (b.content, b.is_error, b.meta.status) == ("two", False, "success")
        # b finished long before a, yet its result waits for a's.
        assert d.index(is_result("a")) < d.index(is_result("b"))
        assert b.meta.duration_ms is not None and a.meta.duration_ms is not None
        assert b.meta.duration_ms < a.meta.duration_ms
        # Both started before either finished.
        first_result = d.index(is_result("a"))
        assert d.index(is_started("a")) < first_result
        assert d.index(is_started("b")) < first_result
        assert d.index(is_started("b")) < d.index(is_progress("a"))  # a was still running
        assert isinstance(drained, Drained)
        assert drained.request_id == "r1"
        assert (drained.turn, drained.results, drained.errors) == (1, 2, 0)
        assert drained.by_status == {"success": 2}
        assert isinstance(d.events[-1], Drained)


def test_unsafe_call_waits_for_running_reads_and_runs_alone(tmp_path: Path) -> None:
    # Each command prints or records clock readings (ns) so overlap is measured, not guessed.
    with run_daemon(tmp_path) as d:
        d.send(tool_use("r1", "sleep 0.4; date +%s%N"))
        d.send(tool_use("r2", "sleep 0.3; date +%s%N"))
        d.send(tool_use("w", "date +%s%N > w_start; sleep 0.2; echo x > f; date +%s%N > w_end"))
        d.send(tool_use("r3", "date +%s%N; cat f"))
        d.send({"type": "drain"})
        d.wait_for(is_type(Drained))

        r1_end = int(str(d.result("r1").content))
        r2_end = int(str(d.result("r2").content))
        w_start = int((tmp_path / "w_start").read_text())
        w_end = int((tmp_path / "w_end").read_text())
        r3_content = d.result("r3").content
        assert isinstance(r3_content, str)
        r3_start, r3_saw = r3_content.split("\n")
        # The write starts only once both reads are done...
        assert w_start > max(r1_end, r2_end)
        # ...and the read queued behind it does not overtake it: it sees the file.
        assert int(r3_start) > w_end
        assert r3_saw == "x"
        # On the wire a start may precede, in the same batch, the result of the call whose
        # end freed its slot; what matters is that it follows that call's last output.
        assert d.index(is_started("w")) > d.index(is_progress("r1"))
        assert d.index(is_started("r3")) > d.index(is_started("w"))
        assert [r.tool_use_id for r in d.of_type(ToolResult)] == ["r1", "r2", "w", "r3"]
        assert all(r.meta.status == "success" for r in d.of_type(ToolResult))


def test_duplicate_id_is_refused_and_the_first_call_is_unaffected(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as d:
        d.send(tool_use("a", "sleep 0.3; echo first"))
        dup = tool_use("a", "echo second")
        dup["request_id"] = "r-dup"
        d.send(dup)
        d.send({"type": "drain"})
        d.wait_for(is_type(Drained))

        errors = d.of_type(ErrorEvent)
        assert [(e.code, e.tool_use_id, e.line, e.request_id) for e in errors] == [
            ("duplicate_tool_use_id", "a", 2, "r-dup")
        ]
        results = d.of_type(ToolResult)
        assert [(r.tool_use_id, r.content) for r in results] == [("a", "first")]
        assert len(d.of_type(ToolStarted)) == 1


def test_cd_persists_into_later_calls(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    with run_daemon(tmp_path) as d:
        d.send(tool_use("cd", "cd sub"))
        d.send(tool_use("pwd", "pwd"))
        d.send({"type": "drain"})
        d.wait_for(is_type(Drained))
        assert d.result("cd").meta.status == "success"
        assert d.result("pwd").content == os.path.realpath(tmp_path / "sub")

        # The change outlives the turn too.
        d.send(tool_use("pwd2", "pwd"))
        assert d.result("pwd2").content == os.path.realpath(tmp_path / "sub")


def test_unknown_tool_and_invalid_input_get_error_results_in_order(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as d:
        d.send(tool_use("ok", "sleep 0.2; echo fine"))
        d.send(tool_use("nope", {"x": 1}, name="Nope"))
        d.send(tool_use("bad", {"description": "no command here"}))
        d.send({"type": "drain"})
        d.wait_for(is_type(Drained))

        nope, bad = d.result("nope"), d.result("bad")
        assert nope.content == (
            "<tool_use_error>Error: No such tool available: Nope</tool_use_error>"
        )
        assert (nope.is_error, nope.meta.status) == (True, "unknown_tool")
        assert isinstance(bad.content, str)
        assert bad.content.startswith("<tool_use_error>InputValidationError: ")
        assert "`command`" in bad.content
        assert (bad.is_error, bad.meta.status) == (True, "invalid_input")
        # Invalid Bash input is a Bash error: it cancels the sibling still running.
        ok = d.result("ok")
        assert ok.meta.status == "sibling_cancelled"
        assert [r.tool_use_id for r in d.of_type(ToolResult)] == ["ok", "nope", "bad"]
        assert {e.tool_use_id for e in d.of_type(ToolStarted)} == {"ok"}


def test_barrier_order_lets_a_finished_result_pass_a_running_read(tmp_path: Path) -> None:
    with run_daemon(tmp_path, "--result-order", "barrier") as d:
        d.send(tool_use("slow", "sleep 0.5; echo slow"))
        d.send(tool_use("fast", "echo fast"))
        d.send({"type": "drain"})
        d.wait_for(is_type(Drained))
        assert [r.tool_use_id for r in d.of_type(ToolResult)] == ["fast", "slow"]


def test_max_concurrency_bounds_parallel_reads(tmp_path: Path) -> None:
    with run_daemon(tmp_path, "--max-concurrency", "1") as d:
        assert d.ready().limits.max_concurrency == 1
        d.send(tool_use("one", "sleep 0.3; date +%s%N"))
        d.send(tool_use("two", "date +%s%N"))
        d.send({"type": "drain"})
        d.wait_for(is_type(Drained))
        assert d.index(is_started("two")) > d.index(is_progress("one"))
        assert int(str(d.result("two").content)) > int(str(d.result("one").content))


def test_a_mixed_fan_out_gets_exactly_one_result_each_in_add_order(tmp_path: Path) -> None:
    ids = [f"t{i:02d}" for i in range(30)]
    with run_daemon(tmp_path) as d:
        for i, tool_use_id in enumerate(ids):
            command = f"echo {i} >> log" if i % 7 == 3 else f"echo {i}"
            d.send(tool_use(tool_use_id, command))
        d.send({"type": "drain"})
        drained = d.wait_for(is_type(Drained), timeout=20)
        assert isinstance(drained, Drained) and drained.results == 30
        results = d.of_type(ToolResult)
        assert [r.tool_use_id for r in results] == ids
        assert all(r.meta.status == "success" for r in results)
        assert (tmp_path / "log").read_text().split() == ["3", "10", "17", "24"]
        assert sorted(e.tool_use_id for e in d.of_type(ToolStarted)) == ids
