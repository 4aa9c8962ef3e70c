"""LS and Grep stay inside the directory the permission check judged (the real daemon).

The class of escape: the path is judged, then a symlink on it changes before (or while) the
tool walks it. Each test is one way in: the listed or searched directory is itself a link
out (judged as before: asks or is denied), it is swapped for one after the check (an ask
rule holds the call while the test swaps it, as the Read/Glob race tests do), a
subdirectory is a link out, a subdirectory is swapped for one during the walk, and a path
spelled with ``..``. A hard link to an outside file is a file inside (the same inode under a
name inside the workspace): not an escape, and not tested as one.
"""

from __future__ import annotations

import errno
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from daemon_harness import DaemonProcess, run_daemon, tool_use
from test_e2e_fast_path import SECRET, answer, outside, request, status, ws

from stdio_executor.protocol import ToolResult
from stdio_executor.sandbox.kernel import probe
from stdio_executor.tools.files import listing

BYPASS = ("--permission-mode", "bypassPermissions")
__all__ = ["outside", "ws"]  # fixtures shared with the Read/Glob race tests


def call(d: DaemonProcess, tool_use_id: str, name: str, **raw: Any) -> ToolResult:
    d.send(tool_use(tool_use_id, raw, name=name))
    return d.result(tool_use_id)


def ask_rule(tool: str) -> tuple[str, str]:
    return ("--settings", json.dumps({"permissions": {"ask": [tool]}}))


