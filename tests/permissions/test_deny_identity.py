"""A deny rule holds for its program under another name: a symlink or a hard link to it.

`ln -s /bin/rm x` (or a hard link) and then `./x` runs rm; a rule on `rm` must see it. A
path that does not exist yet when the line is judged (made earlier in the same line) could
be anything, so it asks. A multi-call binary (`rm -> busybox`) chooses by the name it is
called, so another link to it is not the rule's program. Ordinary commands still run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from permission_harness import Workspace, workspace

RM = shutil.which("rm")
pytestmark = pytest.mark.skipif(RM is None, reason="no rm on PATH")
DENY_RM = {"permissions": {"deny": ["Bash(rm:*)"]}}


@pytest.fixture
def space(tmp_path: Path) -> Iterator[Workspace]:
    yield from workspace(tmp_path)


def _kind(space: Workspace, command: str, settings: object = DENY_RM) -> str:
    gate = space.gate(settings, mode="bypassPermissions")  # type: ignore[arg-type]
    return space.decide(gate, "Bash", {"command": command}).kind


def _hard_link_or_skip(target: str, link: Path) -> None:
    try:
        os.link(target, link)
    except OSError as exc:  # another file system, or links not allowed
        pytest.skip(f"no hard link to {target}: {exc}")


def test_a_link_to_the_denied_program_is_the_denied_program(space: Workspace) -> None:
    assert RM is not None
    (space.ws / "x").symlink_to(RM)
    (space.ws / "sub").mkdir()
    (space.ws / "sub" / "y").symlink_to(space.ws / "x")  # a chain of links
    for command in ("./x zz", f"{space.ws}/x zz", "sub/y zz", "ls && ./x zz", "echo $(./x zz)"):
        assert _kind(space, command) == "deny", command
    # From another working directory, the same word names another file.
    (space.outside / "x").write_text("#!/bin/sh\n")
    (space.outside / "x").chmod(0o755)
    gate = space.gate(DENY_RM, mode="bypassPermissions")
    assert space.decide(gate, "Bash", {"command": "./x zz"}, cwd=space.outside).kind == "allow"


def test_a_hard_link_to_the_denied_program_is_the_denied_program(space: Workspace) -> None:
    assert RM is not None
    _hard_link_or_skip(os.path.realpath(RM), space.ws / "h")
    assert _kind(space, "./h zz") == "deny"


def test_a_program_on_path_under_another_name_is_caught(
    space: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert RM is not None
    bin_dir = space.root / "bin"
    bin_dir.mkdir()
    (bin_dir / "del").symlink_to(RM)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    assert _kind(space, "del zz") == "deny"


def test_a_path_made_in_the_same_line_asks(space: Workspace) -> None:
    assert _kind(space, f"ln -s {RM} ./q && ./q zz") == "ask"
    assert _kind(space, "cp /bin/true ./t; ./t") == "ask"


def test_a_link_that_runs_rm_really_runs_rm(space: Workspace) -> None:
    # What the rule guards against, for real: the link deletes.
    assert RM is not None
    (space.ws / "x").symlink_to(RM)
    (space.ws / "victim").write_text("v")
    subprocess.run(["./x", "victim"], cwd=space.ws, check=True, timeout=30)
    assert not (space.ws / "victim").exists()


def test_a_link_to_a_multi_call_binary_is_judged_by_its_name(
    space: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `tool` is a link to a program of another name, as `rm -> busybox` is: a second link to
    # that program is not `tool`.
    true = shutil.which("true")
    assert true is not None
    bin_dir = space.root / "bin"
    bin_dir.mkdir()
    (bin_dir / "tool").symlink_to(true)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    (space.ws / "other").symlink_to(true)
    settings = {"permissions": {"deny": ["Bash(tool:*)"]}}
    assert _kind(space, "tool", settings) == "deny"
    assert _kind(space, "./other", settings) == "allow"


@pytest.mark.parametrize(
    "command",
    ["ls -la", "git status", "cat a.txt", "echo hi | wc -l", "./a.txt", "/bin/ls", "true"],
)
def test_ordinary_commands_still_run(space: Workspace, command: str) -> None:
    assert _kind(space, command) == "allow"


@pytest.mark.parametrize(
    "command",
    [
        "env ./x zz",
        "nice -n 5 ./x zz",
        "timeout 5 ./x zz",
        "command ./x zz",
        "exec ./x zz",
        "bash -c './x zz'",
        "sh -c 'ls; ./x zz'",
        "xargs ./x <<< zz",
        "find . -name zz -exec ./x {} ;",
        ".//x zz",
        "sub/../x zz",
        "'./x' zz",
        "./\\x zz",
        "if true; then ./x zz; fi",
        "f() { ./x zz; }; f",
    ],
)
def test_a_link_is_found_through_wrappers_quotes_and_code_strings(
    space: Workspace, command: str
) -> None:
    # Invented in the review round: the link's name reached through everything a deny rule
    # already looks through for `rm` itself.
    assert RM is not None
    (space.ws / "x").symlink_to(RM)
    (space.ws / "sub").mkdir()
    assert _kind(space, command) in ("deny", "ask"), command


def test_a_link_in_the_home_directory_is_found(
    space: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert RM is not None
    home = space.root / "home"
    home.mkdir()
    (home / "del").symlink_to(RM)
    monkeypatch.setenv("HOME", str(home))
    assert _kind(space, "~/del zz") == "deny"
