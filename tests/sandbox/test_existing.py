"""``plan._Existing``: which bind targets exist, per call, without an lstat of each."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from stdio_executor.sandbox import plan
from stdio_executor.sandbox.plan import _Existing

NAMES = [".git", ".mcp.json", ".envrc", ".bashrc", ".vscode"]


def targets(root: Path) -> list[bytes]:
    return [os.fsencode(root / name) for name in NAMES] + [os.fsencode(root / ".git" / "config")]


@pytest.mark.parametrize("list_max", [plan._LIST_MAX_BYTES, -1], ids=["listed", "lstat"])
def test_entries_made_and_removed_are_seen_at_the_next_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, list_max: int
) -> None:
    """Whether a directory is read whole or asked name by name (a large one), the answer
    is what ``lexists`` says, and a change made just before the next check is seen (the
    directory was modified within the racy window, so it is looked at again)."""
    monkeypatch.setattr(plan, "_LIST_MAX_BYTES", list_max)
    existing = _Existing(targets(tmp_path))
    assert existing.check() == frozenset()
    (tmp_path / ".git").mkdir()
    (tmp_path / ".envrc").write_text("x")
    os.symlink("nowhere", tmp_path / ".bashrc")  # a dangling link exists, as for lexists
    (tmp_path / "unrelated").write_text("x")
    expected = {os.fsencode(tmp_path / n) for n in (".git", ".envrc", ".bashrc")}
    assert existing.check() == expected
    (tmp_path / ".git" / "config").write_text("x")
    assert existing.check() == expected | {os.fsencode(tmp_path / ".git" / "config")}
    os.unlink(tmp_path / ".envrc")
    assert existing.check() == expected - {os.fsencode(tmp_path / ".envrc")} | {
        os.fsencode(tmp_path / ".git" / "config")
    }
    assert existing.check() == {p for p in targets(tmp_path) if os.path.lexists(p)}


def test_a_directory_past_the_size_limit_is_asked_name_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    listed: list[bytes] = []
    real = os.listdir

    def spy(path: bytes) -> list[bytes]:
        listed.append(path)
        return real(path)

    monkeypatch.setattr(os, "listdir", spy)
    (tmp_path / ".mcp.json").write_text("x")
    assert _Existing(targets(tmp_path)).check() == {os.fsencode(tmp_path / ".mcp.json")}
    assert listed == [os.fsencode(tmp_path)]  # small: read whole (".git" is not there)
    listed.clear()
    monkeypatch.setattr(plan, "_LIST_MAX_BYTES", -1)
    assert _Existing(targets(tmp_path)).check() == {os.fsencode(tmp_path / ".mcp.json")}
    assert listed == []
