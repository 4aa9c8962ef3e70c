"""One glob language for file permission rules and the Glob tool (``stdio_executor.globs``).

A rule such as ``Read(src/**/*.py)`` and a Glob call with the same pattern must name the same
files; each row is checked through both users, on real paths.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from stdio_executor.globs import expand_braces, path_regex
from stdio_executor.permissions.rules import parse_rule
from stdio_executor.tools.files.globbing import glob_files, glob_regex

# (pattern, relative paths it names, relative paths it does not)
ROWS = [
    ("src/**/*.py", ["src/m.py", "src/a/m.py", "src/a/b/m.py"], ["m.py", "srcx/m.py", "src/m.pyc"]),
    ("**/*.py", ["m.py", "a/m.py", "a/b/m.py"], ["m.pyc", "a/m.txt"]),
    ("src/**", ["src/m.py", "src/a/b/c"], ["srcm.py", "m/src/x"]),
    ("a/**/b", ["a/b", "a/x/b", "a/x/y/b"], ["a/xb", "ab", "a/bc"]),
    ("*.txt", ["a.txt"], ["d/a.txt", "a.txt.bak"]),
    ("d?/f", ["d1/f"], ["d/f", "d12/f", "d/1/f"]),
    ("d[!0-9]/f", ["dx/f"], ["d1/f", "d/f"]),
    ("d[^0-9]/f", ["dx/f"], ["d1/f"]),
    ("x[a-c]z", ["xbz"], ["xdz"]),
    ("a**b/c", ["ab/c", "axxb/c"], ["a/x/b/c"]),  # ** inside a segment is a plain *
    ("lit[eral", ["lit[eral"], ["litxeral"]),  # an unclosed class is literal
]


@pytest.mark.parametrize(("pattern", "named", "not_named"), ROWS, ids=[r[0] for r in ROWS])
def test_the_language_decides_once(pattern: str, named: list[str], not_named: list[str]) -> None:
    regex = re.compile(path_regex(pattern), re.DOTALL)
    for path in named:
        assert regex.fullmatch(path), (pattern, path)
    for path in not_named:
        assert not regex.fullmatch(path), (pattern, path)


def test_a_negated_class_never_matches_the_separator() -> None:
    assert not re.fullmatch(path_regex("a[!x]b"), "a/b")
    assert not re.fullmatch(path_regex("a[^x]b"), "a/b")


@pytest.mark.parametrize(("pattern", "named", "not_named"), ROWS, ids=[r[0] for r in ROWS])
def test_a_file_rule_and_a_glob_name_the_same_files(
    tmp_path: Path, pattern: str, named: list[str], not_named: list[str]
) -> None:
    ws = tmp_path / "ws"
    for rel in named + not_named:
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        if not (ws / rel).exists():
            (ws / rel).write_text("x")
    files = {str(p.relative_to(ws)) for p in ws.rglob("*") if p.is_file()}
    rule = parse_rule(
        f"Read(./{pattern})", "test", base_dir=str(ws), workspace=str(ws), home=str(tmp_path)
    )
    assert rule.path is not None
    by_rule = {f for f in files if rule.path.matches(str(ws / f))}
    found = glob_files(str(ws), pattern, lambda: None).content
    assert isinstance(found, str)
    by_glob = {
        str(Path(line).relative_to(ws)) for line in found.splitlines() if line.startswith("/")
    }
    assert by_glob == set(named)
    assert by_rule == set(named)


def test_braces_are_globs_alone() -> None:
    assert expand_braces("src/{a,b{c,d}}/*.py") == ["src/a/*.py", "src/bc/*.py", "src/bd/*.py"]
    assert glob_regex("{a,b}.txt").fullmatch("b.txt")
    # A permission rule keeps braces literal, as gitignore (and Claude Code's rules) do.
    assert re.fullmatch(path_regex("{a,b}.txt"), "{a,b}.txt")
    assert not re.fullmatch(path_regex("{a,b}.txt"), "a.txt")
    with pytest.raises(re.error):
        expand_braces("{a,b}" * 9)


def test_a_directory_swapped_for_a_symlink_during_the_walk_is_not_followed(
    tmp_path: Path,
) -> None:
    """The walk opens each directory relative to its parent, never following a symlink: one
    swapped in after the parent was listed (here, while the first match is looked at) leads
    nowhere. By path, the walk would have listed what the link points at."""
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "sub").mkdir(parents=True)
    (ws / "a.txt").write_text("a")
    (ws / "sub" / "b.txt").write_text("b")
    outside.mkdir()
    (outside / "secret.txt").write_text("s")

    class SwapOnFirstLook:
        swapped = False

        def hides(self, path: str, st: object = None) -> bool:
            if not self.swapped:
                self.swapped = True
                (ws / "sub" / "b.txt").unlink()
                (ws / "sub").rmdir()
                (ws / "sub").symlink_to(outside, target_is_directory=True)
            return False

    hidden = SwapOnFirstLook()
    found = glob_files(str(ws), "**/*.txt", lambda: None, hidden).content
    assert hidden.swapped
    assert found == str(ws / "a.txt")


def test_a_tree_deeper_than_the_open_directories_allowed_is_walked_whole(
    tmp_path: Path,
) -> None:
    deep = tmp_path.joinpath(*[f"d{i}" for i in range(80)])
    deep.mkdir(parents=True)
    (deep / "bottom.txt").write_text("b")
    (tmp_path / "top.txt").write_text("t")
    fds_before = len(os.listdir("/proc/self/fd"))
    found = str(glob_files(str(tmp_path), "**/*.txt", lambda: None).content).splitlines()
    assert sorted(found) == sorted([str(deep / "bottom.txt"), str(tmp_path / "top.txt")])
    assert len(os.listdir("/proc/self/fd")) == fds_before  # every directory closed


def test_a_walk_given_up_midway_closes_every_directory(tmp_path: Path) -> None:
    for i in range(3):
        sub = tmp_path / f"s{i}"
        sub.mkdir()
        for j in range(300):
            (sub / f"f{j}.txt").write_text("")

    class GiveUp(Exception):
        pass

    def check() -> None:
        raise GiveUp

    fds_before = len(os.listdir("/proc/self/fd"))
    with pytest.raises(GiveUp):
        glob_files(str(tmp_path), "**/*.txt", check)
    assert len(os.listdir("/proc/self/fd")) == fds_before
