"""Workspace confinement on an opened descriptor (``stdio_executor.confine``)."""

from __future__ import annotations

import os
from pathlib import Path

from stdio_executor.confine import Confinement


def _opened(path: Path) -> int:
    return os.open(path, os.O_RDONLY | os.O_CLOEXEC)


def test_the_file_opened_is_judged_not_the_name_it_was_opened_by(tmp_path: Path) -> None:
    ws, out = tmp_path / "ws", tmp_path / "out"
    ws.mkdir()
    out.mkdir()
    (ws / "in.txt").write_text("i")
    (out / "secret").write_text("s")
    (ws / "link").symlink_to(out / "secret")
    (tmp_path / "ws-sibling").write_text("a name that starts like the root")
    confine = Confinement([str(ws)])
    cases = {ws / "in.txt": True, ws / "link": False, tmp_path / "ws-sibling": False}
    for path, expected in cases.items():
        fd = _opened(path)
        try:
            assert confine.holds(fd, str(path)) is expected, path
        finally:
            os.close(fd)
    # The text filter says nothing of links: only the descriptor does.
    assert confine.contains(str(ws / "link"))
    assert not confine.contains(str(tmp_path / "ws-sibling"))


def test_a_file_deleted_after_it_was_opened_keeps_its_place(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "gone.txt").write_text("g")
    (tmp_path / "out.txt").write_text("o")
    confine = Confinement([str(ws)])
    inside, outside = _opened(ws / "gone.txt"), _opened(tmp_path / "out.txt")
    try:
        os.unlink(ws / "gone.txt")
        os.unlink(tmp_path / "out.txt")
        assert confine.where(inside, str(ws / "gone.txt")) == str(ws / "gone.txt")
        assert confine.holds(inside, str(ws / "gone.txt"))
        # Named as if it were inside now, it still was outside when opened.
        assert not confine.holds(outside, str(ws / "gone.txt"))
    finally:
        os.close(inside)
        os.close(outside)


def test_case_is_folded_on_a_case_insensitive_file_system(tmp_path: Path) -> None:
    confine = Confinement([str(tmp_path / "Work")], ignore_case=True)
    assert confine.contains(str(tmp_path / "work" / "a.txt"))
    assert not Confinement([str(tmp_path / "Work")]).contains(str(tmp_path / "work" / "a"))


def test_a_forked_child_names_its_own_descriptors(tmp_path: Path) -> None:
    (tmp_path / "parent.txt").write_text("p")
    (tmp_path / "child.txt").write_text("c")
    confine = Confinement([str(tmp_path)])
    fd = _opened(tmp_path / "parent.txt")
    assert confine.where(fd, "") == str(tmp_path / "parent.txt")  # /proc opened in the parent
    os.close(fd)
    pid = os.fork()
    if pid == 0:  # the child: the same descriptor number now names another file
        code = 1
        try:
            mine = _opened(tmp_path / "child.txt")
            code = 0 if confine.where(mine, "") == str(tmp_path / "child.txt") else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
