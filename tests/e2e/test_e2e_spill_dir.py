"""The spill directory: where the daemon, outside any sandbox, writes results.

A sandboxed command could write there, and the daemon opened each spill file by name,
following symlinks: a symlink planted under the (predictable) name of the next result's file
made the daemon write that result, whose bytes the model chooses, into ``~/.bashrc``. Closed
twice, each tested here through the real daemon:

- sandboxed commands cannot write the spill directory (its shell leaves its final working
  directory in a directory of its own);
- every spill file is created new (``O_EXCL``, ``O_NOFOLLOW``): whatever is planted under a
  name (by anything that can write there) is never written through, and the result says
  the output could not be saved;
- the directory is used only if it is this user's own (not a symlink, not another user's).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from daemon_harness import run_daemon, tool_use

from stdio_executor.sandbox.kernel import probe

_SUPPORT = probe()
_SANDBOX = bool(_SUPPORT.landlock_abi and _SUPPORT.user_namespaces)
BIG = "python3 -c \"print('PWNED ' * 20000)\""  # past Bash's 30,000-character limit


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "outside" / "victim.txt"
    victim.parent.mkdir()
    victim.write_text("ORIGINAL\n")
    return victim


# Each plants the next result's file in its own way.
_PLANTS = {
    "symlink": "ln -s {victim} {spill}/00000$i-big.txt",
    "hard-link": "ln {victim} {spill}/00000$i-big.txt",
    "fifo": "mkfifo {spill}/00000$i-big.txt",
    "replace-dir": "mv {spill} {spill}.old && ln -s {outside} {spill}",
}


@pytest.mark.skipif(not _SANDBOX, reason=f"no sandbox on this system: {_SUPPORT.problem}")
@pytest.mark.parametrize("plant", sorted(_PLANTS))
def test_a_sandboxed_command_cannot_plant_anything_in_the_spill_dir(
    tmp_path: Path, plant: str
) -> None:
    victim = _victim(tmp_path)
    ws, spill = tmp_path / "ws", tmp_path / "spill"
    ws.mkdir()
    spill.mkdir(mode=0o700)
    command = _PLANTS[plant].format(victim=victim, spill=spill, outside=victim.parent)
    loop = f"for i in 1 2 3 4 5 6; do {command}; done 2>&1 | sort -u; echo done"
    with run_daemon(ws, "--sandbox", "on", spill_dir=spill) as d:
        d.send(tool_use("plant", loop))
        planted = d.result("plant")
        assert "done" in str(planted.content)
        d.send(tool_use("big", BIG))
        result = d.result("big")
    assert result.meta.status == "success"
    assert victim.read_text() == "ORIGINAL\n"
    assert result.meta.output_path is not None  # saved, in the spill dir, as always
    saved = Path(result.meta.output_path)
    assert saved.parent == spill and not saved.is_symlink()
    assert saved.read_text().startswith("PWNED")


def test_a_name_taken_in_the_spill_dir_is_never_written_through(tmp_path: Path) -> None:
    """Unsandboxed (anything may write there): what is planted stays untouched."""
    victim = _victim(tmp_path)
    ws, spill = tmp_path / "ws", tmp_path / "spill"
    ws.mkdir()
    spill.mkdir(mode=0o700)
    for i in range(1, 7):
        os.symlink(victim, spill / f"00000{i}-big.txt")
    with run_daemon(ws, "--sandbox", "off", spill_dir=spill) as d:
        d.send(tool_use("big", BIG))
        result = d.result("big")
    assert victim.read_text() == "ORIGINAL\n"
    # The taken names are skipped: the output is saved under the next free one.
    assert result.meta.truncated and result.meta.output_path == str(spill / "000007-big.txt")
    assert Path(result.meta.output_path).read_text().startswith("PWNED")
    assert all((spill / f"00000{i}-big.txt").is_symlink() for i in range(1, 7))


def test_an_earlier_sessions_files_are_kept_and_this_ones_saved(tmp_path: Path) -> None:
    """The default directory is per pid and never cleaned up: a daemon that gets the pid of
    an earlier one finds that one's files under the names it would use."""
    ws, spill = tmp_path / "ws", tmp_path / "spill"
    ws.mkdir()
    spill.mkdir(mode=0o700)
    (spill / "000001-big.txt").write_text("an earlier session's output\n")
    with run_daemon(ws, "--sandbox", "off", spill_dir=spill) as d:
        d.send(tool_use("big", BIG))
        result = d.result("big")
    assert (spill / "000001-big.txt").read_text() == "an earlier session's output\n"
    assert result.meta.output_path == str(spill / "000002-big.txt")
    assert "could not be saved" not in str(result.content)


def test_a_spill_dir_that_is_a_symlink_is_not_used(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ws, spill = tmp_path / "ws", tmp_path / "spill"
    ws.mkdir()
    os.symlink(elsewhere, spill)
    with run_daemon(ws, "--sandbox", "off", spill_dir=spill) as d:
        d.send(tool_use("big", BIG))
        result = d.result("big")
    assert list(elsewhere.iterdir()) == []
    assert "not a directory of this user's" in str(result.content)


@pytest.mark.skipif(not _SANDBOX, reason=f"no sandbox on this system: {_SUPPORT.problem}")
def test_a_spill_dir_inside_the_workspace_replaced_by_a_symlink_keeps_results_inside(
    tmp_path: Path,
) -> None:
    """Inside the workspace the spill dir is writable by commands: renamed and replaced by
    a symlink to somewhere else, it must not lead the daemon's next file there."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ws = tmp_path / "ws"
    ws.mkdir()
    spill = ws / ".spill"
    with run_daemon(ws, "--sandbox", "on", spill_dir=spill) as d:
        d.send(tool_use("first", BIG))  # the spill dir exists and is in use
        assert d.result("first").meta.output_path is not None
        d.send(tool_use("swap", f"mv .spill .spill.old && ln -s {elsewhere} .spill && echo ok"))
        assert d.result("swap").content == "ok"
        d.send(tool_use("big", BIG))
        result = d.result("big")
    assert list(elsewhere.iterdir()) == []
    assert any(p.name.endswith("-big.txt") for p in (ws / ".spill.old").iterdir())
    assert str(result.content).startswith("PWNED")
