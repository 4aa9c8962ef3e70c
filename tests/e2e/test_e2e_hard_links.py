"""A control file under another name: a hard link made before the session.

``sub/notes.cfg`` linked to ``.git/config`` (or to ``~/.bashrc``, ``~/.claude/settings.json``,
a git hook) is the control file: writing it under the innocent name changes what the user's
next ``git status`` or shell runs. Neither a path check nor Landlock (which judges the name
used) sees it. Two layers close it, each tested here through the real daemon on real files:

- the OS sandbox mounts every other name of a control file under a writable tree read-only,
  whatever the command does with it (each spelling below writes in its own way);
- the permission layer asks before Write, Edit, MultiEdit or NotebookEdit change a file that
  has other names (``--no-prompt``: denied), and refuses one that gained a name after the
  check; ``bypassPermissions`` writes it, as it writes the control file itself.

A link cannot be made inside the sandbox (tests/e2e/test_e2e_sandbox_attacks.py), so the
tests make them as the repository's author or an earlier unsandboxed session would have.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from daemon_harness import DaemonProcess, run_daemon, tool_use

from stdio_executor.confine import Confinement
from stdio_executor.protocol import PermissionRequest
from stdio_executor.sandbox.kernel import probe
from stdio_executor.tools.files.confined_io import Linked, write_in_place

_SUPPORT = probe()
_SANDBOX = bool(_SUPPORT.landlock_abi and _SUPPORT.user_namespaces)


def _layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, dict[str, Path]]:
    """A workspace whose ``sub/`` holds other names of four control files; HOME is a
    temporary directory (the daemon inherits it)."""
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / ".git" / "hooks").mkdir(exist_ok=True)
    (ws / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\n")
    (home / ".claude").mkdir(parents=True)
    (home / ".bashrc").write_text("# rc\n")
    (home / ".claude" / "settings.json").write_text("{}\n")
    monkeypatch.setenv("HOME", str(home))
    originals = {
        "git-config": ws / ".git" / "config",
        "git-hook": ws / ".git" / "hooks" / "pre-commit",
        "bashrc": home / ".bashrc",
        "claude-settings": home / ".claude" / "settings.json",
    }
    (ws / "sub" / "deeper").mkdir(parents=True)
    links = {
        "git-config": ws / "sub" / "notes.cfg",
        "git-hook": ws / "sub" / "deeper" / "hook.txt",
        "bashrc": ws / "rc.txt",
        "claude-settings": ws / "sub" / "data.json",
    }
    for name, link in links.items():
        os.link(originals[name], link)
    (ws / "payload").write_text("EVIL\n")
    return ws, {name: originals[name] for name in originals} | {
        f"link:{name}": link for name, link in links.items()
    }


def _contents(files: dict[str, Path]) -> dict[str, str]:
    return {k: p.read_text() for k, p in files.items() if not k.startswith("link:")}


# Each writes through the link in its own way: append, truncate, in place with an offset,
# copy over, a program's own open(2), a rename over it (replaces the name only: harmless,
# but must not fail the daemon).
_SPELLINGS = {
    "append": "echo EVIL >> {link}",
    "truncate": "echo EVIL > {link}",
    "tee": "tee -a {link} < payload",
    "dd": "dd if=payload of={link} conv=notrunc status=none",
    "cp": "cp payload {link}",
    "python": f"{sys.executable} -c \"open('{{link}}', 'r+').write('EVIL')\"",
    "truncate-cmd": "truncate -s 0 {link}",
}


@pytest.mark.skipif(not _SANDBOX, reason=f"no sandbox on this system: {_SUPPORT.problem}")
@pytest.mark.parametrize("spelling", sorted(_SPELLINGS))
def test_the_sandbox_keeps_every_name_of_a_control_file_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:
    ws, files = _layout(tmp_path, monkeypatch)
    before = _contents(files)
    links = [str(p.relative_to(ws)) for k, p in files.items() if k.startswith("link:")]
    command = "; ".join(_SPELLINGS[spelling].format(link=link) for link in links)
    with run_daemon(ws, "--sandbox", "on") as d:
        d.send(tool_use("w", {"command": command + "; echo done"}))
        result = d.result("w")
    assert isinstance(result.content, str) and "done" in result.content
    assert _contents(files) == before, result.content
    (ws / "free.txt").write_text("")  # the rest of the workspace stays writable
    with run_daemon(ws, "--sandbox", "on") as d:
        d.send(tool_use("f", {"command": "echo ok > free.txt && cat free.txt"}))
        assert d.result("f").content == "ok"


def _edit_input(tool: str, path: str) -> dict[str, Any]:
    if tool == "Write":
        return {"file_path": path, "content": "EVIL\n"}
    if tool == "Edit":
        return {
            "file_path": path,
            "old_string": "\n",
            "new_string": "\nEVIL\n",
            "replace_all": True,
        }
    return {
        "file_path": path,
        "edits": [{"old_string": "\n", "new_string": "\nEVIL\n", "replace_all": True}],
    }


def _read_then(d: DaemonProcess, tool: str, path: str, n: int) -> Any:
    d.send(tool_use(f"r{n}", {"file_path": path}, name="Read"))
    d.result(f"r{n}")
    d.send(tool_use(f"e{n}", _edit_input(tool, path), name=tool))
    return d.result(f"e{n}")


@pytest.mark.parametrize("tool", ["Write", "Edit", "MultiEdit"])
def test_an_edit_of_a_file_with_other_names_asks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool: str
) -> None:
    ws, files = _layout(tmp_path, monkeypatch)
    before = _contents(files)
    links = [p for k, p in files.items() if k.startswith("link:")]
    with run_daemon(ws, "--permission-mode", "acceptEdits", "--no-prompt", "--sandbox", "off") as d:
        for n, link in enumerate(links):
            given = str(link) if n % 2 else str(link.relative_to(ws))
            result = _read_then(d, tool, given, n)
            assert result.meta.status == "denied", result.content
            assert "hard link" in str(result.content)
        # A file with one name is edited as before.
        (ws / "plain.txt").write_text("a\n")
        result = _read_then(d, tool, "plain.txt", 99)
        assert result.meta.status == "success", result.content
    assert _contents(files) == before


def test_the_host_is_asked_and_bypass_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, files = _layout(tmp_path, monkeypatch)
    link = files["link:git-config"]
    with run_daemon(ws, "--permission-mode", "acceptEdits", "--sandbox", "off") as d:
        d.send(tool_use("r", {"file_path": str(link)}, name="Read"))
        d.result("r")
        d.send(tool_use("w", {"file_path": str(link), "content": "[core]\n"}, name="Write"))
        request = d.wait_for(lambda e: isinstance(e, PermissionRequest))
        assert isinstance(request, PermissionRequest) and "hard link" in request.reason
        d.send(
            {"type": "permission_response", "request_id": request.request_id, "decision": "allow"}
        )
        assert d.result("w").meta.status == "success"
    assert files["git-config"].read_text() == "[core]\n"  # the host said yes
    with run_daemon(ws, "--permission-mode", "bypassPermissions", "--sandbox", "off") as d:
        d.send(tool_use("r", {"file_path": str(link)}, name="Read"))
        d.result("r")
        d.send(tool_use("w", {"file_path": str(link), "content": "[core]\n\n"}, name="Write"))
        assert d.result("w").meta.status == "success"
    assert files["git-config"].read_text() == "[core]\n\n"


def test_a_name_added_after_the_check_is_refused_on_the_descriptor(tmp_path: Path) -> None:
    """The race: one name when judged, two when opened. The write opens first and asks the
    descriptor; nothing is written."""
    target = tmp_path / "a.txt"
    target.write_text("original\n")
    os.link(target, tmp_path / "b.txt")
    one_name = Confinement([str(tmp_path)], one_name=True)
    with pytest.raises(Linked):
        write_in_place(str(target), b"EVIL\n", one_name)
    assert target.read_text() == "original\n"
    write_in_place(str(target), b"ok\n", Confinement([str(tmp_path)]))
    assert (tmp_path / "b.txt").read_text() == "ok\n"
