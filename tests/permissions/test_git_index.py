"""The index reader against git itself: the same paths as ``git ls-files``, in every index
version, through a worktree's ``gitdir:`` file; what it cannot read is said, never guessed."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from stdio_executor.permissions.git_index import UnreadableIndex, repository_top, tracked_paths

NAMES = [
    ".env",
    "a.txt",
    "dir/b.txt",
    "dir/deeper/c with space.txt",
    "dir/deeper/d\u00e9j\u00e0.txt",
    "dir/" + "x" * 200 + "/" + "w" * 200 + ".txt",
    "dir/deeper/" + "y" * 120,
    "z/.env",
]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def _repo(tmp_path: Path, version: int) -> Path:
    repo = tmp_path / f"repo{version}"
    repo.mkdir()
    _git(repo, "init", "-q")
    for name in NAMES:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(name)
    _git(repo, "add", "-A")
    _git(repo, "update-index", f"--index-version={version}")
    return repo


@pytest.mark.parametrize("version", [2, 3, 4])
def test_the_paths_are_git_ls_files(tmp_path: Path, version: int) -> None:
    repo = _repo(tmp_path, version)
    if version == 3:  # version 3 writes extended flags only for an entry that has them
        _git(repo, "update-index", "--skip-worktree", "a.txt")
    expected = _git(repo, "ls-files", "-z").split("\0")[:-1]
    assert sorted(tracked_paths(str(repo))) == sorted(expected)
    assert sorted(expected) == sorted(NAMES)


def test_a_worktree_index_is_found_through_its_gitdir_file(tmp_path: Path) -> None:
    repo = _repo(tmp_path, 2)
    _git(repo, "commit", "-qm", "x")
    worktree = tmp_path / "wt"
    _git(repo, "worktree", "add", "-q", str(worktree))
    assert repository_top(str(worktree / "dir")) == str(worktree)
    assert sorted(tracked_paths(str(worktree))) == sorted(NAMES)


def test_no_index_yet_is_no_paths_and_no_repository_is_none(tmp_path: Path) -> None:
    repo = tmp_path / "fresh"
    repo.mkdir()
    _git(repo, "init", "-q")
    assert tracked_paths(str(repo)) == []
    assert repository_top("/") is None


def test_what_it_cannot_read_is_said(tmp_path: Path) -> None:
    repo = _repo(tmp_path, 2)
    index = repo / ".git" / "index"
    data = index.read_bytes()
    index.write_bytes(data[: len(data) // 2])
    with pytest.raises(UnreadableIndex):
        tracked_paths(str(repo))
    index.write_bytes(b"DIRC" + (9).to_bytes(4, "big") + data[8:])
    with pytest.raises(UnreadableIndex):
        tracked_paths(str(repo))
    _git(repo, "read-tree", "--empty")
    _git(repo, "add", "-A")
    _git(repo, "update-index", "--split-index")
    with pytest.raises(UnreadableIndex):
        tracked_paths(str(repo))


def test_a_hostile_repository_cannot_block_or_flood_the_check(tmp_path: Path) -> None:
    """A FIFO in place of the index or of the ``.git`` file would block a plain open
    forever (in the event loop): both are refused at once, as is a huge index."""
    import os

    fifo_repo = tmp_path / "fifo"
    (fifo_repo / ".git").mkdir(parents=True)
    os.mkfifo(fifo_repo / ".git" / "index")
    with pytest.raises(UnreadableIndex):
        tracked_paths(str(fifo_repo))
    gitfile = tmp_path / "gitfile"
    gitfile.mkdir()
    os.mkfifo(gitfile / ".git")
    with pytest.raises(UnreadableIndex):
        tracked_paths(str(gitfile))
    pointed = tmp_path / "pointed"
    pointed.mkdir()
    (pointed / ".git").write_text("gitdir: /dev\n")  # /dev/index: absent, so no index
    assert tracked_paths(str(pointed)) == []
    (pointed / ".git").write_text(f"gitdir: {tmp_path / 'big'}\n")
    (tmp_path / "big").mkdir()
    with open(tmp_path / "big" / "index", "wb") as f:
        f.truncate(65 * 1024 * 1024)  # sparse: no disk used
    with pytest.raises(UnreadableIndex):
        tracked_paths(str(pointed))
