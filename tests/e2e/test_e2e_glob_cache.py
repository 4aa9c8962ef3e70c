"""Glob's kept directory listings, through the real daemon and the real 2 s margin.

The trees are built once for the module, then left alone for a little over
``dirstamps.RACY_NS``, so the daemon keeps their listings (tests/tools/test_glob_listing_cache.py
proves, in process, that a settled tree is answered from them). Each tree gets a Glob, a Glob
again (from kept listings), one change, and a third Glob that must see the change. The last
tests are confinement: a kept listing never leads a walk outside the workspace.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from daemon_harness import DaemonProcess, run_daemon, tool_use

from stdio_executor import dirstamps
from stdio_executor.protocol import ToolResult

SECRET = "outside-secret-5d1c"


def _build(root: Path) -> None:
    (root / "pkg0").mkdir(parents=True)
    (root / "pkg1").mkdir()
    for rel in ("pkg0/a.txt", "pkg0/b.txt", "pkg1/c.txt"):
        (root / rel).write_text("x\n")
    (root / "lnk").symlink_to(root / "pkg1")


def _file_to_dir(root: Path) -> None:
    (root / "pkg0" / "a.txt").unlink()
    (root / "pkg0" / "a.txt").mkdir()
    (root / "pkg0" / "a.txt" / "in.txt").write_text("i\n")


def _dir_to_link(root: Path) -> None:
    shutil.rmtree(root / "pkg1")
    (root / "pkg1").symlink_to(root / "pkg0")


def _link_to_dir(root: Path) -> None:
    (root / "lnk").unlink()
    (root / "lnk").mkdir()
    (root / "lnk" / "d.txt").write_text("d\n")


def _create(root: Path) -> None:
    (root / "pkg1" / "new.txt").write_text("n\n")


def _rename(root: Path) -> None:
    (root / "pkg0" / "a.txt").rename(root / "pkg0" / "z.txt")


def _new_subdir(root: Path) -> None:
    (root / "pkg2").mkdir()
    (root / "pkg2" / "e.txt").write_text("e\n")


def _utime_back(root: Path) -> None:
    before = os.stat(root / "pkg0")
    (root / "pkg0" / "new.txt").write_text("n\n")
    os.utime(root / "pkg0", ns=(before.st_atime_ns, before.st_mtime_ns))


CHANGES: dict[str, tuple[Callable[[Path], None], list[str]]] = {
    "create": (
        _create,
        ["pkg0/a.txt", "pkg0/b.txt", "pkg1/c.txt", "pkg1/new.txt"],
    ),
    "delete": (lambda r: (r / "pkg0" / "a.txt").unlink(), ["pkg0/b.txt", "pkg1/c.txt"]),
    "rename": (
        _rename,
        ["pkg0/b.txt", "pkg0/z.txt", "pkg1/c.txt"],
    ),
    "file to directory": (_file_to_dir, ["pkg0/a.txt/in.txt", "pkg0/b.txt", "pkg1/c.txt"]),
    "directory to symlink": (_dir_to_link, ["pkg0/a.txt", "pkg0/b.txt"]),
    "symlink to directory": (
        _link_to_dir,
        ["lnk/d.txt", "pkg0/a.txt", "pkg0/b.txt", "pkg1/c.txt"],
    ),
    "new subdirectory": (
        _new_subdir,
        ["pkg0/a.txt", "pkg0/b.txt", "pkg1/c.txt", "pkg2/e.txt"],
    ),
    "subdirectory removed": (
        lambda r: shutil.rmtree(r / "pkg1"),
        ["pkg0/a.txt", "pkg0/b.txt"],
    ),
    "mtime set back": (_utime_back, ["pkg0/a.txt", "pkg0/b.txt", "pkg0/new.txt", "pkg1/c.txt"]),
}


@pytest.fixture(scope="module")
def settled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace with one tree per change (and two for confinement), all settled."""
    ws = tmp_path_factory.mktemp("glob-cache")
    for i in range(len(CHANGES)):
        _build(ws / f"t{i}")
    for name in ("swap-sub", "swap-root"):
        _build(ws / name)
    outside = tmp_path_factory.mktemp("glob-cache-outside")
    (outside / "pkg0").mkdir()
    (outside / "pkg0" / "secret.txt").write_text(SECRET)
    (outside / "secret.txt").write_text(SECRET)
    (ws / ".outside").write_text(str(outside))
    time.sleep(dirstamps.RACY_NS / 1e9 + 0.2)
    return ws


def glob(d: DaemonProcess, tool_use_id: str, path: Path, pattern: str = "**/*.txt") -> ToolResult:
    d.send(tool_use(tool_use_id, {"pattern": pattern, "path": str(path)}, name="Glob"))
    return d.result(tool_use_id)


def found(result: ToolResult, root: Path) -> list[str]:
    assert not result.is_error, result
    text = str(result.content)
    if text == "No files found":
        return []
    return sorted(os.path.relpath(line, root) for line in text.splitlines())


def test_every_change_after_kept_listings_is_seen(settled: Path) -> None:
    missed: list[str] = []
    with run_daemon(settled) as d:
        for i, (name, (change, expected)) in enumerate(CHANGES.items()):
            root = settled / f"t{i}"
            before = found(glob(d, f"a{i}", root), root)
            assert before == ["pkg0/a.txt", "pkg0/b.txt", "pkg1/c.txt"]
            assert found(glob(d, f"b{i}", root), root) == before
            change(root)
            if found(glob(d, f"c{i}", root), root) != expected:
                missed.append(name)
    assert missed == []


def test_kept_listings_never_lead_outside(settled: Path) -> None:
    outside = Path((settled / ".outside").read_text())
    sub, top = settled / "swap-sub", settled / "swap-root"
    with run_daemon(settled) as d:
        for root in (sub, top):
            for n in range(2):
                found(glob(d, f"{root.name}{n}", root), root)
        # A directory inside swapped for a link to an outside one of the same layout.
        (sub / "pkg0").rename(settled / "old-pkg0")
        (sub / "pkg0").symlink_to(outside / "pkg0")
        result = glob(d, "s", sub, "**/secret.txt")
        assert found(result, sub) == []
        assert found(glob(d, "s2", sub), sub) == ["pkg1/c.txt"]
        # The directory searched swapped for a link outside: refused, not answered from
        # what was kept for it.
        top.rename(settled / "old-top")
        top.symlink_to(outside)
        result = glob(d, "t", top, "**/*.txt")
        assert result.is_error and result.meta.status == "denied", result
        assert SECRET not in str(result.content) and "secret.txt" not in str(result.content)
