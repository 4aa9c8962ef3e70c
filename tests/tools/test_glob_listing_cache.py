"""Glob's directory-listing cache: every way a kept listing could go stale is seen.

A listing is reused while its directory's stamp (identity, mtime, ctime, size) is unchanged,
and kept only when the directory's last change was already ``dirstamps.RACY_NS`` old as it was
read. These tests shrink that margin to 20 ms (and let 60 ms pass after building a tree, more
than a tick of the kernel's coarse clock), so the cache is in play without waiting 2 s; the
real margin is exercised through the daemon in tests/e2e/test_e2e_glob_cache.py. Each test
first proves the cache answered (``LISTINGS.hits``), then changes the tree and asserts the
next Glob sees the change.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from stdio_executor import dirstamps
from stdio_executor.confine import Confinement
from stdio_executor.tools.files import dircache
from stdio_executor.tools.files.dircache import LISTINGS, ListingCache, read_listing
from stdio_executor.tools.files.globbing import _Outside, glob_files

TICK = 0.06  # longer than a tick of the kernel's coarse clock (1-10 ms)


def _keep_going() -> None:
    return None


@pytest.fixture(autouse=True)
def short_margin(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(dirstamps, "RACY_NS", 20_000_000)
    LISTINGS.clear()
    yield
    LISTINGS.clear()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """ws/tree/{pkg0/{a,b}.txt, pkg1/c.txt, skip.bin, lnk -> pkg1}, and ``outside`` beside
    ws (outside/pkg0/secret.txt, outside/secret.txt)."""
    root = tmp_path / "ws" / "tree"
    (root / "pkg0").mkdir(parents=True)
    (root / "pkg1").mkdir()
    for rel in ("pkg0/a.txt", "pkg0/b.txt", "pkg1/c.txt"):
        (root / rel).write_text("x\n")
    (root / "skip.bin").write_bytes(b"\0")
    (root / "lnk").symlink_to(root / "pkg1")  # a symlinked directory: never walked
    outside = tmp_path / "outside"
    (outside / "pkg0").mkdir(parents=True)
    (outside / "secret.txt").write_text("s\n")
    (outside / "pkg0" / "secret.txt").write_text("s\n")
    return root


def settle() -> None:
    time.sleep(TICK)


def names(root: Path, pattern: str = "**/*.txt") -> list[str]:
    """The Glob's answer as paths relative to ``root``, in its order (newest first)."""
    confine = Confinement([os.path.realpath(root.parent)])
    text = str(glob_files(str(root), pattern, _keep_going, None, confine).content)
    if text == "No files found":
        return []
    return [os.path.relpath(line, root) for line in text.splitlines()]


def cached(root: Path, pattern: str = "**/*.txt") -> list[str]:
    """Glob twice over a settled tree; the second answer must come from kept listings."""
    settle()
    first = names(root, pattern)
    hits = LISTINGS.hits
    second = names(root, pattern)
    assert LISTINGS.hits > hits, "the cache did not answer: the test would prove nothing"
    assert sorted(second) == sorted(first)
    return second


def test_a_settled_tree_is_answered_from_kept_listings(tree: Path) -> None:
    assert sorted(cached(tree)) == ["pkg0/a.txt", "pkg0/b.txt", "pkg1/c.txt"]


def _create(root: Path) -> None:
    (root / "pkg0" / "new.txt").write_text("n\n")


def _delete(root: Path) -> None:
    (root / "pkg0" / "a.txt").unlink()


def _rename(root: Path) -> None:
    (root / "pkg0" / "a.txt").rename(root / "pkg0" / "z.txt")


def _move_across(root: Path) -> None:
    (root / "pkg0" / "a.txt").rename(root / "pkg1" / "a.txt")


def _rename_over(root: Path) -> None:
    # Replaces b.txt: the directory keeps the same number of entries and the same size.
    (root / "pkg0" / "a.txt").rename(root / "pkg0" / "b.txt")


def _file_to_dir(root: Path) -> None:
    (root / "pkg0" / "a.txt").unlink()
    (root / "pkg0" / "a.txt").mkdir()
    (root / "pkg0" / "a.txt" / "in.txt").write_text("i\n")


def _file_to_link_to_dir(root: Path) -> None:
    (root / "pkg0" / "a.txt").unlink()
    (root / "pkg0" / "a.txt").symlink_to(root / "pkg1")


def _file_to_fifo(root: Path) -> None:
    (root / "pkg0" / "a.txt").unlink()
    os.mkfifo(root / "pkg0" / "a.txt")


def _dir_to_link(root: Path) -> None:
    shutil.rmtree(root / "pkg1")
    (root / "pkg1").symlink_to(root / "pkg0")


def _link_to_dir(root: Path) -> None:
    (root / "lnk").unlink()
    (root / "lnk").mkdir()
    (root / "lnk" / "d.txt").write_text("d\n")


