"""Containment over real processes: nothing a call starts outlives it, nothing the daemon
starts outlives the daemon, whatever the processes did to escape (docs/sandbox.md).

Each case runs one command that starts every escape technique at once, each escapee
carrying its own token in its argv (``sleep 3001``, ``sleep 3002``...) and the daemon's
mark in its environment; after the kill path under test, ``/proc`` is searched for them.
So every kill path is crossed with every technique in one daemon per path.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import msgspec
import pytest
from daemon_harness import (
    REPO_ROOT,
    DaemonProcess,
    is_result,
    marked_processes,
    run_daemon,
    tool_use,
    wait_until,
)

from stdio_executor.protocol import Discarded, ToolResult

# One escapee per technique; each ends with its token so it can be found. All are started in
# the background and given a moment to detach before the kill path runs.
ESCAPES = {
    "background": "sleep 3001 &",
    "setsid": "setsid sleep 3002 &",
    "setsid-fork": "setsid -f sleep 3003",
    "subshell-setsid": "( setsid sleep 3004 & ) ",
    "double-fork": "( ( sleep 3005 & ) & )",
    "nohup": "nohup sleep 3006 >/dev/null 2>&1 &",
    "ignores-term": "( trap '' TERM HUP INT; exec sleep 3007 ) &",
    "new-group": "( set -m; sleep 3008 & )",
    "python-daemon": (
        f"{sys.executable} -c 'import os,time\nif os.fork(): os._exit(0)\nos.setsid()\n"
        "if os.fork(): os._exit(0)\ntime.sleep(3009)' &"
    ),
}
TOKENS = [f"300{i}" for i in range(1, 10)]
# A token as a whole number: the spawner's command line holds the daemon's pid, which may
# contain one (pid 30051 and "3005").
_TOKEN = re.compile(rb"(?<!\d)(?:" + b"|".join(t.encode() for t in TOKENS) + rb")(?!\d)")
# The escapees are all started, then the command goes on (or ends) as the case needs.
SPAWN = "\n".join(ESCAPES.values()) + "\nsleep 0.3; echo spawned"
SETTLE_S = 5.0


def escapees(mark: str) -> list[int]:
    """The marked processes that are one of the escapees (not the daemon or the spawner)."""
    found = []
    for pid in marked_processes(mark):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if _TOKEN.search(cmdline):
            found.append(pid)
    return found


def describe(pids: list[int]) -> list[str]:
    """What a survivor is (state, parent, namespace, command line), so that a rare failure
    says enough to be understood from a CI log alone."""
    out = []
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")[:120]
            pidns = os.readlink(f"/proc/{pid}/ns/pid")
        except OSError as exc:
            out.append(f"{pid}: gone ({exc.strerror})")
            continue
        state, ppid, nspid = (fields.get(k, "?").strip() for k in ("State", "PPid", "NSpid"))
        out.append(f"{pid}: state {state}, ppid {ppid}, NSpid {nspid}, {pidns}, {cmdline!r}")
    return out


def all_started(d: DaemonProcess) -> None:
    assert wait_until(lambda: "spawned" in d.output_of("run"), timeout=15)
    assert wait_until(lambda: len(escapees(d.mark)) >= len(ESCAPES), timeout=5), (
        "not every escapee started: the case would test nothing"
    )


# Every path runs on the PID-namespace layer (what this machine has); the subreaper fallback
# (machines without namespaces) on the paths that exercise its two halves: the init killing
# its descendants when the call ends or is stopped, and the spawner's sweep when the daemon
# dies. Fewer daemons keep CI fast.
SUBREAPER_PATHS = {"success", "interrupt", "sigterm", "sigkill"}
# The layer an unprivileged daemon gets (a user + PID namespace per call, the command pid 1,
# no spawner namespace around them): the paths where it differs from root's.
USERNS_PATHS = {"error", "timeout", "sigkill"}


def _layer(monkeypatch: pytest.MonkeyPatch, containment: str) -> None:
    if containment in ("subreaper", "userns"):
        monkeypatch.setenv("STDIO_EXECUTOR_CONTAINMENT", containment)


def _cases(paths: list[str]) -> list[tuple[str, str]]:
    return (
        [("namespace", p) for p in paths]
        + [("subreaper", p) for p in paths if p in SUBREAPER_PATHS]
        + [("userns", p) for p in paths if p in USERNS_PATHS]
    )


# ---------------------------------------------------------------- the call ends


@pytest.mark.parametrize(
    ("containment", "path"),
    _cases(["success", "error", "timeout", "interrupt", "discard", "sibling"]),
)
def test_nothing_a_call_started_outlives_the_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, containment: str, path: str
) -> None:
    _layer(monkeypatch, containment)
    command = {
        "success": SPAWN,
        "error": SPAWN + "; exit 3",
        "timeout": SPAWN + "; sleep 30",
        "interrupt": SPAWN + "; sleep 30",
        "discard": SPAWN + "; sleep 30",
        # Siblings run in parallel only when both look read-only: `git diff` does, and runs
        # the repository's textconv driver, which starts the escapees. (Read-only commands
        # run with fsmonitor and external diffs switched off: readonly.harden_git.)
        "sibling": "git diff",
    }[path]
    if path == "sibling":
        _repository_whose_status_escapes(tmp_path)
    with run_daemon(tmp_path) as d:
        d.send(tool_use("run", {"command": command, "timeout": 4000}))
        if path not in ("success", "error"):
            if path == "sibling":
                assert wait_until(lambda: len(escapees(d.mark)) >= len(ESCAPES), timeout=15)
            else:
                all_started(d)
        if path == "interrupt":
            d.send({"type": "interrupt"})
        elif path == "discard":
            d.send({"type": "discard"})
        elif path == "sibling":
            d.send(tool_use("bad", "ls /nonexistent-for-the-sibling-case"))
        if path == "discard":
            d.wait_for(lambda e: isinstance(e, Discarded), timeout=15)
        else:
            result = d.wait_for(is_result("run"), timeout=15)
            assert isinstance(result, ToolResult)
            if path == "sibling":
                assert result.meta.status == "sibling_cancelled"
        assert wait_until(lambda: not escapees(d.mark), timeout=SETTLE_S), (
            f"survived the call ({path}, {containment}): {describe(escapees(d.mark))}"
        )


def _repository_whose_status_escapes(workspace: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    hook = workspace / "textconv.sh"
    hook.write_text("#!/bin/bash\nexec >/dev/null 2>&1\n" + SPAWN + "\nsleep 30\n")
    hook.chmod(0o755)
    tracked = workspace / "tracked.txt"
    tracked.write_text("one\n")
    for args in (
        ["init", "-q"],
        ["add", "tracked.txt"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"],
        ["config", "diff.esc.textconv", str(hook)],
    ):
        subprocess.run(["git", *args], cwd=workspace, check=True, capture_output=True)
    (workspace / ".gitattributes").write_text("tracked.txt diff=esc\n")
    tracked.write_text("two\n")


# -------------------------------------------------------------- the daemon ends


@pytest.mark.parametrize(
    ("containment", "path"), _cases(["eof", "sigterm", "sigint", "sigkill", "stdout-closed"])
)
def test_nothing_the_daemon_started_outlives_the_daemon(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, containment: str, path: str
) -> None:
    _layer(monkeypatch, containment)
    with run_daemon(tmp_path) as d:
        d.send(tool_use("run", SPAWN + "; sleep 30"))
        all_started(d)
        spawner_and_all = marked_processes(d.mark)
        if path == "eof":
            d.send({"type": "interrupt"})  # EOF waits for the turn; end it, then close
            d.close_stdin()
        elif path == "sigterm":
            d.proc.send_signal(signal.SIGTERM)
        elif path == "sigint":
            d.proc.send_signal(signal.SIGINT)
        elif path == "sigkill":
            d.proc.kill()
        else:
            d.close_stdout()
        d.wait_exit(timeout=15)
        assert wait_until(lambda: not marked_processes(d.mark), timeout=SETTLE_S), (
            f"outlived the daemon ({path}, {containment}): {marked_processes(d.mark)} "
            f"of {spawner_and_all}"
        )


# ------------------------------------------------------------- the host dies


def _host_script(tmp_path: Path, when: str) -> Path:
    """A host that starts the daemon on a pipe the daemon itself keeps open (so only the
    parent's death can tell it), sends a call that starts the escapees, and dies:

    - "before-ready": once the daemon has opened its settings file, a FIFO, which it reads
      before writing ``ready``; a helper the host leaves behind answers it a second later,
      when the host is gone;
    - "after-ready": as soon as ``ready`` is written."""
    fifo = tmp_path / "in"
    os.mkfifo(fifo)
    settings = tmp_path / "settings.json"
    os.mkfifo(settings)
    add = msgspec.json.encode(tool_use("run", SPAWN + "; sleep 30")).decode()
    (tmp_path / "add.json").write_text(add + "\n")
    script = tmp_path / "host.sh"
    lines = [
        'exec 3<>"$1"',
        f'"{sys.executable}" -m stdio_executor --permission-mode bypassPermissions '
        f'--settings "{settings}" --spill-dir "{tmp_path}/.spill" <&3 >"$2" 2>"$2.err" &',
        "echo $!",
        f'cat "{tmp_path}/add.json" >&3',
    ]
    if when == "before-ready":
        lines += [
            f'exec 4>"{settings}"',  # returns once the daemon has opened it: it is running
            "setsid bash -c 'sleep 1; echo {} >&4' &",
        ]
    else:
        lines += [
            "setsid bash -c 'echo {} >&4' 4>\"" + str(settings) + '" &',
            'until grep -q \'"ready"\' "$2" 2>/dev/null; do sleep 0.01; done',
        ]
    script.write_text("\n".join(lines) + "\n")
    return script


@pytest.mark.parametrize("when", ["before-ready", "after-ready"])
def test_a_host_that_dies_during_start_up_is_noticed(tmp_path: Path, when: str) -> None:
    script = _host_script(tmp_path, when)
    out = tmp_path / "out"
    mark = uuid.uuid4().hex
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), STDIO_EXECUTOR_E2E_MARK=mark)
    host = subprocess.Popen(
        ["/bin/bash", str(script), str(tmp_path / "in"), str(out)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
    )
    assert host.stdout is not None
    try:
        daemon_pid = int(host.stdout.readline())
        assert host.wait(timeout=30) == 0
        assert wait_until(lambda: not _alive(daemon_pid), timeout=15), "daemon outlived host"
        assert wait_until(lambda: not marked_processes(mark), timeout=SETTLE_S), (
            f"outlived the host ({when}): {marked_processes(mark)}"
        )
        events = [msgspec.json.decode(line) for line in out.read_bytes().splitlines()]
        assert events and events[0]["type"] == "ready"
    finally:
        host.stdout.close()
        for pid in marked_processes(mark):
            os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


# ------------------------------------------- started while its line is read, cut at once


@pytest.mark.parametrize("command", ["interrupt", "discard"])
def test_a_call_started_while_admitted_and_cancelled_in_the_same_read_leaves_nothing(
    tmp_path: Path, command: str
) -> None:
    """Bash starts its shell while its line is admitted (``run_inline``), before its task
    runs. An interrupt (or discard) in the same read cancels the call before that task
    has run: the task still takes the started shell over and stops it, and nothing the
    shell started survives."""
    with run_daemon(tmp_path) as d:
        # A first call, so that the sandbox is built (a call finding it unbuilt is left
        # to its task, which builds it in a thread), and its turn ends.
        d.send(tool_use("first", "true"))
        d.wait_for(is_result("first"), timeout=15)
        d.send({"type": "drain"})
        add = msgspec.json.encode(tool_use("run", SPAWN + "; sleep 30")) + b"\n"
        d.send_bytes(add + msgspec.json.encode({"type": command}) + b"\n")
        if command == "discard":
            d.wait_for(lambda e: isinstance(e, Discarded), timeout=15)
        else:
            result = d.wait_for(is_result("run"), timeout=15)
            assert isinstance(result, ToolResult) and result.meta.status == "interrupted"
        assert wait_until(lambda: not escapees(d.mark), timeout=SETTLE_S), (
            f"survived the call ({command}): {describe(escapees(d.mark))}"
        )
        if command == "interrupt":
            d.send({"type": "drain"})  # the interrupted turn ends; the next is a new turn
        d.send(tool_use("next", "echo still here"))
        following = d.wait_for(is_result("next"), timeout=15)
        assert isinstance(following, ToolResult) and following.content == "still here"


# ------------------------------------------------------------ the spawner dies alone


@pytest.mark.parametrize("containment", ["namespace", "userns"])
def test_a_spawner_killed_alone_takes_its_calls_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, containment: str
) -> None:
    """Every spawner process (the one the daemon started, its pid-1 fork, the sandbox
    helpers) SIGKILLed at once, as `pkill -9 -f _spawner` would: no process of the running
    call survives (the spawner's PID namespace holds every call's, or each command has a
    parent-death signal), the call gets its result, and the next call runs."""
    _layer(monkeypatch, containment)
    with run_daemon(tmp_path) as d:
        d.send(tool_use("run", SPAWN + "; sleep 30"))
        all_started(d)
        spawners = [
            pid
            for pid in marked_processes(d.mark)
            if b"_spawner.py" in Path(f"/proc/{pid}/cmdline").read_bytes()
        ]
        assert spawners
        for pid in spawners:
            with contextlib.suppress(ProcessLookupError):  # gone with the one before
                os.kill(pid, signal.SIGKILL)
        result = d.wait_for(is_result("run"), timeout=15)
        assert isinstance(result, ToolResult) and result.is_error
        assert wait_until(lambda: not escapees(d.mark), timeout=SETTLE_S), (
            f"survived the spawner ({containment}): {describe(escapees(d.mark))}"
        )
        d.send({"type": "drain"})  # the failed call's turn ends; the next is a new turn
        d.send(tool_use("next", "echo still here"))
        following = d.wait_for(is_result("next"), timeout=15)
        assert isinstance(following, ToolResult) and following.content == "still here"
