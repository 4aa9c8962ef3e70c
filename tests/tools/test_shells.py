"""Background shells over the real daemon: Bash run_in_background, BashOutput, TaskOutput,
KillShell (and KillBash), TaskStop, list_jobs, and the job_started/job_exited events."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from external_harness import (
    alive,
    drain,
    group_members,
    is_type,
    marked_processes,
    run_daemon,
    tool_use,
    wait_until,
)

from stdio_executor.protocol import JobExited, Jobs, JobStarted, ToolResult

TIMEOUT = 15.0


def _start(daemon: Any, tool_use_id: str, command: str) -> JobStarted:
    daemon.send(tool_use(tool_use_id, {"command": command, "run_in_background": True}))
    result = daemon.result(tool_use_id)
    started = daemon.wait_for(
        lambda e: isinstance(e, JobStarted) and e.job.tool_use_id == tool_use_id
    )
    assert isinstance(started, JobStarted)
    assert not result.is_error and result.meta.exit_code is None
    assert str(result.content).startswith(
        f"Command running in background with ID: {started.job.job_id}. Output is being "
        f"written to: {started.job.output_path}."
    )
    return started


def _exited(daemon: Any, job_id: str) -> JobExited:
    event = daemon.wait_for(lambda e: isinstance(e, JobExited) and e.job.job_id == job_id, TIMEOUT)
    assert isinstance(event, JobExited)
    return event


def _call(daemon: Any, tool_use_id: str, name: str, raw: dict[str, Any]) -> ToolResult:
    daemon.send(tool_use(tool_use_id, raw, name=name))
    result: ToolResult = daemon.result(tool_use_id, TIMEOUT)
    return result


def test_bash_output_gives_what_is_new_then_the_exit(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as daemon:
        job = _start(daemon, "bg", "echo one; until [ -e go ]; do sleep 0.02; done; echo two")
        assert job.job.job_id == "bash_1" and job.job.status == "running"
        assert wait_until(lambda: Path(job.job.output_path).read_bytes() == b"one\n", TIMEOUT)
        first = _call(daemon, "o1", "BashOutput", {"bash_id": "bash_1"})
        assert first.content == "<status>running</status>\n\n<stdout>\none\n</stdout>"
        again = _call(daemon, "o2", "BashOutput", {"bash_id": "bash_1"})
        assert again.content == "<status>running</status>"  # nothing new since the last read
        (tmp_path / "go").touch()
        assert _exited(daemon, "bash_1").job.exit_code == 0
        last = _call(daemon, "o3", "BashOutput", {"bash_id": "bash_1"})
        assert last.content == (
            "<status>completed</status>\n\n<exit_code>0</exit_code>\n\n<stdout>\ntwo\n</stdout>"
        )
        drain(daemon, "d1")


def test_a_job_runs_to_its_end_and_the_host_is_told(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as daemon:
        _start(daemon, "bg", "echo one; echo two >&2; exit 3")
        exited = _exited(daemon, "bash_1")
        assert exited.job.status == "failed" and exited.job.exit_code == 3
        assert exited.job.output_bytes == 8 and exited.job.unread_bytes == 8
        out = _call(daemon, "o1", "BashOutput", {"bash_id": "bash_1"})
        assert out.content == (
            "<status>failed</status>\n\n<exit_code>3</exit_code>\n\n<stdout>\none\ntwo\n</stdout>"
        )
        assert not out.is_error and out.meta.exit_code == 3
        _start(daemon, "ok", "true")
        assert _exited(daemon, "bash_2").job.status == "completed"
        daemon.send({"type": "list_jobs", "request_id": "l1"})
        listing = daemon.wait_for(is_type(Jobs))
        assert isinstance(listing, Jobs) and listing.request_id == "l1"
        assert [(j.job_id, j.status, j.exit_code, j.unread_bytes) for j in listing.jobs] == [
            ("bash_1", "failed", 3, 0),
            ("bash_2", "completed", 0, 0),
        ]
        drain(daemon, "d1")


def test_bash_output_filter_keeps_matching_lines_and_passes_over_the_rest(
    tmp_path: Path,
) -> None:
    with run_daemon(tmp_path) as daemon:
        _start(daemon, "bg", "printf 'ok 1\\nERROR a\\nok 2\\nERROR b\\n'")
        _exited(daemon, "bash_1")
        out = _call(daemon, "o1", "BashOutput", {"bash_id": "bash_1", "filter": "^ERROR"})
        assert out.content == (
            "<status>completed</status>\n\n<exit_code>0</exit_code>\n\n"
            "<stdout>\nERROR a\nERROR b\n</stdout>"
        )
        rest = _call(daemon, "o2", "BashOutput", {"bash_id": "bash_1"})
        assert rest.content == "<status>completed</status>\n\n<exit_code>0</exit_code>"
        bad = _call(daemon, "o3", "BashOutput", {"bash_id": "bash_1", "filter": "(unclosed"})
        assert bad.meta.status == "invalid_input"
        assert "The parameter `filter` is not a valid regular expression" in str(bad.content)
        drain(daemon, "d1")


def test_large_output_is_previewed_with_the_log_named(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as daemon:
        job = _start(daemon, "bg", "head -c 100000 /dev/zero | tr '\\0' x; echo; echo END")
        _exited(daemon, "bash_1")
        out = _call(daemon, "o1", "BashOutput", {"bash_id": "bash_1"})
        text = str(out.content)
        assert out.meta.truncated and out.meta.output_path == job.job.output_path
        assert out.meta.output_bytes == 100_005
        assert len(text.encode()) < 30_000
        assert f"all of the job's output is in {job.job.output_path}" in text
        assert text.rstrip().endswith("END\n</stdout>".rstrip())
        drain(daemon, "d1")


def test_kill_shell_stops_the_job_and_everything_it_started(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as daemon:
        job = _start(daemon, "bg", "sleep 60 & sleep 60 & echo started; wait")
        pid = job.job.pid
        assert wait_until(lambda: len(group_members(pid)) >= 3, TIMEOUT)
        killed = _call(daemon, "k1", "KillShell", {"shell_id": "bash_1"})
        assert json.loads(str(killed.content)) == {
            "message": "Successfully killed shell: bash_1 (sleep 60 & sleep 60 & echo started; "
            "wait)",
            "shell_id": "bash_1",
        }
        assert not group_members(pid)
        exited = _exited(daemon, "bash_1")
        assert exited.job.status == "killed"
        again = _call(daemon, "k2", "KillBash", {"shell_id": "bash_1"})
        assert again.is_error and again.content == (
            "<tool_use_error>Shell bash_1 is not running, so cannot be killed "
            "(status: killed)</tool_use_error>"
        )
        unknown = _call(daemon, "k3", "KillShell", {"shell_id": "bash_9"})
        assert unknown.content == "<tool_use_error>No shell found with ID: bash_9</tool_use_error>"
        missing = _call(daemon, "o1", "BashOutput", {"bash_id": "nope"})
        assert missing.content == "<tool_use_error>No shell found with ID: nope</tool_use_error>"
        drain(daemon, "d1")


def test_kill_shell_reaches_a_process_that_left_the_job_s_session(tmp_path: Path) -> None:
    def escaped(mark: str) -> list[int]:
        # The job may run in a PID namespace of its own, so its `$!` is no pid of ours:
        # find the process by its command line among the daemon's descendants.
        found = []
        for pid in marked_processes(mark):
            with contextlib.suppress(OSError):  # it may exit while we look
                if Path(f"/proc/{pid}/cmdline").read_bytes() == b"sleep\x006123\x00":
                    found.append(pid)
        return found

    with run_daemon(tmp_path) as daemon:
        _start(daemon, "bg", "setsid sleep 6123 & wait")
        assert wait_until(lambda: len(escaped(daemon.mark)) == 1, TIMEOUT)
        killed = _call(daemon, "k", "TaskStop", {"task_id": "bash_1"})
        assert not killed.is_error
        assert not [p for p in escaped(daemon.mark) if alive(p)]  # gone before the answer
        drain(daemon, "d1")


def test_task_output_waits_times_out_or_does_not_wait(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as daemon:
        _start(daemon, "bg", "echo hi; sleep 60")
        assert wait_until(lambda: (tmp_path / ".spill").exists(), TIMEOUT)
        waited = _call(daemon, "t1", "TaskOutput", {"task_id": "bash_1", "timeout": 200})
        assert str(waited.content).startswith(
            "<retrieval_status>timeout</retrieval_status>\n\n<task_id>bash_1</task_id>\n\n"
            "<task_type>local_bash</task_type>\n\n<status>running</status>"
        )
        now = _call(daemon, "t2", "TaskOutput", {"task_id": "bash_1", "block": False})
        assert str(now.content).startswith("<retrieval_status>not_ready</retrieval_status>")
        zero = _call(daemon, "t0", "TaskOutput", {"task_id": "bash_1", "timeout": 0})
        assert str(zero.content).startswith("<retrieval_status>timeout</retrieval_status>")
        stopped = _call(daemon, "s1", "TaskStop", {"task_id": "bash_1"})
        assert json.loads(str(stopped.content)) == {
            "message": "Successfully stopped task: bash_1 (echo hi; sleep 60)",
            "task_id": "bash_1",
            "task_type": "local_bash",
        }
        _start(daemon, "bg2", "sleep 0.2; echo done")
        done = _call(daemon, "t3", "TaskOutput", {"task_id": "bash_2"})  # blocks by default
        assert done.content == (
            "<retrieval_status>success</retrieval_status>\n\n<task_id>bash_2</task_id>\n\n"
            "<task_type>local_bash</task_type>\n\n<status>completed</status>\n\n"
            "<exit_code>0</exit_code>\n\n<output>\ndone\n</output>"
        )
        old_name = _call(daemon, "s2", "TaskStop", {"shell_id": "bash_2"})
        assert old_name.content == (
            "<tool_use_error>Task bash_2 is not running (status: completed)</tool_use_error>"
        )
        neither = _call(daemon, "s3", "TaskStop", {})
        assert neither.meta.status == "invalid_input"
        assert "The required parameter `task_id` is missing" in str(neither.content)
        unknown = _call(daemon, "t4", "TaskOutput", {"task_id": "zzz"})
        assert unknown.content == "<tool_use_error>No task found with ID: zzz</tool_use_error>"
        drain(daemon, "d1")


def test_an_interrupt_stops_a_blocked_task_output_but_not_the_job(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as daemon:
        job = _start(daemon, "bg", "sleep 60")
        daemon.send(tool_use("t1", {"task_id": "bash_1", "timeout": 60_000}, name="TaskOutput"))
        daemon.started("t1")
        daemon.send({"type": "interrupt", "reason": "interrupt"})
        assert daemon.result("t1").meta.status == "interrupted"
        assert group_members(job.job.pid)  # the job itself goes on
        drain(daemon, "d1")


def test_jobs_die_with_the_daemon_and_are_journaled(tmp_path: Path) -> None:
    journal = tmp_path / "journal.ndjson"
    with run_daemon(tmp_path, "--journal", str(journal)) as daemon:
        job = _start(daemon, "bg", "sleep 60 & sleep 60")
        assert wait_until(lambda: len(group_members(job.job.pid)) >= 2, TIMEOUT)
        _start(daemon, "quick", "exit 0")
        _exited(daemon, "bash_2")
        daemon.close_stdin()
        assert daemon.wait_exit() == 0
        assert wait_until(lambda: not group_members(job.job.pid), 5)
        assert not marked_processes(daemon.mark)
    records = [json.loads(line) for line in journal.read_text().splitlines()]
    kinds = [r["msg"]["type"] for r in records if r["dir"] == "out"]
    assert kinds.count("job_started") == 2 and kinds.count("job_exited") == 1