def _new_subdir(root: Path) -> None:
    (root / "pkg2").mkdir()
    (root / "pkg2" / "e.txt").write_text("e\n")


def _remove_subdir(root: Path) -> None:
    shutil.rmtree(root / "pkg1")


def _hard_link(root: Path) -> None:
    os.link(root / "pkg1" / "c.txt", root / "pkg0" / "c.txt")


def _utime_back(root: Path) -> None:
    # Change the directory, then set its times back to what they were: ctime still moves.
    before = os.stat(root / "pkg0")
    (root / "pkg0" / "new.txt").write_text("n\n")
    os.utime(root / "pkg0", ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(root / "pkg0").st_mtime_ns == before.st_mtime_ns


STALE: dict[str, tuple[Callable[[Path], None], list[str]]] = {
    "create": (_create, ["pkg0/a.txt", "pkg0/b.txt", "pkg0/new.txt", "pkg1/c.txt"]),
    "delete": (_delete, ["pkg0/b.txt", "pkg1/c.txt"]),
    "rename": (_rename, ["pkg0/b.txt", "pkg0/z.txt", "pkg1/c.txt"]),
    "move to another directory": (_move_across, ["pkg0/b.txt", "pkg1/a.txt", "pkg1/c.txt"]),
    "rename over another file": (_rename_over, ["pkg0/b.txt", "pkg1/c.txt"]),
    "a file replaced by a directory": (
        _file_to_dir,
        ["pkg0/a.txt/in.txt", "pkg0/b.txt", "pkg1/c.txt"],
    ),
    "a file replaced by a symlink to a directory": (
        _file_to_link_to_dir,
        ["pkg0/b.txt", "pkg1/c.txt"],
    ),
    "a file replaced by a FIFO": (_file_to_fifo, ["pkg0/b.txt", "pkg1/c.txt"]),
    "a directory replaced by a symlink": (_dir_to_link, ["pkg0/a.txt", "pkg0/b.txt"]),
    "a symlink replaced by a directory": (
        _link_to_dir,
        ["lnk/d.txt", "pkg0/a.txt", "pkg0/b.txt", "pkg1/c.txt"],
    ),
    "a new subdirectory": (
        _new_subdir,
        ["pkg0/a.txt", "pkg0/b.txt", "pkg1/c.txt", "pkg2/e.txt"],
    ),
    "a subdirectory removed": (_remove_subdir, ["pkg0/a.txt", "pkg0/b.txt"]),
    "a hard link added": (_hard_link, ["pkg0/a.txt", "pkg0/b.txt", "pkg0/c.txt", "pkg1/c.txt"]),
    "changed, then the directory's mtime set back": (
        _utime_back,
        ["pkg0/a.txt", "pkg0/b.txt", "pkg0/new.txt", "pkg1/c.txt"],
    ),
}


@pytest.mark.parametrize("change", list(STALE))
def test_a_change_after_a_kept_listing_is_seen(tree: Path, change: str) -> None:
    mutate, expected = STALE[change]
    cached(tree)
    mutate(tree)
    assert sorted(names(tree)) == expected


@pytest.mark.parametrize("change", list(STALE))
def test_a_change_right_after_a_listing_of_a_fresh_tree_is_seen(
    tree: Path, change: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The real margin: the tree was changed just now, so nothing is kept, and a change in
    # the same clock tick as the listing (which would leave the stamp as it was) is seen.
    monkeypatch.setattr(dirstamps, "RACY_NS", 2_000_000_000)
    mutate, expected = STALE[change]
    names(tree)
    mutate(tree)
    assert sorted(names(tree)) == expected
    assert LISTINGS.hits == 0


class _Later:
    """``time`` as seen ``ahead`` nanoseconds from now."""

    def __init__(self) -> None:
        self.ahead = 0

    def time_ns(self) -> int:
        return time.time_ns() + self.ahead


def test_a_tree_changed_just_now_is_read_until_it_settles_then_kept(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The real margin, and a clock the test moves on instead of waiting 2 s.
    monkeypatch.setattr(dirstamps, "RACY_NS", 2_000_000_000)
    clock = _Later()
    monkeypatch.setattr(dirstamps, "time", clock)
    monkeypatch.setattr(dircache, "time", clock)
    expected = ["pkg0/a.txt", "pkg0/b.txt", "pkg1/c.txt"]
    for _ in range(3):
        assert sorted(names(tree)) == expected
    assert LISTINGS.hits == 0  # changed within the margin: read each time
    clock.ahead = 2_500_000_000
    assert sorted(names(tree)) == expected  # settled now: read once more, and kept
    assert LISTINGS.hits == 0
    assert sorted(names(tree)) == expected
    assert LISTINGS.hits == 3


def test_a_file_rewritten_in_place_moves_up_the_order(tree: Path) -> None:
    # The directory does not change when a file's contents do: the order comes from a stat
    # of every match on every call, never from the kept listing.
    cached(tree)
    future = time.time_ns() + 10_000_000_000
    os.utime(tree / "pkg1" / "c.txt", ns=(future, future))
    assert names(tree)[0] == "pkg1/c.txt"
    os.utime(tree / "pkg0" / "a.txt", ns=(future + 1, future + 1))
    assert names(tree)[:2] == ["pkg0/a.txt", "pkg1/c.txt"]


def test_a_kept_listing_never_leads_through_a_symlink(tree: Path) -> None:
    # pkg0 swapped for a link to an outside directory with the same layout: the walk opens
    # each directory with O_NOFOLLOW, so the kept listing of the old pkg0 leads nowhere.
    outside = tree.parent.parent / "outside"
    cached(tree)
    (tree / "pkg0").rename(tree.parent / "old-pkg0")
    (tree / "pkg0").symlink_to(outside / "pkg0")
    assert sorted(names(tree)) == ["pkg1/c.txt"]
    assert sorted(names(tree, "**/secret.txt")) == []


def test_even_a_stale_listing_never_leads_through_a_symlink(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Defence in depth: were a stamp ever to miss a change (here: forced, the stamp made of
    # identity alone), the kept listing still names pkg0 a directory, but it is opened with
    # O_NOFOLLOW relative to its parent, and a symlink there is not followed.
    monkeypatch.setattr(dirstamps, "stamp", lambda st: (st.st_dev, st.st_ino))
    outside = tree.parent.parent / "outside"
    cached(tree)
    (tree / "pkg0").rename(tree.parent / "old-pkg0")
    (tree / "pkg0").symlink_to(outside / "pkg0")
    assert sorted(names(tree, "**/secret.txt")) == []
    assert sorted(names(tree)) == ["pkg1/c.txt"]


def test_a_directory_moved_outside_is_not_listed_from_its_kept_listing(tree: Path) -> None:
    outside = tree.parent.parent / "outside"
    cached(tree)
    (tree / "pkg0").rename(outside / "moved")
    assert sorted(names(tree)) == ["pkg1/c.txt"]


def test_the_start_directory_swapped_for_a_link_outside_is_refused(tree: Path) -> None:
    # Confinement is checked on the opened start directory on every call, kept listings or
    # not: the walk never starts outside.
    outside = tree.parent.parent / "outside"
    cached(tree)
    tree.rename(tree.parent / "old-tree")
    tree.symlink_to(outside)
    confine = Confinement([os.path.realpath(tree.parent)])
    with pytest.raises(_Outside):
        glob_files(str(tree), "**/*.txt", _keep_going, None, confine)


def test_a_change_of_the_mount_table_forgets_every_listing(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cached(tree)
    generation = dirstamps.mount_generation()
    monkeypatch.setattr(dirstamps, "mount_generation", lambda: generation + 1)
    hits = LISTINGS.hits
    names(tree)
    assert LISTINGS.hits == hits  # emptied, so read again


def test_a_file_system_that_does_not_keep_times_is_never_cached(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dirstamps, "reliable", lambda dev: False)
    settle()
    names(tree)
    names(tree)
    assert LISTINGS.hits == 0


def test_only_local_file_systems_keep_times() -> None:
    proc = os.stat("/proc").st_dev if os.path.isdir("/proc/self") else None
    if proc is None:
        pytest.skip("no /proc")
    assert not dirstamps.reliable(proc)


def test_the_cache_is_bounded(tmp_path: Path) -> None:
    for i in range(6):
        (tmp_path / f"d{i}").mkdir()
        (tmp_path / f"d{i}" / "f").write_text("")
    settle()
    cache = ListingCache(max_dirs=4)
    for _ in range(2):
        for i in range(6):
            fd = os.open(tmp_path / f"d{i}", os.O_RDONLY | os.O_DIRECTORY)
            try:
                assert cache.listing(fd).files == ("f",)
            finally:
                os.close(fd)
    # Six directories in turn through four places: least recently used out, no hits.
    assert cache.hits == 0
    fd = os.open(tmp_path / "d5", os.O_RDONLY | os.O_DIRECTORY)
    try:
        cache.listing(fd)
    finally:
        os.close(fd)
    assert cache.hits == 1


def test_a_listing_says_what_each_name_may_be(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("")
    (tmp_path / "d").mkdir()
    (tmp_path / ".git").mkdir()
    (tmp_path / "l.txt").symlink_to(tmp_path / "f.txt")
    (tmp_path / "ld").symlink_to(tmp_path / "d")
    os.mkfifo(tmp_path / "p.txt")
    found = read_listing(str(tmp_path))
    assert sorted(found.dirs) == [".git", "d"]
    assert sorted(found.files) == ["f.txt", "l.txt", "ld"]
    assert found.size == 6
    files, dirs = found.select(re.compile(r"[^/]*\.txt"), "", True)
    assert sorted(files) == ["f.txt", "l.txt"]
    assert dirs == ("d",)
    assert found.select(re.compile(r"[^/]*\.txt"), "", False)[1] == ()
