"""The permission policy's fast path resolution gives exactly ``os.path.realpath``'s answer."""

from __future__ import annotations

import os
from pathlib import Path

from stdio_executor.confine import realpath as _realpath


def test_resolved_paths_are_the_same_strings_realpath_gives(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "f").write_text("")
    (tmp_path / "link").symlink_to(tmp_path / "a")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "a" / "rel").symlink_to("b/../b/f")
    os.mkfifo(tmp_path / "fifo")
    cases = [
        f"{tmp_path}/a/b/f",
        f"{tmp_path}/link/b/f",
        f"{tmp_path}/link/../a/b",
        f"{tmp_path}/a/rel",
        f"{tmp_path}/dangling",
        f"{tmp_path}/missing/x",
        f"{tmp_path}/fifo",
        f"{tmp_path}/a/b/f/",
        "/proc/self/status",
        "relative/x",
        "/",
    ]
    for case in cases:
        assert _realpath(case) == os.path.realpath(case), case