def swap_for_link(path: Path, target: Path) -> None:
    """``path`` (a directory, a file or a link) replaced by a symlink to ``target``."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    else:
        path.rename(path.with_name(path.name + ".old"))
    path.symlink_to(target)


def leaked(result: ToolResult) -> bool:
    text = str(result.content)
    return SECRET in text or "secret.txt" in text


# ------------------------------------------------------------------------------------ LS


def test_ls_of_a_link_out_asks_or_is_denied_as_before(ws: Path, outside: Path) -> None:
    (ws / "out").symlink_to(outside)
    with run_daemon(ws, *BYPASS) as d:
        result = call(d, "ls", "LS", path=str(ws / "out"))
        assert status(result) == (True, "denied") and not leaked(result), result
    with run_daemon(ws, "--permission-mode", "default") as d:
        d.send(tool_use("ls", {"path": str(ws / "out")}, name="LS"))
        req = request(d, "ls")
        assert "outside the workspace" in req.reason
        answer(d, req, "deny")
        assert status(d.result("ls")) == (True, "denied")


def test_ls_of_a_directory_swapped_for_a_link_after_the_check_is_denied(
    ws: Path, outside: Path
) -> None:
    with run_daemon(ws, *BYPASS, *ask_rule("LS")) as d:
        d.send(tool_use("ls", {"path": str(ws / "sub")}, name="LS"))
        req = request(d, "ls")
        swap_for_link(ws / "sub", outside)
        answer(d, req, "allow")
        result = d.result("ls")
    assert status(result) == (True, "denied"), result
    assert not leaked(result)
    assert str(outside) in str(result.content)  # where the path led


def test_ls_lists_a_link_out_below_it_and_does_not_enter_it(ws: Path, outside: Path) -> None:
    (ws / "sub" / "out").symlink_to(outside)
    with run_daemon(ws, *BYPASS) as d:
        result = call(d, "ls", "LS", path=str(ws))
    assert not result.is_error, result
    assert "    - out\n" in str(result.content) and not leaked(result)


def test_ls_with_dot_dot_components_is_judged_where_it_leads(ws: Path, outside: Path) -> None:
    with run_daemon(ws, *BYPASS) as d:
        inside = call(d, "in", "LS", path=str(ws / "sub" / ".." / "sub"))
        assert "x.txt" in str(inside.content), inside
        out = call(d, "out", "LS", path=f"{ws}/sub/../../{outside.name}")
        assert status(out) == (True, "denied") and not leaked(out), out


def test_ls_does_not_enter_a_directory_swapped_for_a_link_during_the_walk(
    ws: Path, outside: Path
) -> None:
    """The walk's cancellation check runs every few hundred entries; here it is the moment
    the directory ``a`` (already listed as a directory, not yet entered) becomes a link."""
    (ws / "a").mkdir()
    (ws / "a" / "inner.txt").write_text("inner\n")
    for i in range(300):
        (ws / f"f{i:03}").write_text("")

    def swap() -> None:
        if not (ws / "a").is_symlink():
            swap_for_link(ws / "a", outside)

    entries, _ = listing._walk(str(ws), (), swap)
    assert (ws / "a").is_symlink()  # the swap happened mid-walk
    assert "a/" in entries
    assert not [e for e in entries if "secret" in e or "inner" in e], entries


# ---------------------------------------------------------------------------------- Grep

_SANDBOX = probe()
needs_landlock = pytest.mark.skipif(
    not _SANDBOX.landlock_abi, reason=f"no Landlock here: {_SANDBOX.problem}"
)


def grep(d: DaemonProcess, tool_use_id: str, path: Path | str, **raw: Any) -> ToolResult:
    return call(d, tool_use_id, "Grep", pattern=raw.pop("pattern", SECRET), path=str(path), **raw)


def test_grep_of_a_link_out_asks_or_is_denied_as_before(ws: Path, outside: Path) -> None:
    (ws / "out").symlink_to(outside)
    (ws / "out.txt").symlink_to(outside / "secret.txt")
    with run_daemon(ws, *BYPASS) as d:
        for i, path in enumerate([ws / "out", ws / "out.txt", outside]):
            result = grep(d, f"g{i}", path, output_mode="content")
            # (The denial names where the path leads: a name, not the file's text.)
            assert status(result) == (True, "denied") and SECRET not in str(result.content)
    with run_daemon(ws, "--permission-mode", "default") as d:
        d.send(tool_use("g", {"pattern": SECRET, "path": str(ws / "out")}, name="Grep"))
        req = request(d, "g")
        assert "outside the workspace" in req.reason
        answer(d, req, "deny")
        assert status(d.result("g")) == (True, "denied")


@pytest.mark.parametrize("mode", ["content", "files_with_matches", "count"])
def test_grep_of_a_directory_swapped_for_a_link_after_the_check_is_denied(
    ws: Path, outside: Path, mode: str
) -> None:
    with run_daemon(ws, *BYPASS, *ask_rule("Grep")) as d:
        d.send(
            tool_use(
                "g", {"pattern": SECRET, "path": str(ws / "sub"), "output_mode": mode}, name="Grep"
            )
        )
        req = request(d, "g")
        swap_for_link(ws / "sub", outside)
        answer(d, req, "allow")
        result = d.result("g")
    assert status(result) == (True, "denied"), result
    assert SECRET not in str(result.content)
    assert str(outside) in str(result.content)


def test_grep_of_a_file_swapped_for_a_link_after_the_check_is_denied(
    ws: Path, outside: Path
) -> None:
    (ws / "link.txt").symlink_to(ws / "notes.txt")
    with run_daemon(ws, *BYPASS, *ask_rule("Grep")) as d:
        raw = {"pattern": ".", "path": "link.txt", "output_mode": "content"}
        d.send(tool_use("g", raw, name="Grep"))
        req = request(d, "g")
        swap_for_link(ws / "link.txt", outside / "secret.txt")
        answer(d, req, "allow")
        result = d.result("g")
    assert status(result) == (True, "denied"), result
    assert SECRET not in str(result.content)


def test_grep_does_not_search_a_link_out_below_it(ws: Path, outside: Path) -> None:
    (ws / "sub" / "out").symlink_to(outside)
    (ws / "sub" / "out.txt").symlink_to(outside / "secret.txt")
    with run_daemon(ws, *BYPASS) as d:
        for mode in ("content", "files_with_matches", "count"):
            result = grep(d, mode, ws, output_mode=mode)
            assert not result.is_error and not leaked(result), result


def test_grep_with_dot_dot_components_is_judged_where_it_leads(ws: Path, outside: Path) -> None:
    with run_daemon(ws, *BYPASS) as d:
        inside = grep(d, "in", ws / "sub" / ".." / "sub", pattern="x", output_mode="content")
        assert inside.content == f"{ws}/sub/x.txt:1:x", inside
        out = grep(d, "out", f"{ws}/sub/../../{outside.name}", output_mode="content")
        assert status(out) == (True, "denied") and not leaked(out), out


@needs_landlock
def test_grep_does_not_follow_a_directory_swapped_for_a_link_during_the_walk(
    ws: Path, outside: Path
) -> None:
    """ripgrep lists ``deep``, then blocks reading ``deep/.ignore`` (a FIFO) before it
    searches ``deep/a.txt``: the test swaps ``deep`` for a link out right then. ripgrep
    opens ``./deep/a.txt`` by path; only the kernel (Landlock) stops it there."""
    (ws / "deep").mkdir()
    (ws / "deep" / "a.txt").write_text("inside\n")
    fifo = ws / "deep" / ".ignore"
    os.mkfifo(fifo)
    (outside / "mirror").mkdir()
    (outside / "mirror" / "a.txt").write_text(SECRET + "\n")
    with run_daemon(ws, *BYPASS) as d:
        d.send(
            tool_use(
                "g", {"pattern": SECRET, "path": str(ws), "output_mode": "content"}, name="Grep"
            )
        )
        writer = -1
        deadline = time.monotonic() + 10
        while writer < 0:  # opening without blocking succeeds once ripgrep reads the FIFO
            try:
                writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as exc:
                assert exc.errno == errno.ENXIO and time.monotonic() < deadline, exc
                time.sleep(0.01)
        swap_for_link(ws / "deep", outside / "mirror")
        os.close(writer)
        result = d.result("g")
    assert SECRET not in str(result.content), result


@needs_landlock
def test_grep_of_a_subdirectory_keeps_the_repository_ignore_files(ws: Path, outside: Path) -> None:
    """Under Landlock ripgrep still reads the ignore files above the searched directory, and
    a ``.git`` file's git directory elsewhere (a worktree) does not make it fail."""
    gitdir = outside / "repo.git" / "worktrees" / "ws"
    gitdir.mkdir(parents=True)
    (gitdir / "commondir").write_text("../..\n")
    (outside / "repo.git" / "info").mkdir()
    (outside / "repo.git" / "info" / "exclude").write_text("excluded.txt\n")
    (ws / ".git").write_text(f"gitdir: {gitdir}\n")
    (ws / ".gitignore").write_text("ignored.txt\n")
    for name in ("ignored.txt", "excluded.txt", "kept.txt"):
        (ws / "sub" / name).write_text("needle\n")
    with run_daemon(ws, *BYPASS) as d:
        found = grep(d, "g", ws / "sub", pattern="needle")
        assert found.content == f"Found 1 file\n{ws}/sub/kept.txt", found
        none = grep(d, "n", ws / "sub", pattern="nowhere-at-all")
        assert status(none) == (False, "success") and none.content == "No files found", none


@pytest.mark.parametrize("containment", ["subreaper", "userns"])
def test_grep_reaches_the_checked_directory_and_file_under_every_containment(
    ws: Path, outside: Path, monkeypatch: pytest.MonkeyPatch, containment: str
) -> None:
    """In a user namespace of its own (an unprivileged daemon's calls) ripgrep may not follow
    the daemon's ``/proc`` links: the spawner enters the directory for it, and a file comes
    as its standard input."""
    monkeypatch.setenv("STDIO_EXECUTOR_CONTAINMENT", containment)
    (ws / "sub" / "out").symlink_to(outside)
    with run_daemon(ws, *BYPASS) as d:
        found = grep(d, "dir", ws / "sub", pattern="x", output_mode="content")
        assert found.content == f"{ws}/sub/x.txt:1:x", found
        counted = grep(d, "file", ws / "sub" / "x.txt", pattern="x", output_mode="count")
        assert str(counted.content).startswith(f"{ws}/sub/x.txt:1\n"), counted
        listed = grep(d, "all", ws, pattern=".")
        assert not listed.is_error and not leaked(listed), listed
